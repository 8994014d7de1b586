package trace_test

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/trace"
)

func TestStretchKinds(t *testing.T) {
	for k, want := range map[trace.FaultKind]string{trace.DiskFull: "diskfull", trace.DiskEIO: "eio", trace.Stall: "stall",
		trace.NoBootID: "nobootid", trace.End: "end", trace.Cont: "cont", trace.Power: "power"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
	for _, k := range []trace.FaultKind{trace.Kill, trace.Term, trace.Stop, trace.Skew, trace.Drift, trace.Jump, trace.FSError, trace.Power, trace.NoBootID, trace.Cont, trace.End} {
		if k.IsStretch() {
			t.Errorf("%v is not a stretch", k)
		}
	}
	for _, k := range []trace.FaultKind{trace.DiskFull, trace.DiskEIO, trace.Stall} {
		if !k.IsStretch() {
			t.Errorf("%v is a stretch", k)
		}
	}
	e := trace.FaultEnd(-1, trace.DiskEIO, trace.Str{})
	if e.Kind != trace.EvFault || e.FaultKind() != trace.End || e.Ended() != trace.DiskEIO || e.Missed() || e.Proc != -1 {
		t.Errorf("FaultEnd(eio) = %+v", e)
	}
}

// TestStretches: a stretch runs from its start event for its pause, and
// ends with the run if the run ends first; missed faults and other kinds
// are not stretches.
func TestStretches(t *testing.T) {
	s := int64(time.Second)
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 1}}, End: 60 * time.Second}
	add := func(at int64, e trace.Event) {
		e.T = at
		tr.Events = append(tr.Events, e)
	}
	add(2*s, trace.Fault(-1, trace.Stop, 5*time.Second, 0, false, trace.Str{}))
	add(5*s, trace.Fault(-1, trace.DiskFull, 10*time.Second, 0, false, trace.Str{}))
	add(7*s, trace.Fault(-1, trace.Stall, 2*time.Second, 0, false, trace.Str{}))
	add(9*s, trace.FaultEnd(-1, trace.Stall, trace.Str{}))
	add(15*s, trace.FaultEnd(-1, trace.DiskFull, trace.Str{}))
	add(50*s, trace.Fault(-1, trace.DiskEIO, 20*time.Second, 0, false, trace.Str{}))
	got := tr.Stretches()
	want := []trace.Stretch{
		{Kind: trace.DiskFull, From: 5 * s, To: 15 * s, Proc: -1},
		{Kind: trace.Stall, From: 7 * s, To: 9 * s, Proc: -1},
		{Kind: trace.DiskEIO, From: 50 * s, To: 60 * s, Proc: -1}, // cut by the end of the run
	}
	if len(got) != len(want) {
		t.Fatalf("Stretches() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stretch %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if !got[0].In(5*s) || got[0].In(15*s) || got[0].In(4*s) || got[0].Len() != 10*time.Second {
		t.Errorf("%+v: In and Len disagree with [5s, 15s)", got[0])
	}
}
