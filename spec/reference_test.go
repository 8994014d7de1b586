package spec

import (
	"flag"
	"github.com/leaselab/leaselab/trace"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
)

var long = flag.Bool("long", false, "run the long checks (100,000 runs of the reference)")

// The evidence for the reference: no violation of any property in random
// runs with every fault kind at the default magnitudes (SIGKILL at times
// and right after every kind of system call, SIGTERM likewise, pauses up to
// twice the lease, skew and jumps up to the lease, drift within 0.1%, EIO
// and ENOSPC). 5,000 runs by default (a few seconds); -long runs 100,000.
func TestReferenceHolds(t *testing.T) {
	runs := 5000
	if *long {
		runs = 100_000
	}
	if testing.Short() {
		runs = 500
	}
	start := time.Now()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "reference", Faults: sim.AllFaults}, Runs: runs, Seed: 1, KeepGoing: true}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Found {
		t.Errorf("%s\n  replay: %s", f.Violation.String(), f.Replay)
	}
	t.Logf("%d runs, every fault kind, seed 1: %d violations in %v", rep.Runs, len(rep.Found), time.Since(start).Round(time.Millisecond))
}

// The boundary: the reference is safe for drift within its bound (1%) and
// not beyond. With pauses and drift at 1%, nothing; at 5%, a paused
// leader's slow clock outlasts a watcher's fast one and two lead; with
// drift alone at 50%, a slow leader's renewals (every 6 s) stop keeping up
// with a fast watcher's lease (6 s) and two lead. Fencing holds in every
// case: the epochs are link(2)'s, not the clock's.
func TestReferenceDriftBoundary(t *testing.T) {
	cases := []struct {
		faults []trace.FaultKind
		drift  int64
		broken bool
	}{
		{[]trace.FaultKind{trace.Stop, trace.Drift}, 10_000, false},
		{[]trace.FaultKind{trace.Stop, trace.Drift}, 50_000, true},
		{[]trace.FaultKind{trace.Drift}, 500_000, true},
	}
	for _, c := range cases {
		rep, err := Search{Setup: sim.SetupOptions{Variant: "reference", Faults: c.faults, MaxDriftPPM: c.drift},
			Runs: 3000, Seed: 5, KeepGoing: true}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts[Fencing] > 0 {
			t.Errorf("faults %v drift %d ppm: fencing broken in %d runs", c.faults, c.drift, rep.Counts[Fencing])
		}
		if got := rep.Counts[ExclusiveLeadership] > 0; got != c.broken {
			t.Errorf("faults %v drift %d ppm: exclusive-leadership broken in %d of %d runs, want broken: %v",
				c.faults, c.drift, rep.Counts[ExclusiveLeadership], rep.Runs, c.broken)
		}
	}
}

// A watch interval longer than the lease (or close to it) is a
// configuration like any other: the reference holds with it. A watcher
// backs off after failed reads and writes up to the watch interval, but
// never more than the lease (lease.Reference's maxBackoff): once a failing
// disk recovers nobody writes, and with -watch 12s the watchers waited out
// up to 12 s after it, leaderless past the bound (a probe: 275 of 2,000
// runs of -faults eio; the first is run 0 here).
func TestReferenceHoldsWithLongWatch(t *testing.T) {
	for _, c := range []struct {
		lease, renew, watch time.Duration
		faults              string
	}{
		{9 * time.Second, 3 * time.Second, 12 * time.Second, "eio"},
		{9 * time.Second, 3 * time.Second, 20 * time.Second, "diskfull,eio,fserr"},
		{2 * time.Second, 500 * time.Millisecond, 3 * time.Second, "all"},
	} {
		faults, err := sim.ParseFaults(c.faults)
		if err != nil {
			t.Fatal(err)
		}
		o := sim.SetupOptions{Variant: "reference", Faults: faults, Scheduler: "mixed"}
		o.Lease.LeaseDuration, o.Lease.RenewInterval, o.Lease.WatchInterval = c.lease, c.renew, c.watch
		rep, err := Search{Setup: o, Runs: 400, Seed: 1, KeepGoing: true}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Found {
			t.Errorf("-lease %v -watch %v -faults %s: %s\n  replay: %s", c.lease, c.watch, c.faults, f.Violation.String(), f.Replay)
		}
	}
	o := sim.SetupOptions{Variant: "reference", Faults: []trace.FaultKind{trace.DiskEIO}, Scheduler: "mixed"}
	o.Lease.LeaseDuration, o.Lease.RenewInterval, o.Lease.WatchInterval = 9*time.Second, 3*time.Second, 12*time.Second
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	tr, err := sim.Run(sim.RandomSetup(o, 14646652180046636950)) // the probe's replay line
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("the probe's run: %s", v.Violation)
		}
	}
}
