package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A lone reference paused for 10 s right after the link of its acquiring
// write (link #1 is its boot record) comes back past its deadline with
// the create acknowledged: the store holds its own record, nobody else's,
// and it takes it back at once, as it does a renewal acknowledged past
// the deadline (TestLateRenewalTakenBack), rather than waiting it out as
// another's (a probe: it led again 9 s after it resumed, and no property
// said so: checkOwnTakenBack looks at ended terms only, and this write
// never began one).
func TestLateCreateTakenBack(t *testing.T) {
	cfg := sim.Config{Variant: "reference", Horizon: 60 * time.Second, Lease: lease.DefaultConfig(), WallBase: sim.DefaultWallBase,
		Procs:  []sim.ProcSpec{{PID: 100}},
		Faults: []sim.Fault{{Kind: trace.Stop, Proc: 0, After: "link", Nth: 2, Dur: 10 * time.Second}}}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	iv := tr.Leadership()
	resumed := int64(-1)
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
			resumed = e.T
		}
	}
	if len(iv) != 1 || resumed < 0 {
		t.Fatalf("%d terms, resumed at %d: want 1 term after the pause: %v", len(iv), resumed, iv)
	}
	if gap := time.Duration(iv[0].From - resumed); gap > 3*time.Second+Slack {
		t.Errorf("led %v after it resumed, want within a back-off", gap)
	}
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("%s: %v", v.Property, v.Violation)
		}
	}
}
