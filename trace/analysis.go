package trace

import (
	"slices"
	"sort"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Interval is a stretch of true time during which one process believed it
// led: from the step that made it leader to the step at which it stepped
// down or died, or the end of the run.
type Interval struct {
	Proc     int
	From, To int64
	// Seen is the last instant the user's code saw its context live, the
	// end of the leadership it could act on (safety is judged on it). To
	// is where the process stopped holding leadership for everyone else:
	// Seen, or its death if it died with its context live (a paused
	// leader still holds the lease or the lock until then). For
	// ReportedLeadership, Seen is To.
	Seen int64
	// Start and LiveSteps place the interval in the run's order of steps,
	// which orders the steps of one instant: events are appended in step
	// order, so an event's index is that order (and agrees with time).
	// Start is the index of the event that opened the interval (EvStarted;
	// for ReportedLeadership, the EvRole or EvLead). LiveSteps is how many
	// events the trace held when the context was last seen live (at
	// Seen): it was live after event LiveSteps-1; for an open interval,
	// the number of events. ReportedLeadership keeps time's order: its
	// LiveSteps is the index of the first event at its end's instant.
	Start, LiveSteps int
	Open             bool // still leading when the run ended
	EndedByDie       bool
}

// Overlaps reports whether x and y led at once, as their users' code saw
// it: each began before the other was last seen live (Seen), in time or,
// at one instant, in step order. A leadership last seen live at the
// instant another begins overlaps it if it was seen live after that
// OnStartedLeading, and not if it was last seen live before: every step
// of an exploration is at the same instant, and only the order of steps
// tells a hand-over from an overlap there.
func (x Interval) Overlaps(y Interval) bool {
	return x.startedBefore(y) && y.startedBefore(x)
}

// startedBefore reports whether x began before y was last seen live.
func (x Interval) startedBefore(y Interval) bool {
	return x.From < y.Seen || x.From == y.Seen && x.Start < y.LiveSteps
}

// Leadership returns every leadership interval of the run as the user's
// code experienced it, ordered by start in step order: from the call of
// its OnStartedLeading (EvStarted) to the last step at which its leader
// context was seen live (EvStopped: LastLive and LiveSteps), or the end of
// the run. The simulator looks at the context at every step of the world
// while the process runs, through the context alone (Err), whatever the
// algorithm reports of its role: a paused process sees nothing, so a
// context still live when it resumes was live all through the pause. A
// recorded trace of real processes has no such observations yet: its
// leadership is what the processes reported (ReportedLeadership).
func (tr *Trace) Leadership() []Interval {
	if tr.Recorded {
		return tr.ReportedLeadership()
	}
	var out []Interval
	// A process may hold several leader contexts at once (a callback that
	// hands its user a second one): each EvStopped ends its own context's
	// interval (Event.Context), or, if it does not say, the process's
	// first one still open.
	type openCtx struct{ nth, k int }
	open := make([][]openCtx, len(tr.Procs))
	for i := range tr.Events {
		e := &tr.Events[i]
		switch e.Kind {
		case EvStarted:
			open[e.Proc] = append(open[e.Proc], openCtx{e.Context(), len(out)})
			out = append(out, Interval{Proc: int(e.Proc), From: e.T, Start: i})
		case EvStopped:
			opens := open[e.Proc]
			j := slices.IndexFunc(opens, func(o openCtx) bool { return e.Context() == 0 || o.nth == e.Context() })
			if j < 0 {
				continue
			}
			k := opens[j].k
			out[k].Seen, out[k].To, out[k].EndedByDie = e.LastLive(), e.LastLive(), e.DiedLeading()
			out[k].LiveSteps = e.LiveSteps()
			if e.DiedLeading() {
				out[k].To = e.T
			}
			open[e.Proc] = slices.Delete(opens, j, j+1)
		}
	}
	for _, opens := range open {
		for _, o := range opens {
			out[o.k].Seen, out[o.k].To, out[o.k].Open = int64(tr.End), int64(tr.End), true
			out[o.k].LiveSteps = len(tr.Events)
		}
	}
	// A context never seen live (done before the user's code could act
	// on it) is no leadership.
	kept := out[:0]
	for _, x := range out {
		if x.Seen >= x.From {
			kept = append(kept, x)
		}
	}
	return kept
}

// ReportedLeadership returns every leadership interval as the processes
// reported it (Proc.Role and Proc.Lead), ordered by start: from the step
// that made a process leader to the step at which it stepped down or
// died, or to its local deadline (Lead events) if that comes first; a
// renewal that lands after the deadline starts a new interval. A paused
// leader is still leader until then. Its intervals keep time's order at
// one instant (an interval that ends there ends before any that begins
// there: LiveSteps is the first event at its end's instant), since the
// order of a recorded trace's events at one instant is only the order in
// which independent processes' clocks were merged.
func (tr *Trace) ReportedLeadership() []Interval {
	n := len(tr.Procs)
	var out []Interval
	open := make([]int, n)
	leader := make([]bool, n)
	dl := make([]int64, n)
	hasDl := make([]bool, n)
	for i := range open {
		open[i] = -1
	}
	closeAt := func(p int, t int64, died bool) {
		if open[p] >= 0 {
			out[open[p]].To = t
			out[open[p]].EndedByDie = died
			open[p] = -1
		}
	}
	for i, e := range tr.Events {
		if e.Proc < 0 {
			continue
		}
		p := int(e.Proc)
		if open[p] >= 0 && hasDl[p] && e.T > dl[p] {
			if dl[p] <= out[open[p]].From {
				out[open[p]].To = -1 // its deadline had passed before it began: it never led
				open[p] = -1
			} else {
				closeAt(p, dl[p], false)
			}
		}
		switch {
		case e.Kind == EvRole && e.Role == lease.RoleLeader:
			leader[p], hasDl[p] = true, false
			if open[p] < 0 {
				open[p] = len(out)
				out = append(out, Interval{Proc: p, From: e.T, Start: i})
			}
		case e.Kind == EvLead:
			dl[p], hasDl[p] = e.Deadline(), true
			if leader[p] && open[p] < 0 && e.Deadline() > e.T {
				open[p] = len(out)
				out = append(out, Interval{Proc: p, From: e.T, Start: i})
			}
		case e.Kind == EvRole || e.Kind == EvExit:
			leader[p] = false
			closeAt(p, e.T, e.Kind == EvExit)
		}
	}
	for p, k := range open {
		if k < 0 {
			continue
		}
		if hasDl[p] && dl[p] < int64(tr.End) {
			out[k].To = dl[p]
			if dl[p] <= out[k].From {
				out[k].To = -1
			}
		} else {
			out[k].To, out[k].Open = int64(tr.End), true
		}
	}
	// A term whose deadline had passed before it began (a process paused
	// between its write and its Lead) never led.
	kept := out[:0]
	for _, x := range out {
		if x.To >= x.From || x.Open {
			x.Seen = x.To
			x.LiveSteps = sort.Search(len(tr.Events), func(i int) bool { return tr.Events[i].T >= x.To })
			kept = append(kept, x)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].From < kept[j].From })
	return kept
}

