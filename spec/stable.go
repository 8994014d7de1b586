package spec

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// StableLeadership is the availability property: once the world has been
// quiet for a while, a leader leads and keeps leading until something
// happens (CheckStableLeadership).
const StableLeadership = "stable-leadership"

// CheckStableLeadership reports the first instant of settled quiet at
// which no process leads, or at which a leader's context ends: a leader
// that steps down, or a run that goes without a leader, with nothing in
// the world to make it.
//
// Quiet is the time between disturbances: a fault that fired (a signal,
// an I/O error, a power loss), a process's start or exit; a paused process
// and a stretch (a full or failing disk, a stalled machine) disturb from
// their start to their end; a skew, a wall-clock jump and a drift within
// the configured drift bound disturb as any fault does, and a drift beyond
// that bound ends the quiet for the rest of the run: a clock that is off
// by more than the design allows stays off, and a variant need not
// tolerate it (settledQuiet). The design allows a run to settle after a
// disturbance: a lease to be waited out, a watcher to poll, a drift margin
// to pass; b.Wedge, the same bound no-wedge holds it to. Settled quiet is
// quiet from b.Wedge after its disturbance to the next.
//
// In settled quiet, some process leads at every instant at which a process
// is alive and running (its user's context live: Interval.Seen), and no
// leader's context ends: the fraction of time without a leader the design
// allows is that of the settle windows, and nothing more. No-wedge
// tolerates a gap shorter than b.Wedge anywhere; this property tolerates
// none where nothing happened, so a leader that steps down every few
// renewals (and leaves gaps of seconds) is caught.
func CheckStableLeadership(tr *trace.Trace, iv []trace.Interval, b Bounds) *Violation {
	return checkStableLeadership(tr, iv, b, nil)
}

// checkStableLeadership is CheckStableLeadership with eligible(tr), if
// el is not nil, computed by the caller.
func checkStableLeadership(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) *Violation {
	var first *Violation
	if v, err := lease.LookupVariant(tr.Run.Variant); err == nil {
		terms := endedTerms(tr, iv) // (the three rules' terms, found once)
		first = earlier(earlier(checkTermsLast(tr, terms, v), checkOwnTakenBack(tr, terms, v)), checkKeepsRenewing(tr, terms, v))
		first = earlier(first, checkUnknownTakenBack(tr, v))
	}
	return earlier(first, checkSettledQuiet(tr, iv, b, el))
}

// earlier returns the earlier of two violations (either may be nil).
func earlier(a, b *Violation) *Violation {
	if a == nil || b != nil && b.At < a.At {
		return b
	}
	return a
}

// checkSettledQuiet is stable leadership in settled quiet: no step-down,
// no gap without a leader.
func checkSettledQuiet(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) *Violation {
	settled := settledQuiet(tr, b.Wedge)
	if len(settled) == 0 {
		return nil
	}
	// The earliest step-down in settled quiet: a leader's context that
	// ends there.
	var down *trace.Interval
	var downIn span
	for k, x := range iv {
		if x.Open || x.EndedByDie || down != nil && x.Seen >= down.Seen {
			continue
		}
		for _, s := range settled {
			if x.Seen > s.from && x.Seen < s.to {
				down, downIn = &iv[k], s
				break
			}
		}
	}
	// The earliest instant of settled quiet without a leader (as the
	// users' code saw it: Seen) while some process was alive and running.
	seen := make([]trace.Interval, len(iv))
	for k, x := range iv {
		seen[k] = x
		seen[k].To = x.Seen
	}
	if el == nil {
		el = eligible(tr)
	}
	gapAt, gapProc := int64(-1), -1
	var gap, gapIn span
	for _, g := range leaderless(tr, seen) {
		for _, s := range settled {
			from, to := max(g.from, s.from), min(g.to, s.to)
			for p, spans := range el {
				for _, e := range spans {
					at, until := max(from, e.from), min(to, e.to)
					if until > at && (gapAt < 0 || at < gapAt) {
						gapAt, gapProc, gap, gapIn = at, p, g, s
					}
				}
			}
		}
	}
	since := func(s span) string { return secs(time.Duration(s.from) - b.Wedge) }
	switch {
	case down != nil && (gapAt < 0 || down.Seen <= gapAt):
		pid := tr.Procs[down.Proc].PID
		return &Violation{Property: StableLeadership, At: time.Duration(down.Seen), PIDs: []int{pid},
			Events: []int{stoppedEvent(tr, down.Proc, down.Seen)},
			Detail: fmt.Sprintf("process %s stopped leading at %s (leading since %s) with nothing disturbed since %s: no fault, no start or exit (settle %v)",
				tr.ProcName(down.Proc), secs(time.Duration(down.Seen)), secs(time.Duration(down.From)), since(downIn), b.Wedge)}
	case gapAt >= 0:
		pid := tr.Procs[gapProc].PID
		return &Violation{Property: StableLeadership, At: time.Duration(gapAt), PIDs: []int{pid},
			Detail: fmt.Sprintf("no leader from %s to %s although process %s was alive and running and nothing was disturbed since %s: no fault, no start or exit (settle %v; %s of the run's settled quiet without a leader)",
				secs(time.Duration(gap.from)), secs(time.Duration(gap.to)), tr.ProcName(gapProc), since(gapIn), b.Wedge, leaderlessShare(seen, settled, tr))}
	}
	return nil
}

