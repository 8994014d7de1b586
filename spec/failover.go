package spec

import (
	"fmt"
	"slices"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// FailoverCounts reports how many SIGKILLs and SIGTERMs hit a leader in
// the run, and on how many of them failover-bound was judged: the bound
// ran out within the run, no other fault and no stretch came before it,
// and some other process was running throughout (the rest tell nothing).
func FailoverCounts(tr *trace.Trace) (judged, signals int) {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		return 0, 0
	}
	failoverWindows(tr, tr.Leadership(), runBounds(v, tr), eligible(tr), func(j bool, _ *Violation) bool {
		signals++
		if j {
			judged++
		}
		return true
	})
	return judged, signals
}

// failoverWindows calls each, in order, for every SIGKILL or SIGTERM of a
// leader, with whether failover-bound judges it and the violation if it
// is broken there; it stops when each returns false.
func failoverWindows(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span, each func(judged bool, v *Violation) bool) {
	st := tr.Stretches()
	notified, wall := false, false
	if v, err := lease.LookupVariant(tr.Run.Variant); err == nil {
		notified, wall = v.Claims.Handover == lease.Notified, v.Claims.WallExpiry
	}
	for i := range st {
		if st[i].Kind == trace.DiskFull || st[i].Kind == trace.DiskEIO {
			end := st[i].To + int64(longestWatch(tr))
			if notified {
				// Watchers woken by every change learn that the disk works
				// again from the first write that succeeds after it (a
				// version nobody had seen: their back-off has no cause
				// left), within a hand-over's bound; only until then is a
				// waiter still asleep in its back-off excused. (A review
				// found a reference whose back-off outlived the new
				// version passed: the whole watch interval was excused.)
				if w, ok := firstWriteAfter(tr, st[i].To); ok {
					end = min(end, w+int64(b.Term))
				}
			}
			st[i].To = end
		}
	}
	// A window that meets an outage of the store's member is not judged
	// either: a SIGTERMed leader's release, or a successor's acquisition,
	// waits for the store, as for a full disk. (No-wedge still judges the
	// spans within and after it: its clock restarts at the outage's start
	// and end. Found by TestTortureEtcdCluster: a leader SIGTERMed while
	// the raft leader member was stopped could not release, and its
	// successor waited out the lease.)
	st = append(st, tr.MemberOutages()...)
	// Nor one that meets the aftermath of a loss of the server's data
	// (lossAftermath), or of a step of the wall clock that a server
	// expires records on (Claims.WallExpiry): the step may have dropped
	// the live record early, and the watchers wait out what they saw (a
	// leader SIGTERMed after a step had dropped its record could not
	// release it, and its successor waited out its lease).
	l := losses(tr)
	if wall {
		l = append(l, jumps(tr)...)
	}
	slow, _ := envelope(tr)
	after := int64(lossAftermath(slow))
	for _, i := range l {
		t := tr.Events[i].T
		st = append(st, trace.Stretch{Kind: trace.Lose, From: t, To: t + after, Proc: -1})
	}
	if wall {
		// Nor, where a server may drop a live record, one within that
		// long of a read that found the record the server had last
		// expired, not released: its reader cannot know whether its
		// holder still leads (a wall clock that stepped, an eviction),
		// and waits it out, a lease from when it saw it (or from now, if
		// it never did), whatever it reads meanwhile, another's record
		// made and released included (lease.Vanishing; checks: a process
		// started after a power loss found the dead leader's expired
		// record, and a SIGTERMed leader's release 8 s later was not
		// taken over at once; a watcher that saw that record after the
		// restart waited out its lease past another's release).
		for _, t := range readsAfterExpiry(tr) {
			st = append(st, trace.Stretch{Kind: trace.Lose, From: t, To: t + after, Proc: -1})
		}
	}
	for i, e := range tr.Events {
		if e.Kind != trace.EvFault || e.Proc < 0 || e.Missed() {
			continue
		}
		kind := e.FaultKind()
		if kind != trace.Kill && kind != trace.Term {
			continue
		}
		victim := int(e.Proc)
		role := "leader"
		if !leadingAt(iv, victim, e.T) {
			// The store's holder, whatever its user was told: its
			// successors wait for what the store holds.
			h := holding(tr, victim, i, kind == trace.Term)
			if h == holdNone {
				continue
			}
			role = holdRole[h]
		}
		bound, name := b.Kill, "SIGKILL"
		from := e.T
		if kind == trace.Term {
			bound, name = b.Term, "SIGTERM"
			var ok bool
			var at int
			h := holdNone
			if from, at, ok = deliveredAt(tr, i); ok && !leadingAt(iv, victim, from) {
				h = holding(tr, victim, at, true)
			}
			if !ok || !leadingAt(iv, victim, from) && h == holdNone {
				// Sent to a stopped process never continued, or neither
				// leading nor holding when it could act on the signal.
				if !each(false, nil) {
					return
				}
				continue
			}
			role = "leader"
			if h != holdNone {
				role = holdRole[h]
			}
			if h == holdStale {
				bound = b.Kill // (its lease must expire)
			}
		}
		deadline := from + int64(bound)
		if t, ok := firstNewLeader(iv, victim, e.T, deadline); ok && !faultIn(tr, i, t) && !meets(st, e.T, t) {
			// A successor came within the bound before anything else
			// happened: judged, and held.
			if !each(true, nil) {
				return
			}
			continue
		}
		if deadline > int64(tr.End) || faultIn(tr, i, deadline) || meets(st, e.T, deadline) {
			// Too late to tell, or another fault (or a stretch) restarted
			// the clock.
			if !each(false, nil) {
				return
			}
			continue
		}
		if newLeaderIn(iv, victim, e.T, deadline) {
			if !each(true, nil) {
				return
			}
			continue
		}
		var v *Violation
		for p, spans := range el {
			if p == victim || !covers(spans, from, deadline) {
				continue
			}
			delivered := ""
			if from != e.T {
				delivered = fmt.Sprintf(" (delivered at its SIGCONT at %s)", secs(time.Duration(from)))
			}
			v = &Violation{Property: FailoverBound, At: time.Duration(deadline),
				PIDs: []int{tr.Procs[victim].PID, tr.Procs[p].PID}, Events: []int{i},
				Detail: fmt.Sprintf("%s of %s %s at %s%s: no new leader within %v although process %s was running",
					name, role, tr.ProcName(victim), secs(time.Duration(e.T)), delivered, bound, tr.ProcName(p))}
			break
		}
		if !each(v != nil, v) {
			return
		}
	}
}

