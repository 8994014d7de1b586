package spec

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A review (helper-103, 2026-12-07): the reference's 7th readdir (the listing after the
// 6 s renewal's link) fails: the renewal's outcome is unknown, and it took
// effect (version 3). A disk failing every write from 6.002 s to 12 s makes
// every retry fail until the deadline (11.77 s): the leader steps down and,
// as a watcher, reads version 3 (its own term's renewal, nonce 0 on the file
// store: not ownRecord) and waits it out as another's. SIGTERM at 13 s:
// no release call. The graceful-exit rule past the deadline (owing a
// release call) blamed it; it owes one only for its last acknowledged
// write itself, which a file store lets it tell.
func TestGivesBackPastDeadlineOwnRenewalUnknown(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := sim.Config{Variant: "reference", Seed: seed, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
			Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 300 * ms}},
			SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
			Faults: []sim.Fault{
				{Kind: trace.FSError, Proc: 0, Call: "readdir", Nth: 7, Errno: syscall.EIO},
				{Kind: trace.DiskEIO, At: 6*time.Second + 2*ms, Dur: 6 * time.Second},
				{Kind: trace.Term, Proc: 0, At: 13 * time.Second},
			}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range Check(tr) {
			if v.Violation != nil {
				t.Errorf("seed %d: %v\n%s", seed, v.Violation, strings.Join(tr.LogLines(), "\n"))
			}
		}
		tr.Release()
	}
}
