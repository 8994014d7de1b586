package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Every run a search draws ends with a fault-free phase longer than its
// no-wedge bound (sim.Config.Calm), measured on the trace as no-wedge cuts
// it: from the last fault that took effect or exit to the run's end. The
// test also counts the runs whose last cut falls within a no-wedge bound
// of the drawn horizon, where a run stopped at its horizon would have owed
// no leader: without a calm phase it fails on those.
func TestEveryDrawnRunEndsCalm(t *testing.T) {
	late := 0
	runs := 0
	for _, name := range []string{"seed", "reference", "flock", "redis"} {
		o := sim.SetupOptions{Variant: name, Faults: sim.AllFaults, Scheduler: "mixed", Lease: lease.DefaultConfig()}
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		v := mustVariant(t, name)
		for i := range 150 {
			cfg := sim.RandomSetup(o, RunSeed(1, i))
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tr.Run.Setup.String(), "stopped=[") {
				continue // stopped by its system-call cap, before its horizon
			}
			runs++
			last := int64(0)
			for _, c := range faultTimes(tr) {
				last = max(last, c)
			}
			b := runBounds(v, tr)
			if calm := tr.End - time.Duration(last); calm <= b.Wedge {
				t.Errorf("%s run %d: %v from its last fault or exit (%s) to its end, no more than its no-wedge bound %v",
					name, i, calm, secs(time.Duration(last)), b.Wedge)
			}
			if time.Duration(last) > cfg.Horizon-b.Wedge {
				late++
			}
		}
	}
	t.Logf("%d runs, %d with their last fault or exit within a no-wedge bound of the drawn horizon", runs, late)
	if late == 0 {
		t.Fatal("no run had a late fault: the test shows nothing about the calm phase")
	}
}

// A wedge left by a fault late in a run is caught: the seed's leader is
// SIGKILLed between its fifth renewal's open(O_TRUNC) and its write, about
// 15 s into a 20 s run. Stopped at its horizon the run shows 5 s without a
// leader, less than the bound; with its calm phase, the wedge.
func TestLateWedgeCaught(t *testing.T) {
	cfg := sim.Config{Variant: "seed", Lease: lease.DefaultConfig(), Horizon: 20 * time.Second,
		Procs:  []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 5 * time.Millisecond}},
		Faults: []sim.Fault{{Kind: trace.Kill, Proc: sim.Leader, After: "open-trunc", Nth: 5}}}
	judge := func(calm time.Duration) *Violation {
		c := cfg
		c.Calm = calm
		tr, err := sim.Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if !lockEmpty(tr) {
			t.Fatalf("calm %v: the lock file is not left empty (%d events)", calm, len(tr.Events))
		}
		return CheckNoWedge(tr, tr.Leadership(), runBounds(mustVariant(t, "seed"), tr))
	}
	if v := judge(0); v != nil {
		t.Fatalf("without a calm phase the wedge was already seen (the test shows nothing): %v", v)
	}
	v := judge(24 * time.Second)
	if v == nil {
		t.Fatal("with a calm phase of 24 s the late wedge passed")
	}
	if v.At < 15*time.Second {
		t.Errorf("the wedge is placed at %s, before the late kill", secs(v.At))
	}
}
