package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Runs of two simulated hours (check -horizon 2h): the reference renews
// 2,400 times, which the system-call cap, scaled with the horizon, lets
// it finish (one process alone reached the unscaled cap after 71
// minutes); its lock directory stays within its bound and every other
// property holds.
func TestReferenceTwoHours(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulated hours a run")
	}
	for i, c := range []struct {
		procs  int
		faults string
	}{{1, "stop,fserr"}, {1, "stop,fserr"}, {3, "stop,drift,fserr"}, {3, "stop,drift,fserr"}} { // none ends a process
		o := sim.SetupOptions{Variant: "reference", Procs: c.procs, Scheduler: "mixed", Horizon: 2 * time.Hour}
		o.Faults, _ = sim.ParseFaults(c.faults)
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		seed := uint64(i)
		cfg := sim.RandomSetup(o, seed)
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		setup := tr.Setup()
		if tr.End < 2*time.Hour || strings.Contains(setup, "stopped=") {
			t.Errorf("seed %d: the run ended at %v, not at its 2 h horizon: %s", seed, tr.End, setup)
		}
		renewals, peak := 0, 0
		for _, e := range tr.Events {
			if e.Kind == trace.EvSyscall && e.Op == trace.OpLink && e.Errno == 0 {
				renewals++
			}
		}
		for _, p := range tr.LockDir.Peaks {
			peak = max(peak, p.N)
		}
		// A renewal every renew interval of the leader's configuration
		// (a mixed run's other one may renew every 6 s, not 3).
		want := 0.0
		for _, x := range tr.Leadership() {
			renew := tr.Run.Lease.RenewInterval
			if l := tr.Procs[x.Proc].Lease; l.RenewInterval != 0 {
				renew = l.RenewInterval
			}
			want += float64(x.To-x.From) / float64(renew)
		}
		if want < 1000 || float64(renewals) < 0.9*want {
			t.Errorf("seed %d: %d versions linked in 2 h, want a renewal every renew interval of the leader's (%.0f)", seed, renewals, want)
		}
		for _, v := range Check(tr) {
			if v.Violation != nil {
				t.Errorf("seed %d: %s: %s\n\t%s", seed, v.Property, v.Violation.Detail, setup)
			}
		}
		t.Logf("%d procs, seed %d: %d versions linked (%.0f renew intervals led), at most %d names in the lock's directory, %d events", c.procs, seed, renewals, want, peak, len(tr.Events))
		tr.Release()
	}
}
