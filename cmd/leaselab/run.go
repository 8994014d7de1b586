package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// cmdRun is a real leader-election process: the variant's algorithm on the
// OS file system, real clock and signals, logging in the post's format. With
// a command after --, it runs the command while it leads and stops it when
// leadership ends: a singleton runner for cron jobs and workers.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	variant := fs.String("variant", "reference", "variant to run (valid: "+lease.VariantNames()+")")
	store := fs.String("store", "file", "lease store: file (the lock file of -variant) or flock (the kernel's flock(2) lock on the lock file, which its holder's death releases: the flock variant); redis, etcd and sql are later issues")
	path := fs.String("path", "", "the lock file")
	id := fs.Int("id", 0, "holder id written in the lease (0: the process id)")
	startAt := fs.Int64("start-at", 0, "wait until CLOCK_MONOTONIC reads `NS` before contending (leaselab torture -trials starts every process at once)")
	events := fs.String("events", "", "append this process's history (CLOCK_MONOTONIC events) to `FILE`, for leaselab torture")
	var cfg lease.Config
	fs.DurationVar(&cfg.LeaseDuration, "lease", 9*time.Second, "lease duration")
	fs.DurationVar(&cfg.RenewInterval, "renew", 3*time.Second, "renew interval")
	fs.DurationVar(&cfg.WatchInterval, "watch", 3*time.Second, "watch interval")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("run takes flags, then -- and a command (got %v)", pos)
	}
	if *path == "" {
		return usagef("run needs -path LOCKFILE")
	}
	switch *store {
	case "file":
	case "flock":
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "variant" })
		if explicit && *variant != "flock" {
			return usagef("-store flock runs the flock variant, not -variant %s (use -store file for %s, or leave -variant out)", *variant, *variant)
		}
		*variant = "flock"
	default:
		return usagef("-store %q: valid: file, flock", *store)
	}
	if err := checkLockPath(*path); err != nil {
		return err
	}
	v, err := lease.LookupVariant(*variant)
	if err != nil {
		return err
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	r := &runner{command: command, stderr: stderr}
	cfg.Callbacks = lease.Callbacks{OnStartedLeading: r.start, OnStoppedLeading: r.stop}
	if *startAt != 0 {
		time.Sleep(time.Duration(*startAt - monoNow()))
	}
	p := lease.NewOSProcOptions(lease.OSProcOptions{Out: stdout, Err: stderr, ID: *id, BeforeExit: r.stop})
	if *events == "" {
		return lease.Main(p, v, *path, cfg)
	}
	f, err := os.OpenFile(*events, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return usagef("-events: %v", err)
	}
	h := &history{w: f}
	h.emit("start %d", p.PID())
	hp := withHistory(p, h)
	return v.Start(hp, newHistoryStore(v, hp, h, *path), *path, cfg)
}

// runner runs the command while this process leads.
type runner struct {
	command []string
	stderr  io.Writer
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
}

func (r *runner) start(ctx context.Context) {
	if len(r.command) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.command[0], r.command[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stop its children too
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(r.stderr, "leaselab run: %v\n", err)
		return
	}
	done := make(chan struct{})
	r.cmd, r.done = cmd, done
	go func() { cmd.Wait(); close(done) }()
	go func() {
		<-ctx.Done() // leadership ended
		r.stop()
	}()
}

// stop ends the command: SIGTERM, then SIGKILL after a second.
func (r *runner) stop() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
