package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A rolling change of -lease: the leader holds 27 s leases (renewed every
// 9 s), its watcher 9 s ones. A pause of the leader longer than the
// watcher's lease but shorter than its own is waited out: the watcher
// waits the 27 s the records state, and every property holds. A SIGKILL
// of the leader is failed over within the longest lease's bound (the
// envelope of the processes' configurations), which the run's own 9 s
// bound would not allow.
func TestReferenceMixedLeases(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 3 * time.Second}
	run := func(f sim.Fault) *trace.Trace {
		cfg := sim.Config{Variant: "reference", Seed: 5, Horizon: 90 * time.Second,
			Procs:      []sim.ProcSpec{{PID: 100, Lease: long}, {PID: 200, Start: time.Second}},
			SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond, TimerLateMax: 100 * time.Microsecond,
			Faults: []sim.Fault{f}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := run(sim.Fault{Kind: trace.Stop, Proc: 0, At: 10 * time.Second, Dur: 15 * time.Second})
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("a 15 s pause of the 27 s leader: %v", v.Violation)
		}
	}
	if iv := tr.Leadership(); len(iv) != 1 || iv[0].Proc != 0 {
		t.Errorf("leadership %+v: want process 100's alone (the watcher waits out its 27 s lease)", iv)
	}
	tr = run(sim.Fault{Kind: trace.Kill, Proc: 0, At: 10 * time.Second})
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("a SIGKILL of the 27 s leader: %v", v.Violation)
		}
	}
	next, ok := tr.FirstLeaderAfter(int64(10 * time.Second))
	if !ok || next < int64(27*time.Second) {
		t.Fatalf("next leader at %v (%v): want after the 27 s lease of the last renewal", time.Duration(next), ok)
	}
	v, _ := lease.LookupVariant("reference")
	if CheckFailover(tr, tr.Leadership(), BoundsFor(v, tr.Run.Lease)) == nil {
		t.Errorf("the run's own 9 s bound passes a failover that waited out a 27 s lease: the test shows nothing")
	}
}
