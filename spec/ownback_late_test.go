package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A lone reference paused for 10 s inside its third renewal (right after
// its link) comes back past its deadline with the renewal acknowledged:
// the store holds the record it just wrote, nobody else's, and it takes it
// back at once, as it does a record of its last acknowledged write, rather
// than waiting it out as another's (a probe: it led again 9 s late, and
// stable-leadership's rule counted the record as replaced). The same pause
// between renewals costs nothing either.
func TestLateRenewalTakenBack(t *testing.T) {
	for _, after := range []string{"link", "log"} {
		cfg := sim.Config{Variant: "reference", Horizon: 60 * time.Second, Lease: lease.DefaultConfig(), WallBase: sim.DefaultWallBase,
			Procs:  []sim.ProcSpec{{PID: 100}},
			Faults: []sim.Fault{{Kind: trace.Stop, Proc: 0, After: after, Nth: 3, Dur: 10 * time.Second}}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		iv := tr.Leadership()
		if len(iv) != 2 {
			t.Fatalf("pause after its %s: %d terms, want 2: %v", after, len(iv), iv)
		}
		resumed := int64(-1)
		for _, e := range tr.Events {
			if e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
				resumed = e.T
			}
		}
		if gap := time.Duration(iv[1].From - resumed); resumed < 0 || gap > 3*time.Second+Slack {
			t.Errorf("pause after its %s: led again %v after it resumed, want within a back-off", after, gap)
		}
		for _, v := range Check(tr) {
			if v.Violation != nil {
				t.Errorf("pause after its %s: %s: %v", after, v.Property, v.Violation)
			}
		}
		tr.Release()
	}
}

// No false alarm where the take-back itself failed with its outcome
// unknown and took effect (a version the process wrote, which it cannot
// tell for its own on the file store, with no nonces): the record then is
// not the one it stepped down with, and the wait for it is another matter
// (found by the sweep after the rule above: version 4 read as "held by
// 1004" and waited out for a lease).
func TestTakeBackWithUnknownOutcomeNotBlamed(t *testing.T) {
	o := sim.SetupOptions{Variant: "reference", Procs: 1, Faults: []trace.FaultKind{trace.Stop, trace.FSError, trace.DiskFull}, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	tr, err := sim.Run(withoutBursts(sim.RandomSetup(o, 7288202022568053572)))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	if !strings.Contains(strings.Join(tr.LogLines(), "\n"), "Lease held by 1004, version 4") {
		t.Fatalf("the run no longer shows its failed take-back's version:\n%s", strings.Join(tr.LogLines(), "\n"))
	}
	if v := checkOwnTakenBack(tr, endedTerms(tr, tr.Leadership()), mustVariant(t, "reference")); v != nil {
		t.Errorf("%v", v)
	}
}
