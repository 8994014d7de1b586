package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkOwnTakenBack reports, for a variant with a local deadline, the
// first leader that stepped down while the store still held its own
// record and did not take it back in time. A term that ends by its local
// deadline (its renewals failed: a full disk, an unreachable server) with
// no SIGTERM and no conflict leaves the record of its last acknowledged
// write in the store; nobody else holds it, so while the store keeps it
// (a read, by anyone, returns it unchanged) the process that wrote it can
// lead again at once, and must, within a back-off (the watch interval,
// at most the lease) and a hand-over's calls of its running time (a pause
// does not count) since it stepped down, since the last stretch of
// failing writes ended, and since its last failed attempt. A probe's reference that waited out its own record as
// another's left gaps of up to a lease after a fault, which the other
// rules' allowances excuse.
func checkOwnTakenBack(tr *trace.Trace, terms []endedTerm, v lease.Variant) *Violation {
	if !v.LocalDeadline || tr.Recorded {
		return nil
	}
	var run [][]span
	var first *Violation
	beyond := driftBeyond(tr)
	for _, t := range terms {
		p, ack, end := t.p, t.ack, t.end
		if excused(tr, v, p, ack, end) {
			continue
		}
		rec := tr.Events[ack].Record()
		at := end // from where the record must be taken back
		if k := lateOwnWrite(tr, p, ack, end); k >= 0 {
			// Its renewal, in flight as its term lapsed, took effect: the
			// record the store holds is still its own.
			rec, ack, at = tr.Events[k].Record(), k, max(end, k)
		}
		if replaced(tr, ack, at) {
			continue
		}
		until, seenBy := ownRecordHeld(tr, p, rec, at)
		if until < 0 || seenBy >= beyond {
			continue
		}
		if run == nil {
			run = running(tr)
		}
		from := max(tr.Events[at].T, lastStretchEnd(tr, p, until), lastFailure(tr, p, at, seenBy))
		cfg := procConfig(tr, p)
		bound := waitBound(tr, min(cfg.WatchInterval, cfg.LeaseDuration)) // (a back-off)
		ran := coveredBy(run[p], from, until)
		// (Running time: a pause since does not count.)
		if ran <= bound || first != nil && time.Duration(until) >= first.At {
			continue
		}
		how := "read then by process " + tr.ProcName(int(tr.Events[seenBy].Proc))
		if e := &tr.Events[seenBy]; int(e.Proc) == p && e.Kind == trace.EvStore && e.Store.Writes() {
			how = "when it called the write that took it back"
		}
		first = &Violation{Property: StableLeadership, At: time.Duration(until), PIDs: []int{tr.Procs[p].PID}, Events: []int{ack, end, seenBy},
			Detail: fmt.Sprintf("process %s stepped down at %s with its own record (version %d) still the store's, and had not taken it back by %s (%s), %v of its running time after it could have (bound %v: a back-off and a hand-over): nobody else held the lease, and nobody led",
				tr.ProcName(p), secs(time.Duration(tr.Events[end].T)), rec.Version, secs(time.Duration(until)), how, time.Duration(ran), time.Duration(bound))}
	}
	return first
}

// lateOwnWrite returns the index of process p's write that the store
// acknowledged after its last acknowledged write ack while its term was
// live, and that it called before the term ended (event end): a renewal
// in flight as the term lapsed (a pause inside it), which took effect.
// The record it wrote is p's own as much as the last one was: nobody else
// wrote since. -1 when there is none, or another write, a release or a
// server's expiry or loss came first. (A probe's lone reference, paused
// for 10 s inside its renewal, waited out the record that renewal made as
// another's and led again a lease late; this rule counted the record as
// replaced and passed it.)
func lateOwnWrite(tr *trace.Trace, p, ack, end int) int {
	calls := make([]int, len(tr.Acts[p])) // each activity's last store call's index
	for i := ack + 1; i < len(tr.Events); i++ {
		e := &tr.Events[i]
		switch {
		case int(e.Proc) == p && e.Kind == trace.EvStoreCall && int(e.Act) < len(calls):
			calls[e.Act] = i
		case int(e.Proc) == p && e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes() && int(e.Act) < len(calls):
			if c := calls[e.Act]; c > 0 && c < end {
				return i
			}
			return -1 // a write called after the term: a take-back, a new term
		case e.Kind == trace.EvStore && (e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease) || e.Store == trace.StoreExpire),
			e.Kind == trace.EvFault && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power),
			int(e.Proc) == p && (e.Kind == trace.EvStarted && i > end || e.Kind == trace.EvExit):
			return -1 // (its next term, or its end; not the term's own start)
		}
	}
	return -1
}

