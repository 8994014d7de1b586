package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkTermsLast reports, for a variant with a local deadline, the first
// leader context that ended before its renew deadline
// (expectedDeadline, on the process's monotonic clock) after
// the call of the last write the store acknowledged while the context was
// live, with nothing to end it early: no SIGTERM handler run, no store
// answer that the lease was lost (a conflict), no death. Stable leadership's other rules judge settled quiet
// only, and excuse a step-down near any disturbance; a leader whose
// deadline is far too short (a probe's: 3.2 s of a 9 s lease) steps down
// only when a fault delays a renewal by a fraction of a second, and took
// its record back at once, so nothing caught it (honest-role bounds a
// deadline from above). The store backed the term until then; a leader
// that gives it up without a reason leaves its users without a leader for
// nothing.
//
// The context's end is placed at the instant the simulator saw it done
// (EvStopped), and the process's clock then at its first monotonic
// reading from that instant on (its last one before, plus twice the time
// since, when it read none after): the latest either can be, so a late
// reading only excuses. Slack absorbs timer lateness.
func checkTermsLast(tr *trace.Trace, terms []endedTerm, v lease.Variant) *Violation {
	if !v.LocalDeadline || tr.Recorded {
		return nil
	}
	var first *Violation
	beyond := driftBeyond(tr)
	for _, t := range terms {
		x, p, ack, end := t.x, t.p, t.ack, t.end
		if first != nil && time.Duration(x.Seen) >= first.At || excused(tr, v, p, ack, end) || end >= beyond {
			continue
		}
		rd := expectedDeadline(procConfig(tr, p))
		w := &tr.Events[ack]
		due := time.Duration(w.CallMono()) + rd
		mono := monoAtLatest(tr, p, end)
		if mono >= due-Slack {
			continue
		}
		at := time.Duration(tr.Events[end].T)
		first = &Violation{Property: StableLeadership, At: at, PIDs: []int{tr.Procs[p].PID}, Events: []int{ack, end},
			Detail: fmt.Sprintf("process %s's leader context ended by %s (%v on its clock), %v before its renew deadline (%v) after the call of its last write the store acknowledged (a %s at %s, %v on its clock), with no SIGTERM, no answer that its lease was lost and no death: the store backed the term, and its users were left without a leader for nothing",
				tr.ProcName(p), secs(at), mono, due-mono, rd, w.Store, secs(time.Duration(w.T)), time.Duration(w.CallMono()))}
	}
	return first
}

// endedTerm is a leader context that ended while its process lived
// (x), with the last write of its process p the store acknowledged while
// it was live (event ack) and the event at which it was seen done (end).
type endedTerm struct {
	x           trace.Interval
	p, ack, end int
}

// endedTerms returns the leader contexts of iv that ended while their
// process lived and followed a write the store acknowledged.
func endedTerms(tr *trace.Trace, iv []trace.Interval) []endedTerm {
	var out []endedTerm
	for _, x := range iv {
		if x.Open || x.EndedByDie {
			continue
		}
		t := endedTerm{x: x, p: x.Proc, ack: -1}
		for i := min(x.LiveSteps, len(tr.Events)) - 1; i >= 0; i-- {
			if e := &tr.Events[i]; int(e.Proc) == t.p && e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes() {
				t.ack = i
				break
			}
		}
		if t.end = stoppedEventFrom(tr, t.p, x.Seen, x.LiveSteps); t.ack >= 0 && t.end >= 0 {
			out = append(out, t)
		}
	}
	return out
}

// procConfig is process p's lease configuration: its own, in a rolling
// change of intervals, or the run's.
func procConfig(tr *trace.Trace, p int) lease.Config {
	if l := tr.Procs[p].Lease; l.LeaseDuration != 0 {
		return l
	}
	return tr.Run.Lease
}

// stoppedEventFrom returns the index of the EvStopped of process p at or
// after instant t, searching from index from on, or -1.
func stoppedEventFrom(tr *trace.Trace, p int, t int64, from int) int {
	for i := max(from, 0); i < len(tr.Events); i++ {
		if e := &tr.Events[i]; e.Kind == trace.EvStopped && int(e.Proc) == p && e.T >= t {
			return i
		}
	}
	return -1
}

