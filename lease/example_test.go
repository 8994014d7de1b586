package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A Go service that does its work only while it leads: lease.Run over a
// lock file, on the real OS. In a service, ctx would come from
// signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt);
// here the work ends the election itself after one unit, so that the
// example stops.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "lease-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store := lease.NewFileStore(filepath.Join(dir, "nightly-report.lease"))

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cfg := lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
	work := make(chan struct{})
	cfg.Callbacks = lease.Callbacks{
		OnStartedLeading: func(lctx context.Context) {
			term, _ := lease.TermOf(lctx)
			fmt.Println("leading with fencing epoch", term.Epoch())
			go func() { // or work here: under Run on the real OS the callback may block until lctx is done
				defer close(work)
				if lctx.Err() == nil { // check before every action
					fmt.Println("report written with epoch", term.Epoch())
				}
				stop() // the example's shutdown: a SIGTERM, in a service
				<-lctx.Done()
				fmt.Println("leader context done:", lctx.Err())
			}()
		},
		OnStoppedLeading: func() {
			<-work // the work has stopped before the release is written
			fmt.Println("stopped leading")
		},
	}
	if err := lease.Run(ctx, store, cfg, lease.RunOptions{}); err != nil {
		log.Fatal(err) // a config it cannot run
	}
	_, err = store.Read() // a released lease reads as none
	fmt.Println("Run returned; lease released:", errors.Is(err, fs.ErrNotExist))
	// Output:
	// leading with fencing epoch 1
	// report written with epoch 1
	// leader context done: context canceled
	// stopped leading
	// Run returned; lease released: true
}