// replaced reports whether the record may have changed between events
// from and to: a write or a release took effect (by anyone: the process's
// own renewal that returned after its term lapsed makes a record it does
// not count as its own), or a server expired or lost it.
func replaced(tr *trace.Trace, from, to int) bool {
	for i := from + 1; i <= to; i++ {
		e := &tr.Events[i]
		if e.Kind == trace.EvStore && (e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease) || e.Store == trace.StoreExpire) ||
			e.Kind == trace.EvFault && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power) {
			return true
		}
	}
	return false
}

// ownRecordHeld returns the last instant, after event end, at which a read
// (by any process) that began after end returned rec unchanged while
// process p did not lead again, and that read's index; -1, -1 when none
// did. (A read begun before, by a process paused in it, may return what
// the store held long ago: a review.) It stops at what may change the
// record (a write or a release that took effect, a server's expiry or
// loss) and at p's next term, SIGTERM or end.
func ownRecordHeld(tr *trace.Trace, p int, rec lease.Record, end int) (int64, int) {
	until, by := int64(-1), -1
	// Write and release calls in flight, and called since the last read
	// that showed rec (or in flight then).
	inflight := writesInFlight(tr, end)
	since := 0
	called := make([][]int, len(tr.Procs)) // each activity's last store call's index
	for q := range called {
		called[q] = make([]int, len(tr.Acts[q]))
	}
	for i := end + 1; i < len(tr.Events); i++ {
		e := &tr.Events[i]
		if e.Kind == trace.EvStoreCall && e.Proc >= 0 && int(e.Act) < len(called[e.Proc]) {
			called[e.Proc][e.Act] = i
			if e.Store.Writes() || e.Store == trace.StoreRelease {
				inflight++
				since++
			}
		}
		if e.Kind == trace.EvStore && e.Proc >= 0 && (e.Store.Writes() || e.Store == trace.StoreRelease) && inflight > 0 {
			inflight--
		}
		switch {
		case int(e.Proc) == p && (e.Kind == trace.EvStarted || e.Kind == trace.EvExit || e.Kind == trace.EvSignal && e.Op != trace.OpSigaction):
			return until, by
		case int(e.Proc) == p && e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes() && int(e.Act) < len(called[p]) && called[p][e.Act] > end:
			// Its own write, which replaced rec (nothing else wrote since,
			// and a read showed rec held): the record was its own,
			// unchanged, until it called it. (A process that waits its
			// own record out reads it once and waits: without this, only
			// that read's instant counted.)
			// Only if this write is the only one called since that read: a
			// write whose outcome was not known (an error after its link)
			// may have replaced rec meanwhile.
			if until < 0 || since != 1 {
				return until, by
			}
			return max(until, tr.Events[called[p][e.Act]].T), i
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease),
			e.Kind == trace.EvStore && e.Store == trace.StoreExpire,
			e.Kind == trace.EvFault && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power):
			return until, by
		case e.Kind == trace.EvStore && e.Store == trace.StoreRead && e.Res == trace.ResOK && e.Proc >= 0 && int(e.Act) < len(called[e.Proc]) && called[e.Proc][e.Act] > 0:
			if r := e.Record(); r.Holder == rec.Holder && r.Epoch == rec.Epoch && r.Version == rec.Version {
				until, by, since = e.T, i, inflight
			}
		}
	}
	return until, by
}

// writesInFlight counts the write and release calls made up to event end
// that had not returned by then.
func writesInFlight(tr *trace.Trace, end int) int {
	n := 0
	for i := 0; i <= end && i < len(tr.Events); i++ {
		e := &tr.Events[i]
		if e.Proc >= 0 && (e.Store.Writes() || e.Store == trace.StoreRelease) {
			switch e.Kind {
			case trace.EvStoreCall:
				n++
			case trace.EvStore:
				n = max(n-1, 0)
			}
		}
	}
	return n
}

// lastFailure is the instant of process p's last failed attempt
// (failedAttempt) between events from and to, or 0: each may put off its next try
// by a back-off (a one-shot EIO right after a stretch ended: a search
// found the correct reference 3.7 s after it).
func lastFailure(tr *trace.Trace, p, from, to int) int64 {
	for i := to; i > from; i-- {
		if e := &tr.Events[i]; int(e.Proc) == p && failedAttempt(e) {
			return e.T
		}
	}
	return 0
}

// lastStretchEnd is the latest instant at or before until from which
// process p could write unhindered by a stretch: the end of the last
// stretch of failing writes or stalls that reached it (a full or failing
// disk, a stall, its descriptors exhausted), or 0.
func lastStretchEnd(tr *trace.Trace, p int, until int64) int64 {
	from := int64(0)
	for _, st := range tr.Stretches() {
		if (st.Proc < 0 || int(st.Proc) == p) && st.From <= until {
			from = max(from, min(st.To, until))
		}
	}
	return from
}