// settledQuiet returns the spans of settled quiet: from settle after each
// disturbance to the next one, up to the first drift beyond the drift
// bound the algorithm is configured for, or the end of the run. A skew,
// a wall-clock jump and a drift within the bound disturb as any fault
// does: a design that keeps its leases on the monotonic clock, within its
// drift bound, owes stable leadership after them (until 2026-12-05 every
// clock fault ended the quiet, so a leader that stepped down every few
// renewals after a 1 µs skew went unseen). A stretch (a full or failing disk, a stalled machine) and a
// paused process disturb from their start to their end (an EMFile
// stretch a watch interval longer: see emfileLag): a paused lock holder
// that blocks everyone (flock) is no-wedge's to judge, not this
// property's.
func settledQuiet(tr *trace.Trace, settle time.Duration) []span {
	end := int64(tr.End)
	var busy []span // unsettled: a disturbance and the settle after it
	for _, p := range tr.Procs {
		busy = append(busy, span{int64(p.Start), int64(p.Start) + int64(settle)})
	}
	stopped := make([]int64, len(tr.Procs)) // when a process was paused, +1 (0: running)
	resume := func(p int, t int64) {
		if stopped[p] != 0 {
			busy = append(busy, span{stopped[p] - 1, t + int64(settle)})
			stopped[p] = 0
		}
	}
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.EvFault && !e.Missed():
			to := e.T
			switch k := e.FaultKind(); {
			case k == trace.Drift && abs(e.DriftPPM()) > driftBound(tr, e.Proc):
				end = min(end, e.T) // beyond what the algorithm is configured for: it stays off
			case k.IsStretch():
				to += int64(e.PauseFor())
				if k == trace.EMFile && e.Proc >= 0 {
					to += int64(emfileLag(tr, int(e.Proc))) // its victim learns of its end at its next try
				}
			case k.IsPause() && e.Proc >= 0 && stopped[e.Proc] == 0:
				stopped[e.Proc] = e.T + 1
			case k == trace.Cont && e.Proc >= 0:
				resume(int(e.Proc), e.T)
			}
			busy = append(busy, span{e.T, to + int64(settle)})
		case e.Kind == trace.EvExit:
			resume(int(e.Proc), e.T)
			busy = append(busy, span{e.T, e.T + int64(settle)})
		}
	}
	for p := range stopped {
		resume(p, int64(tr.End))
	}
	slices.SortFunc(busy, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	from := int64(0)
	for k, b := range busy {
		if k > 0 && b.from > from && from < end {
			out = append(out, span{from, min(b.from, end)})
		}
		from = max(from, b.to)
	}
	if from < end {
		out = append(out, span{from, end})
	}
	return out
}

// leaderlessShare is the fraction of settled quiet without a leader, as a
// percentage.
func leaderlessShare(iv []trace.Interval, settled []span, tr *trace.Trace) string {
	var total, without int64
	gaps := leaderless(tr, iv)
	for _, s := range settled {
		total += s.to - s.from
		for _, g := range gaps {
			without += max(0, min(g.to, s.to)-max(g.from, s.from))
		}
	}
	if total == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(without)/float64(total))
}

// stoppedEvent is the index of process p's EvStopped at t, or -1.
func stoppedEvent(tr *trace.Trace, p int, t int64) int {
	for i, e := range tr.Events {
		if e.Kind == trace.EvStopped && int(e.Proc) == p && e.T >= t {
			return i
		}
	}
	return -1
}

// driftBound is the drift bound process p's algorithm is configured for,
// in parts per million (the run's, or p's own in a rolling change).
func driftBound(tr *trace.Trace, p int16) int64 {
	if p >= 0 && int(p) < len(tr.Procs) && tr.Procs[p].Lease.LeaseDuration != 0 {
		return sim.DriftBoundOf(tr.Procs[p].Lease)
	}
	return sim.DriftBoundOf(tr.Run.Lease)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
