package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// A fault chained to a SIGTERM (Fault.Follows) pauses the process the
// SIGTERM hit right after the Nth system call it makes after it: in the
// middle of its handler. Unfired, it never fires; a bad chain is refused.
func TestChainedFault(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.Term, Proc: Leader, At: 5 * time.Second},
		{Kind: trace.Stop, Follows: 1, Nth: 2, Dur: time.Second},
	}
	tr := mustRun(t, cfg)
	var term, stop = -1, -1
	for i, e := range tr.Events {
		if e.Kind != trace.EvFault || e.Missed() {
			continue
		}
		switch e.FaultKind() {
		case trace.Term:
			term = i
		case trace.Stop:
			stop = i
		}
	}
	if term < 0 || stop < 0 {
		t.Fatalf("term at event %d, stop at event %d: want both to fire\n%s", term, stop, tr.Setup())
	}
	p := tr.Events[term].Proc
	if tr.Events[stop].Proc != p {
		t.Errorf("the chained stop hit process %d, the SIGTERM process %d", tr.Events[stop].Proc, p)
	}
	calls := 0
	for _, e := range tr.Events[term+1 : stop] {
		if e.Proc == p && (e.Kind == trace.EvSyscall || e.Kind == trace.EvLog) {
			calls++
		}
	}
	if calls != 2 {
		t.Errorf("the chained stop came after %d calls of the SIGTERMed process, want 2", calls)
	}
	if s := tr.Setup(); !strings.Contains(s, "stop its process after call #2 following fault 1") {
		t.Errorf("setup line: %s", s)
	}

	// A chain to a fault that never fires never fires.
	cfg.Faults = []Fault{
		{Kind: trace.Term, Proc: 0, At: 100 * time.Second},
		{Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second},
	}
	for _, e := range mustRun(t, cfg).Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Stop {
			t.Errorf("a stop chained to an unfired fault fired")
		}
	}

	for _, bad := range [][]Fault{
		{{Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second}},                                               // itself
		{{Kind: trace.Drift, At: time.Second, PPM: 5}, {Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second}}, // not a signal
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.FSError, Follows: 1, Call: "write", Errno: 5}},        // not a signal
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.Stop, Follows: 3, Dur: time.Second}},                  // out of range
		{{Kind: trace.Kill, At: time.Second}, {Kind: trace.Stop, Follows: 1, Dur: time.Second}},                  // a killed process
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.Stop, Follows: 1, Proc: 1, Dur: time.Second}},         // a process of its own
	} {
		cfg.Faults = bad
		if _, err := Run(cfg); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}
