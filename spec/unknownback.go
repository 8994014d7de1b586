package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkUnknownTakenBack reports, for a variant with a local deadline
// whose writes carry a nonce by which a writer tells its own
// (lease.Claims.NamedWrites), the first process whose create or takeover
// of unknown outcome (its reply lost: an error after the store took it)
// made the store's record, and which did not take that record as its own
// in time. The record names it and nobody else holds the lease: every
// other process waits it out, a lease, while its writer can lead at once,
// and must, within checkOwnTakenBack's bound (a back-off and a hand-over
// of its running time since the write returned, since the last stretch
// of failing writes ended, and since its last failed attempt). That the
// write took effect is read from outside the process: a read, by anyone,
// begun after it returned, shows a record of its PID newer than any the
// store had shown, with no other process's write or release called or in
// flight since it was called, and no expiry, loss of the server's data or
// power loss. (A probe's reference that forgot such a write's nonce
// waited its own record out, a lease without a leader after one lost
// reply, on every server variant; no-wedge and failover-bound excuse a
// lease after a failed call, and this property's settle did too.)
func checkUnknownTakenBack(tr *trace.Trace, v lease.Variant) *Violation {
	if !v.LocalDeadline || !v.Claims.NamedWrites || tr.Recorded || tr.Run.SharedPIDs {
		return nil
	}
	var run [][]span
	var first *Violation
	beyond := driftBeyond(tr)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.EvStore || e.Proc < 0 || e.Res != trace.ResUnknown || e.Store != trace.StoreCreate && e.Store != trace.StoreTakeover {
			continue
		}
		p := int(e.Proc)
		k := madeByUnknown(tr, p, i, v.Claims.WallExpiry)
		if k < 0 {
			continue
		}
		rec := tr.Events[k].Record()
		until, seenBy := ownRecordHeld(tr, p, rec, i)
		if until < 0 || seenBy >= beyond {
			continue
		}
		if run == nil {
			run = running(tr)
		}
		from := max(e.T, lastStretchEnd(tr, p, until), lastFailure(tr, p, i, seenBy))
		cfg := procConfig(tr, p)
		bound := waitBound(tr, min(cfg.WatchInterval, cfg.LeaseDuration))
		ran := coveredBy(run[p], from, until)
		if ran <= bound || first != nil && time.Duration(until) >= first.At {
			continue
		}
		how := "read then by process " + tr.ProcName(int(tr.Events[seenBy].Proc))
		if s := &tr.Events[seenBy]; int(s.Proc) == p && s.Kind == trace.EvStore && s.Store.Writes() {
			how = "when it called the write that took it over"
		}
		first = &Violation{Property: StableLeadership, At: time.Duration(until), PIDs: []int{tr.Procs[p].PID}, Events: []int{i, k, seenBy},
			Detail: fmt.Sprintf("process %s's %s at %s returned an unknown outcome but took effect (version %d, read at %s), and it had not led on that record by %s (%s), %v of its running time after it could have (bound %v: a back-off and a hand-over): the record named it, nobody else held the lease, and nobody led",
				tr.ProcName(p), e.Store, secs(time.Duration(e.T)), rec.Version, secs(time.Duration(tr.Events[k].T)), secs(time.Duration(until)), how, time.Duration(ran), time.Duration(bound))}
	}
	return first
}

