package spec

import (
	"syscall"
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

// A watcher that has never read a record of the longer lease does not
// take over a version it cannot read on its own lease's clock (found by a
// probe, 2026-12-05: a fresh 9 s watcher whose reads of a 27 s holder's
// version failed with EIO waited its own 9 s, or the longest it had read:
// none, and led beside the holder at 9.5 s, read#1). It waits until the
// version is read, and the holder's 27 s lease is waited out from when the
// version was first seen.
func TestReferenceMixedLeasesUnreadVersion(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 9 * time.Second}
	for n := 1; n <= 3; n++ {
		cfg := sim.Config{Variant: "reference", Lease: lease.DefaultConfig(), Horizon: 60 * time.Second,
			Procs: []sim.ProcSpec{{PID: 100, Lease: long}, {PID: 200, Start: 500 * time.Millisecond}},
			Faults: []sim.Fault{
				// The watcher's first read of the holder's version, and its
				// re-read n reads later, fail; the holder pauses past the
				// watcher's lease.
				{Kind: trace.FSError, Proc: 1, Call: "read", Nth: 2, Errno: syscall.EIO},
				{Kind: trace.FSError, Proc: 1, Call: "read", Nth: 2 + n, Errno: syscall.EIO},
				{Kind: trace.Stop, Proc: 0, At: 8900 * time.Millisecond, Dur: 3 * time.Second},
			}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fired := 0
		for _, e := range tr.Events {
			if e.Kind == trace.EvFault && e.FaultKind() == trace.FSError && !e.Missed() {
				fired++
			}
		}
		if fired < 2 {
			t.Fatalf("read#%d: %d injected errors fired, want both: the scenario no longer reaches the unread version", n, fired)
		}
		for _, v := range Check(tr) {
			if v.Violation != nil {
				t.Errorf("read#%d: %v", n, v.Violation)
			}
		}
		if iv := tr.Leadership(); len(iv) != 1 || iv[0].Proc != 0 {
			t.Errorf("read#%d: leadership %+v: want process 100's alone", n, iv)
		}
	}
}