// MaxConcurrentLeaders returns the largest number of processes that
// believed they led at one instant.
func (tr *Trace) MaxConcurrentLeaders() int {
	type edge struct {
		t    int64
		d    int
		proc int
	}
	var edges []edge
	for _, iv := range tr.Leadership() {
		edges = append(edges, edge{iv.From, +1, iv.Proc}, edge{iv.To, -1, iv.Proc})
	}
	// At equal times an end comes before a start: a hand-over at one
	// instant is not an overlap.
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].t < edges[j].t || edges[i].t == edges[j].t && edges[i].d < edges[j].d
	})
	// A process holding two contexts at once is one leader.
	held := make([]int, len(tr.Procs))
	n, best := 0, 0
	for _, e := range edges {
		if held[e.proc] += e.d; e.d > 0 && held[e.proc] == 1 || e.d < 0 && held[e.proc] == 0 {
			n += e.d
		}
		best = max(best, n)
	}
	return best
}

// Leaders returns how many distinct processes led at some point.
func (tr *Trace) Leaders() int {
	seen := map[int]bool{}
	for _, iv := range tr.Leadership() {
		seen[iv.Proc] = true
	}
	return len(seen)
}

// FirstLeaderAfter returns the first instant at or after t at which a
// process became leader, and whether there was one.
func (tr *Trace) FirstLeaderAfter(t int64) (int64, bool) {
	for _, iv := range tr.Leadership() {
		if iv.From >= t {
			return iv.From, true
		}
	}
	return 0, false
}

// FirstFault returns the time of the first fault event, and whether there
// was one.
func (tr *Trace) FirstFault() (int64, bool) {
	for _, e := range tr.Events {
		if e.Kind == EvFault {
			return e.T, true
		}
	}
	return 0, false
}

// LeaderlessAtEnd returns how long the run had no leader when it ended
// (0 if some process led at the end), counting only time during which
// some process was alive.
func (tr *Trace) LeaderlessAtEnd() time.Duration {
	last := int64(0)
	for _, iv := range tr.Leadership() {
		if iv.Open {
			return 0
		}
		last = max(last, iv.To)
	}
	if !tr.anyAlive() {
		return 0
	}
	if first := int64(tr.firstStart()); last < first {
		last = first
	}
	return tr.End - time.Duration(last)
}

func (tr *Trace) firstStart() time.Duration {
	first := tr.Procs[0].Start
	for _, p := range tr.Procs {
		first = min(first, p.Start)
	}
	return first
}

func (tr *Trace) anyAlive() bool {
	dead := make([]bool, len(tr.Procs))
	for _, e := range tr.Events {
		if e.Kind == EvExit {
			dead[e.Proc] = true
		}
	}
	for _, d := range dead {
		if !d {
			return true
		}
	}
	return false
}
