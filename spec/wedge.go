package spec

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// leaderless returns the maximal spans with no leader, from the first
// process start to the end of the run.
func leaderless(tr *trace.Trace, iv []trace.Interval) []span {
	type edge struct {
		t int64
		d int
	}
	var edges []edge
	for _, x := range iv {
		edges = append(edges, edge{x.From, 1}, edge{x.To, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].t < edges[j].t || edges[i].t == edges[j].t && edges[i].d > edges[j].d
	})
	var out []span
	start := int64(tr.Procs[0].Start)
	for _, p := range tr.Procs {
		start = min(start, int64(p.Start))
	}
	n, gapFrom := 0, start
	for _, e := range edges {
		if n == 0 && e.d > 0 && e.t > gapFrom {
			out = append(out, span{gapFrom, e.t})
		}
		n += e.d
		if n == 0 {
			gapFrom = e.t
		}
	}
	if n == 0 && int64(tr.End) > gapFrom {
		out = append(out, span{gapFrom, int64(tr.End)})
	}
	return out
}

// faultTimes returns the instants at which a fault fired or a process
// ended, in order.
func faultTimes(tr *trace.Trace) []int64 {
	var ts []int64
	for _, e := range tr.Events {
		if cuts(&e) || e.Kind == trace.EvExit {
			ts = append(ts, e.T)
		}
	}
	return ts
}

// splitAt cuts spans at the given instants.
func splitAt(spans []span, cuts []int64) []span {
	var out []span
	for _, s := range spans {
		from := s.from
		for _, c := range cuts {
			if c > from && c < s.to {
				out = append(out, span{from, c})
				from = c
			}
		}
		out = append(out, span{from, s.to})
	}
	return out
}

// CheckNoWedge reports the first time some process was alive and unpaused
// for longer than b.Wedge while no process led and no fault fired.
//
// The clock restarts at every fault and every exit: liveness is owed once
// faults stop, not across them. A process killed right after it wrote a
// lease, before it knew it led, leaves a valid lease that every correct
// algorithm must wait out; a wedge (an empty lock file) outlasts every
// restart.
//
// A stretch (a full or failing disk, a stalled machine: trace.Stretch) is
// excused as a pause is: nobody owes a leader while the disk refuses every
// write or no process runs. The clock restarts when it ends, so a stretch
// that ends late in the run owes a leader within b.Wedge after it.
func CheckNoWedge(tr *trace.Trace, iv []trace.Interval, b Bounds) *Violation {
	return checkNoWedge(tr, iv, b, eligible(tr))
}

// checkNoWedge is CheckNoWedge with eligible(tr) computed once for every
// property that needs it.
func checkNoWedge(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) *Violation {
	if all := allWedges(tr, iv, b, el); len(all) > 0 {
		return &all[0]
	}
	return nil
}

// allWedges returns, for every span without a leader longer than the
// bound while some process could have led, its first violation, by time.
func allWedges(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) []Violation {
	st := tr.Stretches()
	var out []Violation
	for _, g := range splitAt(leaderless(tr, iv), faultTimes(tr)) {
		if within(st, g) {
			continue // the stretch itself: its start and end cut the spans
		}
		var first *Violation
		for p, spans := range el {
			for _, s := range spans {
				from, to := max(g.from, s.from), min(g.to, s.to)
				if to-from <= int64(b.Wedge) {
					continue
				}
				at := time.Duration(from) + b.Wedge
				if first == nil || at < first.At {
					first = &Violation{Property: NoWedge, At: at, PIDs: []int{tr.Procs[p].PID},
						Detail: fmt.Sprintf("no leader from %s to %s although process %s was alive and running (bound %v)",
							secs(time.Duration(g.from)), secs(time.Duration(g.to)), tr.ProcName(p), b.Wedge)}
				}
			}
		}
		if first != nil {
			out = append(out, *first)
		}
	}
	slices.SortStableFunc(out, func(x, y Violation) int { return cmp.Compare(x.At, y.At) })
	return out
}

// CheckFailover reports the first SIGKILL (SIGTERM) of a leader not
// followed by a new leader within b.Kill (b.Term), when some other process
// was alive and unpaused all that time and the run lasted long enough.
// A signal whose bound meets a stretch (under way when the signal came, or
// starting before the bound ran out) is not judged here, as one followed
// by another fault is not: no-wedge, whose clock restarts when the
// stretch ends, owes the next leader after it. Nor is one within a watch
// interval after a failing disk's stretch (DiskFull, DiskEIO): the
// processes whose calls failed learn that the disk works again at their
// next try, after a back-off that the variants bound by the watch
// interval, and a waiter asleep in it cannot take a hand-over at once.
// (Found by the mutant catalogue: flock, correct, handed a lock over in
// 155 ms, not 100, to waiters backing off from a disk that had failed
// until 0.8 s before; spec.TestFailoverAfterDiskStretch.) Since those
// excuses cover the release's own I/O error, a graceful exit is judged
// too, by what the store kept (checkGivesBack): a leader told to stop
// whose term may be live does not leave its record behind after one
// failed attempt.
func CheckFailover(tr *trace.Trace, iv []trace.Interval, b Bounds) *Violation {
	return checkFailover(tr, iv, b, eligible(tr))
}

func checkFailover(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) *Violation {
	var first *Violation
	failoverWindows(tr, iv, b, el, func(_ bool, v *Violation) bool {
		first = v
		return v == nil
	})
	if first == nil {
		first = checkGivesBack(tr)
	}
	return first
}

// within reports whether span g lies within one of the stretches of the
// whole machine.
func within(st []trace.Stretch, g span) bool {
	for _, s := range st {
		if s.Proc < 0 && s.From <= g.from && g.to <= s.To {
			return true
		}
	}
	return false
}

// meets reports whether a stretch was under way at some instant of
// [from, to].
func meets(st []trace.Stretch, from, to int64) bool {
	for _, s := range st {
		if s.From <= to && s.To > from {
			return true
		}
	}
	return false
}

// faultIn reports whether a fault fires or a process ends at or after
// event i's instant (any other event of it) and at or before t. The order
// of one instant's steps is not the trace's to judge: independent steps
// run in either order (a partial-order reduction runs one), so a fault at
// event i's instant counts wherever it fell.
func faultIn(tr *trace.Trace, i int, t int64) bool {
	from := i
	for from > 0 && tr.Events[from-1].T == tr.Events[i].T {
		from--
	}
	for j, e := range tr.Events[from:] {
		if from+j == i {
			continue
		}
		if e.T > t {
			break
		}
		if cuts(&e) && e.FaultKind() != trace.Cont || e.Kind == trace.EvExit && e.Proc != tr.Events[i].Proc {
			return true
		}
	}
	return false
}

func leadingAt(iv []trace.Interval, p int, t int64) bool {
	for _, x := range iv {
		if x.Proc == p && x.From <= t && t <= x.To {
			return true
		}
	}
	return false
}

func covers(spans []span, from, to int64) bool {
	for _, s := range spans {
		if s.from <= from && to <= s.to {
			return true
		}
	}
	return false
}
