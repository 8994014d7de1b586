package spec

import (
	"fmt"
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
		if !leadingAt(iv, victim, e.T) {
			continue
		}
		bound, name := b.Kill, "SIGKILL"
		from := e.T
		if kind == trace.Term {
			bound, name = b.Term, "SIGTERM"
			var ok bool
			if from, ok = deliveredAt(tr, i); !ok || !leadingAt(iv, victim, from) {
				// Sent to a stopped process never continued, or no longer
				// leading when it could act on the signal.
				if !each(false, nil) {
					return
				}
				continue
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
				Detail: fmt.Sprintf("%s of leader %s at %s%s: no new leader within %v although process %s was running",
					name, tr.ProcName(victim), secs(time.Duration(e.T)), delivered, bound, tr.ProcName(p))}
			break
		}
		if !each(v != nil, v) {
			return
		}
	}
}

// deliveredAt returns when the SIGTERM of event i reached its process: at
// once, or, if the process was stopped, at its SIGCONT (the simulator
// holds the signal until then, as the kernel does). ok is false if the
// process was never continued.
func deliveredAt(tr *trace.Trace, i int) (t int64, ok bool) {
	p := tr.Events[i].Proc
	stopped := false
	for _, e := range tr.Events[:i] {
		if e.Proc == p && e.Kind == trace.EvFault && !e.Missed() {
			switch e.FaultKind() {
			case trace.Stop:
				stopped = true
			case trace.Cont:
				stopped = false
			}
		}
	}
	if !stopped {
		return tr.Events[i].T, true
	}
	for _, e := range tr.Events[i+1:] {
		if e.Proc == p && e.Kind == trace.EvExit {
			return 0, false
		}
		if e.Proc == p && e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
			return e.T, true
		}
	}
	return 0, false
}

// newLeaderIn reports whether a process other than victim began leading in
// (from, to], or was already leading at from (then the victim was not the
// only leader, which exclusive-leadership reports).
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
