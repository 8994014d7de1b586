package spec

import (
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// What is left at the end after a removal that failed is no leak: an
// old boot record whose unlink failed stays until the next boot (its
// removal is tried once a boot), and a dead process's temporary file
// whose unlink failed goes at the next sweep (a review scripted both and
// found the rules blaming the correct reference and flock).
func TestLeftBehindAfterFailedRemovals(t *testing.T) {
	check := func(name string, cfg sim.Config) {
		t.Helper()
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Release()
		if v := CheckBoundedFiles(tr); v != nil {
			t.Errorf("%s: %v", name, v)
		}
	}
	for _, v := range []string{"reference", "flock"} {
		for nth := 1; nth <= 3; nth++ {
			check(v+": a boot record's unlink fails", sim.Config{Variant: v, Horizon: 60 * time.Second, Lease: lease.DefaultConfig(), WallBase: sim.DefaultWallBase,
				Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 10 * time.Second}},
				Faults: []sim.Fault{{Kind: trace.Power, Proc: -1, At: 5 * time.Second},
					{Kind: trace.FSError, Proc: 1, Call: "remove", Nth: nth, Errno: syscall.EIO}}})
		}
	}
	for nth := 1; nth <= 8; nth++ {
		for _, h := range []time.Duration{14, 20, 22, 24, 26, 28, 30, 33} {
			check("reference: a stale temporary file's unlink fails", sim.Config{Variant: "reference", Horizon: h * time.Second, Lease: lease.DefaultConfig(), WallBase: sim.DefaultWallBase,
				Procs: []sim.ProcSpec{{PID: 100}, {PID: 200}},
				Faults: []sim.Fault{{Kind: trace.Kill, Proc: 1, After: "open", Nth: 4},
					{Kind: trace.FSError, Proc: 0, Call: "remove", Nth: nth, Errno: syscall.EIO}}})
		}
	}
}
