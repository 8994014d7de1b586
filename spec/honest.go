package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// CheckHonestRole reports the first stretch in which a process's user
// code held a live leader context (Trace.Leadership) while the algorithm
// did not report leading (Proc.Role and Proc.Lead: Trace.ReportedLeadership):
// a leader that lets its user act on a term it no longer claims, such as
// one whose context outlives the local deadline it reported. The other
// way round (reporting leadership the user's context does not show) is
// harmless and allowed. Recorded traces, whose leadership is reported,
// are not judged.
//
// And, for a variant with a local deadline, a deadline reported that no
// write backs (checkDeadlinesBacked): the two together bound the user's
// context by what the store acknowledged.
func CheckHonestRole(tr *trace.Trace, iv []trace.Interval) *Violation {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		panic(err) // a trace is made from a valid config
	}
	return checkHonestRole(tr, iv, v)
}

func checkHonestRole(tr *trace.Trace, iv []trace.Interval, variant lease.Variant) *Violation {
	if tr.Recorded {
		return nil
	}
	if v := checkDeadlinesBacked(tr, variant); v != nil {
		return v
	}
	if v := checkReportedCovers(tr, iv); v != nil {
		return v
	}
	if v := checkContextsBacked(tr, iv, variant); v != nil {
		return v
	}
	return checkTakeoversBacked(tr, variant)
}

// checkReportedCovers is honest-role's first rule: reported leadership
// covers every stretch in which a leader context was seen live.
func checkReportedCovers(tr *trace.Trace, iv []trace.Interval) *Violation {
	reported := tr.ReportedLeadership()
	for _, x := range iv {
		covered := x.From // how far reported leadership covers x, from its start
		for _, r := range reported {
			if r.Proc == x.Proc && r.From <= covered && r.To >= covered {
				covered = max(covered, r.To)
			}
		}
		if covered < x.Seen {
			return &Violation{Property: HonestRole, At: time.Duration(covered),
				PIDs:   []int{tr.Procs[x.Proc].PID},
				Detail: fmt.Sprintf("process %s's code saw its leader context live until %s, but the algorithm reported leading only until %s", tr.ProcName(x.Proc), secs(time.Duration(x.Seen)), secs(time.Duration(covered)))}
		}
	}
	return nil
}

// safeDeadline is lease x (1-rho)/(1+rho), rho the drift bound config c
// states (or the design's): the longest renew deadline that keeps a
// leader inside the lease as any watcher measures it. The checker
// computes it itself, not with the code under test (a probe's
// Config.SafeDeadline without the drift factor passed honest-role, which
// asked it for its bound).
func safeDeadline(c lease.Config) time.Duration {
	rho := sim.DriftBoundOf(c)
	if rho >= 1_000_000 {
		return 0
	}
	return time.Duration(int64(c.LeaseDuration) / (1_000_000 + rho) * (1_000_000 - rho))
}

// deadlineBound is the latest renew deadline honest-role accepts for c:
// the one its algorithm should keep (expectedDeadline), and never past the
// safe deadline, whatever renew deadline is configured.
func deadlineBound(c lease.Config) time.Duration {
	return min(expectedDeadline(c), safeDeadline(c))
}

// designSlack is the margin the design takes off the safe deadline when
// no renew deadline is configured (lease's deadlineSlack, restated).
const designSlack = 50 * time.Millisecond

// expectedDeadline is the renew deadline c's algorithm should keep its
// terms to: the configured one, or the safe deadline less designSlack
// (stable-leadership's rule that terms last what the store backs).
func expectedDeadline(c lease.Config) time.Duration {
	if c.RenewDeadline > 0 {
		return c.RenewDeadline
	}
	return safeDeadline(c) - designSlack
}

// checkDeadlinesBacked reports the first local deadline a process reported
// (Proc.Lead) later than its renew deadline (deadlineBound, the checker's own)
// after the call of its last write the store acknowledged (a create,
// renewal or takeover that returned the record), on its own monotonic
// clock: the latest any deadline may count from, since a write that
// failed, or whose outcome the process could not know, may have taken
// effect any time before (or never), and a watcher counts its lease from
// when it saw it. A probe planted a leader that, finding its own earlier
// renewal (its reply lost) behind a conflict, counted its deadline from
// the failed attempt's start: no property caught it in 220,000 runs,
// since a renewal a few milliseconds later usually made the deadline
// right again, while a pause just then gave two leaders in 18 of 30
// scripted runs.
func checkDeadlinesBacked(tr *trace.Trace, v lease.Variant) *Violation {
	if !v.LocalDeadline {
		return nil
	}
	last := make([]int, len(tr.Procs)) // index+1 of each process's last acknowledged write
	for i := range tr.Events {
		e := &tr.Events[i]
		p := int(e.Proc)
		switch {
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes():
			last[p] = i + 1
		case e.Kind == trace.EvLead:
			rd := int64(deadlineBound(procConfig(tr, p)))
			if last[p] == 0 {
				return &Violation{Property: HonestRole, At: time.Duration(e.T), PIDs: []int{tr.Procs[p].PID},
					Detail: fmt.Sprintf("process %s reported leading (epoch %d) with no write of its acknowledged by the store", tr.ProcName(p), e.Epoch())}
			}
			w := &tr.Events[last[p]-1]
			if e.MonoDeadline() > w.CallMono()+rd {
				return &Violation{Property: HonestRole, At: time.Duration(e.T), PIDs: []int{tr.Procs[p].PID},
					Detail: fmt.Sprintf("process %s reported leading (epoch %d) until %v on its clock, %v past the renew deadline (%v) after the call of its last write the store acknowledged (a %s at %s, %v on its clock)",
						tr.ProcName(p), e.Epoch(), time.Duration(e.MonoDeadline()), time.Duration(e.MonoDeadline()-w.CallMono()-rd), time.Duration(rd), w.Store, secs(time.Duration(w.T)), time.Duration(w.CallMono()))}
			}
		}
	}
	return nil
}

