package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkKeepsRenewing reports, for a variant with a local deadline, the
// first leader whose term ran out while it had stopped trying: a term
// that ended with no reason but its deadline (excused: no SIGTERM, no
// conflict, no read of another's record) and more than a renew interval
// of its process's running time (stretched by the run's largest drift,
// plus a slack and a hand-over's calls) after its last write attempt
// returned, with none in flight. A leader renews every renew interval and
// retries a failed renewal after a back-off of at most that, until its
// deadline; one that waits longer gives up a term the store would have
// kept. (A probe's reference capped its back-off at the renew deadline
// instead of the renew interval: with -renew 1s a leader whose disk
// recovered stepped down at its deadline and began a new term, and no
// rule judged a step-down at the deadline, which is always allowed.)
func checkKeepsRenewing(tr *trace.Trace, terms []endedTerm, v lease.Variant) *Violation {
	if !v.LocalDeadline || tr.Recorded {
		return nil
	}
	var run [][]span
	var first *Violation
	beyond := driftBeyond(tr)
	for _, t := range terms {
		p, ack, end := t.p, t.ack, t.end
		if end >= beyond || excused(tr, v, p, ack, end) {
			continue
		}
		last, inFlight := lastWriteAttempt(tr, p, ack, end)
		if inFlight {
			continue
		}
		if run == nil {
			run = running(tr)
		}
		cfg := procConfig(tr, p)
		bound := waitBound(tr, cfg.RenewInterval)
		from := tr.Events[last].T
		ran := coveredBy(run[p], from, tr.Events[end].T)
		if ran <= bound || first != nil && time.Duration(tr.Events[end].T) >= first.At {
			continue
		}
		first = &Violation{Property: StableLeadership, At: time.Duration(tr.Events[end].T), PIDs: []int{tr.Procs[p].PID}, Events: []int{last, end},
			Detail: fmt.Sprintf("process %s's term ended at %s by its deadline, %v of its running time after its last write attempt returned (a %s at %s) and with none since (bound %v: a renew interval, a slack and a hand-over): a leader keeps renewing, or retrying, at least every renew interval until its deadline",
				tr.ProcName(p), secs(time.Duration(tr.Events[end].T)), time.Duration(ran), tr.Events[last].Store, secs(time.Duration(from)), time.Duration(bound))}
	}
	return first
}

// waitBound is how much running time a wait of d on a process's own
// clock may take, in true time: d stretched by the run's largest drift (a
// slow clock's wait lasts longer), plus Slack and a hand-over's calls.
func waitBound(tr *trace.Trace, d time.Duration) int64 {
	stretched := float64(d) / (1 - float64(min(fastestDrift(tr), 900_000))/1e6)
	return int64(stretched) + int64(Slack) + HandoverCalls*int64(tr.Run.CallMax)
}

// lastWriteAttempt returns the index of the last return of a write or
// release of process p between events from and to, and whether one of
// its write calls was still in flight at to.
func lastWriteAttempt(tr *trace.Trace, p, from, to int) (int, bool) {
	last, open := from, 0
	for i := from + 1; i <= to; i++ {
		e := &tr.Events[i]
		if int(e.Proc) != p || !(e.Store.Writes() || e.Store == trace.StoreRelease) {
			continue
		}
		switch e.Kind {
		case trace.EvStoreCall:
			open++
		case trace.EvStore:
			open = max(open-1, 0)
			last = i
		}
	}
	return last, open > 0
}