// excused reports whether something between events from (process p's
// acknowledged write) and to gave p a reason to end its term: its SIGTERM
// handler ran, or a store operation of its answered that the lease was
// lost: a conflict (another write in the record's place: a takeover; a
// server that lost its data answers a renewal so too), or a read that
// shows another holder's record, or a later version than the one it
// wrote (a renewal whose outcome it could not know, then a read: the
// file store says unknown, not conflict, when a takeover came between; a
// review found the rule blaming that step-down). On a store whose writes
// carry a nonce (lease.Claims.NamedWrites), a conflict or a later version
// that only p's own writes of unknown outcome can have made is none
// (ownDoing).
func excused(tr *trace.Trace, v lease.Variant, p, from, to int) bool {
	own := tr.Events[from].Record()
	for i := from; i <= to; i++ {
		e := &tr.Events[i]
		if int(e.Proc) != p {
			continue
		}
		switch {
		case e.Kind == trace.EvSignal && e.Op != trace.OpSigaction:
			return true
		case e.Kind == trace.EvStore && e.Res == trace.ResConflict:
			// (Only a conflict that p could tell for its own: its read
			// after it answered. One whose read failed is a lost lease as
			// far as p can know, and a server that lost its data answers
			// so too: stepping down is then the only safe answer.)
			if !v.Claims.NamedWrites || !ownDoing(tr, p, from, i) || !readAnswered(tr, p, i, to) {
				return true
			}
		case e.Kind == trace.EvStore && e.Store == trace.StoreRead && e.Res == trace.ResOK:
			if r := e.Record(); r.Holder != own.Holder || r.Version > own.Version && (!v.Claims.NamedWrites || !ownDoing(tr, p, from, i)) {
				return true
			}
		}
	}
	return false
}

// ownDoing reports whether whatever changed the record between events
// from (process p's acknowledged write) and to can only be p's own writes
// whose outcome it could not know (on a store whose writes carry a nonce
// by which a writer tells its own: lease.Claims.NamedWrites): p made such
// a write (its outcome unknown), no other process called a write or a
// release since from or had one in flight then, and no server expired or
// lost the record, nor a power loss struck. Then a conflict, or a read of
// a later version, is p's own renewal taking effect, not a lost lease,
// and is no reason to step down (a probe's mutant that forgot such a
// renewal's nonce stepped down at the next renewal's conflict and waited
// out its own record: 9 s without a leader after one lost reply, which
// this rule excused).
func ownDoing(tr *trace.Trace, p, from, to int) bool {
	if from >= to || othersInFlight(tr, p, from) {
		return false // (another's write or release, called before and not returned)
	}
	unknown := false
	for i := from + 1; i < to && i < len(tr.Events); i++ {
		e := &tr.Events[i]
		if e.Kind == trace.EvFault && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power) ||
			e.Kind == trace.EvStore && e.Store == trace.StoreExpire {
			return false
		}
		if e.Proc < 0 || !(e.Store.Writes() || e.Store == trace.StoreRelease) {
			continue
		}
		switch {
		case int(e.Proc) != p && e.Kind == trace.EvStoreCall:
			return false // another's write or release: it may be what the store holds
		case int(e.Proc) == p && e.Kind == trace.EvStore && e.Res == trace.ResUnknown:
			unknown = true
		}
	}
	return unknown
}

// othersInFlight reports whether a process other than p had a write or a
// release called and not returned by event end (inclusive).
func othersInFlight(tr *trace.Trace, p, end int) bool {
	inflight := make([]int, len(tr.Procs))
	for i := 0; i <= end && i < len(tr.Events); i++ {
		e := &tr.Events[i]
		if e.Proc < 0 || int(e.Proc) == p || !(e.Store.Writes() || e.Store == trace.StoreRelease) {
			continue
		}
		switch e.Kind {
		case trace.EvStoreCall:
			inflight[e.Proc]++
		case trace.EvStore:
			inflight[e.Proc] = max(inflight[e.Proc]-1, 0)
		}
	}
	for _, n := range inflight {
		if n > 0 {
			return true
		}
	}
	return false
}

// readAnswered reports whether process p's next store read after event
// from (up to event to) answered with a record.
func readAnswered(tr *trace.Trace, p, from, to int) bool {
	for i := from + 1; i <= to && i < len(tr.Events); i++ {
		if e := &tr.Events[i]; int(e.Proc) == p && e.Kind == trace.EvStore && e.Store == trace.StoreRead {
			return e.Res == trace.ResOK
		}
	}
	return false
}

// driftBeyond returns the index of the first event at which a clock
// drifted beyond the drift bound its algorithm is configured for, or the
// number of events: from then on a variant need not keep its terms
// (stable-leadership's quiet ends there for good), and a fast clock lets
// another process take over early.
func driftBeyond(tr *trace.Trace) int {
	for j := range tr.Events {
		if e := &tr.Events[j]; e.Kind == trace.EvFault && e.FaultKind() == trace.Drift && !e.Missed() && abs(e.DriftPPM()) > driftBound(tr, e.Proc) {
			return j
		}
	}
	return len(tr.Events)
}

// monoAtLatest is the latest process p's monotonic clock can have read at
// event i: its first reading from then on, or, with none, its last one
// before plus twice the time since (no clock runs twice as fast).
func monoAtLatest(tr *trace.Trace, p, i int) time.Duration {
	t := tr.Events[i].T
	for j := i; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockMono {
			return time.Duration(e.N)
		}
	}
	for j := i - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockMono {
			return time.Duration(e.N + 2*(t-e.T))
		}
	}
	return time.Duration(1<<63 - 1) // never read: nothing to judge
}
