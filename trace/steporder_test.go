package trace_test

import (
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// at returns e at true time t.
func at(e trace.Event, t int64) trace.Event {
	e.T = t
	return e
}

// handover is a simulated run in which process 0 leads from 0 and process
// 1 starts leading at t=5; process 0's context is last seen live at
// lastLive, just before process 1's OnStartedLeading in step order or
// (after) just after it.
func handover(lastLive int64, after bool) *trace.Trace {
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}}, End: 10}
	tr.Events = append(tr.Events, at(trace.Started(0, 0, 1), 0))
	tr.Events = append(tr.Events, at(trace.Event{Proc: 0, Kind: trace.EvLog}, 5)) // a step of its own (a release)
	start := len(tr.Events)
	seen := start // seen live after its own step
	tr.Events = append(tr.Events, at(trace.Started(1, 0, 2), 5))
	if after {
		seen = start + 1
	}
	tr.Events = append(tr.Events, at(trace.Stopped(0, lastLive, seen, false), 5))
	return tr
}

// Leadership is ordered by step where times tie: a context last seen live
// at the instant another's OnStartedLeading is called overlaps it if it
// was seen live after that step, and not if only before; where the times
// differ, time alone decides.
func TestOverlapsInStepOrder(t *testing.T) {
	for _, c := range []struct {
		name     string
		lastLive int64
		after    bool
		overlap  bool
	}{
		{"same instant, last seen live before the start", 5, false, false},
		{"same instant, seen live after the start", 5, true, true},
		{"earlier instant", 4, false, false},
		{"earlier instant, steps notwithstanding", 4, true, false},
	} {
		tr := handover(c.lastLive, c.after)
		iv := tr.Leadership()
		if len(iv) != 2 {
			t.Fatalf("%s: %+v, want two intervals", c.name, iv)
		}
		if iv[0].Overlaps(iv[1]) != c.overlap || iv[1].Overlaps(iv[0]) != c.overlap {
			t.Errorf("%s: %+v overlap %v, want %v", c.name, iv, iv[0].Overlaps(iv[1]), c.overlap)
		}
	}
}

// A recorded trace keeps time's order: its events at one instant are in
// the order independent processes' clocks were merged, so a reported
// step-down and a reported start at one instant are a hand-over, in
// either order.
func TestReportedLeadershipKeepsTimeOrder(t *testing.T) {
	for _, startFirst := range []bool{false, true} {
		tr := trace.NewRecorded(trace.Run{})
		tr.AddProc(100, 0)
		tr.AddProc(200, 0)
		down := trace.Event{T: 5, Proc: 0, Kind: trace.EvRole, Role: lease.RoleWatcher}
		up := trace.Event{T: 5, Proc: 1, Kind: trace.EvRole, Role: lease.RoleLeader}
		tr.Add(trace.Event{T: 0, Proc: 0, Kind: trace.EvRole, Role: lease.RoleLeader}, "")
		if startFirst {
			tr.Add(up, "")
			tr.Add(down, "")
		} else {
			tr.Add(down, "")
			tr.Add(up, "")
		}
		tr.Finish(10)
		iv := tr.Leadership()
		if len(iv) != 2 || iv[0].Overlaps(iv[1]) {
			t.Errorf("start first %v: %+v, want two intervals that do not overlap", startFirst, iv)
		}
	}
}