// madeByUnknown returns the index of the first successful read, by any
// process, begun after process p's write of unknown outcome returned
// (event i), if it shows the record that write made: one of p's PID,
// newer than every record the store had shown before the write was
// called, with no other process's write or release called or in flight
// since then and no expiry, loss or power loss in between. -1 otherwise
// (the write did not take effect, or something else may have made what
// the read shows).
//
// vanishing says that the server's reads name the record it last
// expired (Claims.WallExpiry: Redis's and the SQL store's, lease.Vanishing):
// a create after a read that found it gone is its writer's own at the
// version next to that record's (the reference's createdAfter).
func madeByUnknown(tr *trace.Trace, p, i int, vanishing bool) int {
	act := tr.Events[i].Act
	call := -1
	for j := i - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Act == act && e.Kind == trace.EvStoreCall {
			call = j
			break
		}
	}
	if call < 0 {
		return -1
	}
	// What the process knew when it wrote: its last read's answer. Its
	// write is its own at the version next to the one that read showed:
	// a create's, after a read that showed no record or a released one
	// (version 1 after none); a takeover's, after a read of the record it
	// took over. At any other version a write may have come between, over
	// a record dropped early whose holder may still lead, and the process
	// cannot tell (the reference's unknownCreate). After a read that
	// found the record expired, on a server whose reads say which
	// (vanishing), the version next to the expired one's: the trace
	// keeps no record for a read that found none, and version 1 left
	// every create but a fresh server's first unjudged (a review: a
	// reference that forgot a create made after waiting a dead holder
	// out waited its own record out, a lease without a leader, unseen).
	// A read that failed, or
	// a create after a read that showed a live record (woken by a notice
	// of its release, which may be stale), tells it nothing: not judged.
	want := int64(-1)
	for j := call - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvStore && e.Store == trace.StoreRead {
			free := e.Res == trace.ResNotFound || e.Res == trace.ResOK && e.Record().Holder == 0
			if tr.Events[i].Store == trace.StoreTakeover && e.Res == trace.ResOK || tr.Events[i].Store == trace.StoreCreate && free {
				want = e.Record().Version + 1
				if vanishing && e.Res == trace.ResNotFound {
					want = expiredBefore(tr, j) + 1
				}
			}
			break
		}
	}
	if want < 0 {
		return -1
	}
	if othersInFlight(tr, p, call) {
		return -1 // another's write, called before and not returned
	}
	var newest int64 // the newest version the store had shown
	for j := range call {
		if e := &tr.Events[j]; e.Kind == trace.EvStore && (e.Res == trace.ResOK || e.Store == trace.StoreExpire) {
			newest = max(newest, e.Record().Version)
		}
	}
	began := make([][]bool, len(tr.Procs)) // reads called after i, by activity
	for q := range began {
		began[q] = make([]bool, len(tr.Acts[q]))
	}
	pid := int64(tr.Procs[p].PID)
	for j := call + 1; j < len(tr.Events); j++ {
		e := &tr.Events[j]
		switch {
		case e.Kind == trace.EvFault && !e.Missed() && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power),
			e.Kind == trace.EvStore && e.Store == trace.StoreExpire,
			e.Kind == trace.EvStore && e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease),
			e.Kind == trace.EvStoreCall && int(e.Proc) != p && e.Proc >= 0 && (e.Store.Writes() || e.Store == trace.StoreRelease):
			return -1
		case e.Kind == trace.EvStoreCall && e.Store == trace.StoreRead && j > i && e.Proc >= 0 && int(e.Act) < len(began[e.Proc]):
			began[e.Proc][e.Act] = true
		case e.Kind == trace.EvStore && e.Store == trace.StoreRead && e.Proc >= 0 && int(e.Act) < len(began[e.Proc]) && began[e.Proc][e.Act]:
			if e.Res != trace.ResOK {
				began[e.Proc][e.Act] = false
				continue
			}
			if r := e.Record(); r.Holder == pid && r.Version > newest && r.Version == want {
				return j
			}
			return -1
		}
	}
	return -1
}

// expiredBefore is the version of the record whose expiry (a StoreExpire)
// is the last change to the server's record before event j, or 0 when
// the last is none, or a write or release that took effect, or a loss
// of the server's data or power.
func expiredBefore(tr *trace.Trace, j int) int64 {
	for k := j - 1; k >= 0; k-- {
		switch e := &tr.Events[k]; {
		case e.Kind == trace.EvStore && e.Store == trace.StoreExpire:
			return e.Record().Version
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease),
			e.Kind == trace.EvFault && !e.Missed() && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power):
			return 0
		}
	}
	return 0
}
