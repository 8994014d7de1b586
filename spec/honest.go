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
