package lease_test

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// The catalogue's redis~monotonic-clock is a runtime on CLOCK_MONOTONIC,
// which does right by a suspension that ended before its process led:
// its clock then runs as the others do. Its Lead restates its deadline
// on the simulator's Mono, as its timers and waits do; reported as it
// stood, its term was judged a suspension's length short of its belief
// (7 s of a 8.77 s deadline, shorter than the renew interval), and
// honest-role blamed it for a lease it held and renewed in time (a
// review, 2026-12-08).
func TestMonotonicClockLeadRestated(t *testing.T) {
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Variant: "redis~monotonic-clock", Seed: 1, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
		Procs:  []sim.ProcSpec{{PID: 100, Start: 10 * time.Second}, {PID: 200, Start: 12 * time.Second}},
		Faults: []sim.Fault{{Kind: trace.Suspend, Proc: 0, At: time.Second, Dur: 7 * time.Second}}}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	for _, v := range spec.Check(tr) {
		if v.Violation != nil {
			t.Errorf("%v", v.Violation)
		}
	}
}