// deliveredAt returns when the SIGTERM of event i reached its process,
// and the event then (i, or its SIGCONT): at once, or, if the process was
// stopped, at its SIGCONT (the simulator holds the signal until then, as
// the kernel does). ok is false if the process was never continued.
func deliveredAt(tr *trace.Trace, i int) (t int64, at int, ok bool) {
	p := tr.Events[i].Proc
	stopped := false
	for _, e := range tr.Events[:i] {
		if e.Proc == p && e.Kind == trace.EvFault && !e.Missed() {
			switch e.FaultKind() {
			case trace.Stop, trace.Suspend:
				stopped = true
			case trace.Cont:
				stopped = false
			}
		}
	}
	if !stopped {
		return tr.Events[i].T, i, true
	}
	for j := i + 1; j < len(tr.Events); j++ {
		e := &tr.Events[j]
		if e.Proc == p && e.Kind == trace.EvExit {
			return 0, 0, false
		}
		if e.Proc == p && e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
			return e.T, j, true
		}
	}
	return 0, 0, false
}

// holdRole names a victim by its hold, in a violation's detail.
var holdRole = [...]string{holdFresh: "the store's holder (its acquisition's term not handed to its user)", holdStale: "the store's holder (its term over: its lease must expire)"}

// A victim's hold on the store, when its user did not hold a live term.
type hold uint8

const (
	holdNone  hold = iota // not the store's holder (or not known)
	holdFresh             // holds what it acquired a moment before: it must give it back
	holdStale             // holds a record of a term that is over: its lease must expire
)