// checkContextsBacked reports, for a variant with a local deadline, the
// first instant a leader context was live past its renew deadline
// (deadlineBound, the checker's own) after the call of its process's last
// write the store acknowledged before then, on the process's own
// monotonic clock: what checkDeadlinesBacked holds each reported deadline
// to, judged on the context itself, whatever the algorithm reports. The
// two rules above bound the context by the store only through Proc.Lead: a
// variant that never reports a deadline (or reports its role after it,
// which clears it) was held to nothing, and a probe's reference whose
// deadline ran from its write's return, or from a renewal that failed,
// passed 10,000 runs over Redis once it stopped calling Lead (caught at
// run 1 and 28 when it called it; helper-105, 2026-12-07).
//
// The context is live from its OnStartedLeading to the last look that saw
// it live (Interval.Seen, LiveSteps); a context seen done stays done
// (stopped-callback's), so every reading of the process's monotonic clock
// between the two (trace.EvClock: its own code's; a store write's call,
// CallMono) was made while it was live, and is judged exactly; at the
// last look, the clock is bounded below by its readings before and after
// and the run's largest drift (monoAtEarliest). A reading at or past the deadline comes only after
// the deadline's timer has fired (a timer fires before its process's
// first step at or after its instant), so a correct elector's context is
// done by then.
func checkContextsBacked(tr *trace.Trace, iv []trace.Interval, v lease.Variant) *Violation {
	if !v.LocalDeadline || tr.Recorded {
		return nil
	}
	var first *Violation
	rho := fastestDrift(tr)
	// acks[p]: process p's last acknowledged write before event k (iv is
	// in order of Start, so one pass finds each interval's).
	acks := make([]int, len(tr.Procs))
	for p := range acks {
		acks[p] = -1
	}
	k := 0
	for _, x := range iv {
		p := x.Proc
		for ; k < x.Start && k < len(tr.Events); k++ {
			if e := &tr.Events[k]; e.Proc >= 0 && e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes() {
				acks[e.Proc] = k
			}
		}
		if first != nil && time.Duration(x.From) >= first.At {
			continue
		}
		rd := int64(deadlineBound(procConfig(tr, p)))
		end := min(x.LiveSteps, len(tr.Events))
		ack := acks[p] // p's last acknowledged write before the event judged
		judge := func(at int64, mono int64, exact bool) *Violation {
			if ack < 0 {
				return &Violation{Property: HonestRole, At: time.Duration(at), PIDs: []int{tr.Procs[p].PID},
					Detail: fmt.Sprintf("process %s's code saw its leader context live at %s with no write of its acknowledged by the store", tr.ProcName(p), secs(time.Duration(at)))}
			}
			w := &tr.Events[ack]
			if mono <= w.CallMono()+rd {
				return nil
			}
			how := "its clock read"
			if !exact {
				how = "its clock read at least"
			}
			return &Violation{Property: HonestRole, At: time.Duration(at), PIDs: []int{tr.Procs[p].PID}, Events: []int{ack},
				Detail: fmt.Sprintf("process %s's code saw its leader context live at %s, when %s %v, %v past the renew deadline (%v) after the call of its last write the store acknowledged (a %s at %s, %v on its clock)",
					tr.ProcName(p), secs(time.Duration(at)), how, time.Duration(mono), time.Duration(mono-w.CallMono()-rd), time.Duration(rd), w.Store, secs(time.Duration(w.T)), time.Duration(w.CallMono()))}
		}
		var found *Violation
		for i := x.Start; i < end && found == nil; i++ {
			e := &tr.Events[i]
			switch {
			case int(e.Proc) != p:
			case e.Kind == trace.EvStore && e.Store.Writes():
				// (Its call read the clock: CallMono, judged against the
				// write acknowledged before it.)
				if found = judge(e.T, e.CallMono(), true); e.Res == trace.ResOK {
					ack = i
				}
			case e.Kind == trace.EvClock && e.Op == trace.OpClockMono:
				found = judge(e.T, e.N, true)
			}
		}
		if found == nil {
			if m, ok := monoAtEarliest(tr, p, end, x.Seen, rho); ok {
				found = judge(x.Seen, m, false)
			}
		}
		if found != nil && (first == nil || found.At < first.At) {
			first = found
		}
	}
	return first
}

// monoAtEarliest is the least process p's monotonic clock can have read
// at true time t, the world having recorded n events by then: its last
// reading before (at most t), advanced at the slowest rate drift rho (in
// ppm) allows, or its first reading after, less what the fastest rate
// allows since; ok is false with neither.
func monoAtEarliest(tr *trace.Trace, p, n int, t int64, rho int64) (int64, bool) {
	var lo int64
	ok := false
	for j := n - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockMono && e.T <= t {
			lo, ok = e.N+scaleRate(t-e.T, -rho), true
			break
		}
	}
	for j := n; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockMono && e.T >= t {
			if m := e.N - scaleRate(e.T-t, rho); !ok || m > lo {
				lo, ok = m, true
			}
			break
		}
	}
	return lo, ok
}

// scaleRate is d at a rate ppm parts per million off true speed, never
// below 0: d*(1e6+ppm)/1e6 without overflow.
func scaleRate(d, ppm int64) int64 {
	if ppm <= -1_000_000 {
		return 0
	}
	return d + d/1_000_000*ppm + d%1_000_000*ppm/1_000_000
}