// holding tells whether process p was the store's holder when the signal
// of event at reached it, as the store's returns tell, whatever its user
// had been told: its own create, renewal or takeover was the last write to
// return ok before, with no release, expiry or loss since; or, when
// inFlight (a SIGTERM: the process goes on to its handler), a write it
// had called and that had not yet returned returns ok after. A write of
// unknown outcome (an I/O error part-way, a process killed in it) leaves
// the holder unknown: not judged.
//
// The hold is fresh when that write was an acquisition (a create or a
// takeover) called less than half the process's local deadline
// (expectedDeadline) before the signal reached it: its term cannot
// have run out, so a SIGTERMed process must release the lease as a leader
// does (a probe's reference obeyed a SIGTERM that landed in its acquiring
// write, never led, and left the record to expire). Any other hold is
// stale: a term already over (its deadline passed in a pause, a renewal
// that came back too late), which a process need not release (the
// reference releases it by compare-and-set when the record it saw is its
// own last write, since 2026-12-07; its term's release does not write
// after the deadline), so it is held to the SIGKILL bound: its successors
// may wait out the lease. (That release of a late write's record is judged
// on the graceful exit instead: checkGivesBack, leftLate.)
func holding(tr *trace.Trace, p, at int, inFlight bool) hold {
	cfg := procConfig(tr, p)
	window := int64(expectedDeadline(cfg) / 2)
	signal := tr.Events[at].T
	kind := func(op trace.StoreOp, called int64) hold {
		if (op == trace.StoreCreate || op == trace.StoreTakeover) && signal-called < window {
			return holdFresh
		}
		return holdStale
	}
	holder, h := -1, holdNone // (-1: none, or not known)
	type call struct {
		act int16
		t   int64
	}
	var calls []call // p's calls in flight, by activity, with when each was called
	callAt := func(act int16, take bool) (int64, bool) {
		for k, c := range calls {
			if c.act == act {
				if take {
					calls = slices.Delete(calls, k, k+1)
				}
				return c.t, true
			}
		}
		return 0, false
	}
	for j := range at {
		e := &tr.Events[j]
		switch {
		case e.Kind == trace.EvFault && e.FaultKind() == trace.Lose && !e.Missed():
			holder = -1
		case e.Kind == trace.EvStoreCall && int(e.Proc) == p:
			calls = append(calls, call{e.Act, e.T})
		case e.Kind != trace.EvStore:
		case e.Store == trace.StoreExpire || e.Store == trace.StoreRelease && e.Res == trace.ResOK:
			holder = -1
		case e.Store.Writes() && e.Res == trace.ResOK:
			holder = int(e.Proc)
			if holder == p {
				t, _ := callAt(e.Act, false)
				h = kind(e.Store, t)
			}
		case (e.Store.Writes() || e.Store == trace.StoreRelease) && e.Res == trace.ResUnknown:
			holder = -1
		}
		if e.Kind == trace.EvStore && int(e.Proc) == p {
			callAt(e.Act, true)
		}
	}
	if holder == p {
		return h
	}
	if !inFlight {
		return holdNone
	}
	for j := at; j < len(tr.Events) && len(calls) > 0; j++ {
		e := &tr.Events[j]
		if int(e.Proc) != p || e.Kind != trace.EvStore {
			continue
		}
		if t, ok := callAt(e.Act, true); ok && e.Store.Writes() && e.Res == trace.ResOK {
			return kind(e.Store, t)
		}
	}
	return holdNone
}

// firstNewLeader returns when the first process other than victim led in
// (from, to].
func firstNewLeader(iv []trace.Interval, victim int, from, to int64) (int64, bool) {
	first, ok := int64(0), false
	for _, x := range iv {
		if x.Proc != victim && x.From <= to && x.To > from {
			t := max(x.From, from)
			if !ok || t < first {
				first, ok = t, true
			}
		}
	}
	return first, ok
}

// newLeaderIn reports whether a process other than victim began leading in
// (from, to], or was already leading at from (then the victim was not the
// only leader, which exclusive-leadership reports).
func newLeaderIn(iv []trace.Interval, victim int, from, to int64) bool {
	for _, x := range iv {
		if x.Proc != victim && x.From <= to && x.To > from {
			return true
		}
	}
	return false
}

// firstWriteAfter is the instant of the first store write (a create,
// renewal, takeover or release) that succeeded at or after t.
func firstWriteAfter(tr *trace.Trace, t int64) (int64, bool) {
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T >= t && e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store != trace.StoreRead && e.Store != trace.StoreExpire {
			return e.T, true
		}
	}
	return 0, false
}

// readsAfterExpiry returns the instants of the reads that found no
// record where the server's last change had been an expiry (StoreExpire),
// not a release or a write: each process's first, and the first after
// each expiry.
func readsAfterExpiry(tr *trace.Trace) []int64 {
	var out []int64
	read := make([]bool, len(tr.Procs)) // read since the last expiry
	expired := false                    // the server's last change was an expiry
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.EvStore {
			continue
		}
		switch {
		case e.Store == trace.StoreExpire:
			expired = true
			clear(read)
		case e.Store != trace.StoreRead && e.Res == trace.ResOK:
			expired = false
		case e.Store == trace.StoreRead && e.Proc >= 0 && !read[e.Proc] && expired && e.Res == trace.ResNotFound:
			read[e.Proc] = true
			out = append(out, e.T)
		}
	}
	return out
}
