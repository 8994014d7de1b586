package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// checkGivesBack is failover-bound's rule on a graceful exit, for a
// variant with a local deadline: a leader (its user told so since its
// last acquisition) that ends by its own exit (its SIGTERM's) while its
// local deadline has not passed, leaving its term's record in the store
// (a read begun after the exit, by anyone, returns the record of its last
// acknowledged write, or a later version of its term: a renewal whose
// outcome it could not know), must have tried to release it and met at
// least two failed attempts since its first release call (a release that
// did not take, a call whose outcome is not known, an unreadable record):
// one failure is no store that keeps failing, and its successors wait out
// the lease for nothing. (A probe's reference whose release gave up after
// its first error, and logged "Lease released", passed every property:
// failover-bound excuses a window with a fault in it, and the release's
// I/O error is one.) Past that deadline it must still have made a
// release call, one at least, if the record left is its last acknowledged
// write itself: a compare-and-set of its own last write frees only a
// record nobody else wrote (a review's, 2026-12-07: a
// leader paused past its deadline with a SIGTERM pending left its record
// to expire, and the rule then judged no exit past the deadline).
//
// The deadline is the checker's own: its renew deadline
// (expectedDeadline) after that write's call, on the process's own
// monotonic clock, which runs at most the run's largest drift fast; an
// exit within Slack of it is judged as one past it, and none is judged
// whose record a write
// acknowledged after the deadline it would have extended made (a renewal
// that came back after its term lapsed in a pause: the term is over, and
// its record expires as a SIGKILLed leader's does; the first version
// blamed the correct reference there). Not the clock's last reading
// before the exit: the deadline's timer reads it unrecorded, and a
// process paused past its deadline may find its term over without
// reading the clock again. Not judged after a loss of the server's data
// or a power loss, nor on a server that expires records on its wall clock
// after a step of it: a record held through a lost lease's end (the
// reference's holdLost) is one its maker must not give back. Recorded
// traces are not judged.
//
// And a process whose last acknowledged write came back past its
// deadline (a pause inside it) and that exits with that record still in
// the store must have made a release call since (leftLate): the term is
// over, but the record is its own last write, nobody else's. Unless that
// write created it over a record the server dropped without a release
// and the process never led from it: a record held through a lost
// lease's end, late or not (a search with -faults kill,term,suspend
// found the first version of this rule blaming the reference there:
// TestGivesBackNotOwedOverALostLease).
func checkGivesBack(tr *trace.Trace) *Violation {
	if tr.Recorded {
		return nil
	}
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil || !v.LocalDeadline {
		return nil
	}
	for x := range tr.Events {
		e := &tr.Events[x]
		if e.Kind == trace.EvFault && !e.Missed() && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power || e.FaultKind() == trace.Jump && v.Claims.WallExpiry) {
			return nil // (from here on; a violation before was returned)
		}
		if e.Kind != trace.EvExit || e.Proc < 0 || e.ExitCode() < 0 {
			continue
		}
		if vi := gaveUp(tr, int(e.Proc), x); vi != nil {
			return vi
		}
	}
	return nil
}

// gaveUp judges process p's exit, event x, by checkGivesBack's rule.
func gaveUp(tr *trace.Trace, p, x int) *Violation {
	// The true time at which its clock may first read the renew deadline
	// after a write called at c (less Slack).
	d, rho := expectedDeadline(procConfig(tr, p)), float64(min(fastestDrift(tr), 900_000))/1e6
	reach := func(c int64) int64 { return c + int64(float64(d-Slack)/(1+rho)) }
	// The latest it may read it (plus Slack): a write acknowledged after
	// that is surely late.
	past := func(c int64) int64 { return c + int64(float64(d+Slack)/(1-rho)) }
	ack, release, failures := -1, -1, 0
	// late: its last acknowledged write came back past the deadline it
	// would have begun or extended (an acquisition's own; a renewal's of a
	// term its user was told of, not of a record held through a lost
	// lease's end).
	late := false
	live, deadline := false, int64(0) // whether its term may be live, and until when
	var over int64                    // when its term is surely over
	// Whether its user was told it leads since its last acquisition: a
	// record made and held, not led from (the reference's holdLost, over
	// a lease its server may have dropped unseen), is one its maker must
	// not give back.
	started := false
	// overLost: its last acknowledged write is a create or a takeover
	// that replaced a record the server dropped without a release (an
	// expiry between its call and its answer): a lease its holder may
	// still hold, which the reference holds its record through
	// (holdLost) and must not give back, late or not.
	overLost, expired := false, -1
	callAt := make([]int, len(tr.Acts[p])) // each activity's last store call's index
	for i := range x {
		e := &tr.Events[i]
		if e.Kind == trace.EvStore && e.Store == trace.StoreExpire {
			expired = i
		}
		if int(e.Proc) != p || int(e.Act) >= len(callAt) {
			continue
		}
		switch {
		case e.Kind == trace.EvStarted:
			started = true
		case e.Kind == trace.EvStoreCall:
			callAt[e.Act] = i
			if e.Store == trace.StoreRelease && release < 0 {
				release = i
			}
		case e.Kind != trace.EvStore:
		case e.Store.Writes() && e.Res == trace.ResOK:
			ack, release, failures = i, -1, 0
			// A write acknowledged after the deadline it would extend (a
			// renewal's: the term's; an acquisition's: its own) begins or
			// extends no term: its record is left to expire.
			called := tr.Events[callAt[e.Act]].T
			prev, end := deadline, over
			if e.Store != trace.StoreRenew {
				live, prev, end, started = true, reach(called), past(called), false
				overLost = expired > callAt[e.Act]
			}
			late = e.T >= end && (e.Store != trace.StoreRenew || started)
			live, deadline, over = live && e.T < prev, reach(called), past(called)
		case release >= 0 && (e.Res == trace.ResUnknown || e.Res == trace.ResCorrupt || e.Store == trace.StoreRelease && e.Res != trace.ResOK):
			failures++ // (a release that did not take, or a call whose outcome is not known)
		}
	}
	exit := tr.Events[x].T
	if ack >= 0 && late && release < 0 && !(overLost && !started) {
		return leftLate(tr, p, ack, x)
	}
	if ack < 0 || !live || !started || release >= 0 && (failures >= 2 || exit >= deadline) {
		return nil // (a term over: the lease expires, as after a SIGKILL)
	}
	rec := tr.Events[ack].Record()
	held, by := termRecordHeld(tr, rec, x)
	if held < 0 {
		return nil
	}
	acked := rec
	rec = tr.Events[by].Record()
	tried := "without a release call"
	if release >= 0 {
		tried = fmt.Sprintf("after %d failed attempt(s) since its first release call", failures)
	}
	if exit >= deadline {
		if rec != acked {
			// A later version of its term (a renewal whose outcome it
			// could not know), which a store naming no writes lets it
			// tell from another's once its term is over only by its
			// term's epoch: not owed (a review, helper-103: the first
			// version of this rule blamed the reference of then, which
			// left it to expire; spec.TestGivesBackPastDeadlineOwnRenewalUnknown.
			// The reference tells it by epoch since 2026-12-07's
			// evening, ownRecord, and so gives it back).
			return nil
		}
		return &Violation{Property: FailoverBound, At: time.Duration(held), PIDs: []int{tr.Procs[p].PID}, Events: []int{ack, x, by},
			Detail: fmt.Sprintf("process %s exited at %s, past its local deadline, without a release call, leaving its own record (version %d) in the store: process %s read it at %s. A compare-and-set release of its own last write, late or not, frees only a record nobody else wrote: its successors wait out the lease",
				tr.ProcName(p), secs(time.Duration(exit)), rec.Version, tr.ProcName(int(tr.Events[by].Proc)), secs(time.Duration(held)))}
	}
	return &Violation{Property: FailoverBound, At: time.Duration(held), PIDs: []int{tr.Procs[p].PID}, Events: []int{ack, x, by},
		Detail: fmt.Sprintf("process %s exited at %s, at least %v before its local deadline, %s, leaving its own record (version %d) in the store: process %s read it at %s. A holder told to stop gives its record back, and one failure is no reason to stop trying: its successors wait out the lease",
			tr.ProcName(p), secs(time.Duration(exit)), time.Duration(deadline-exit), tried, rec.Version, tr.ProcName(int(tr.Events[by].Proc)), secs(time.Duration(held)))}
}

// leftLate judges process p's exit, event x, whose last acknowledged
// write, event ack, came back past its deadline, and which made no release
// call since: the record is its own last write, which nobody else holds,
// and a compare-and-set release of it hands over at once, whoever waits
// (the reference's rule 6, since 2026-12-07); left in the store (a read
// after the exit returns it unchanged), its successors wait out a lease.
// (Reverting the reference's release of it passed 60,000 runs of every
// property: failover-bound holds such a stale holder to the SIGKILL
// bound, and excuses the window of the pause that made the write late.)
func leftLate(tr *trace.Trace, p, ack, x int) *Violation {
	rec := tr.Events[ack].Record()
	held, by := termRecordHeld(tr, rec, x)
	if held < 0 || tr.Events[by].Record() != rec {
		return nil
	}
	return &Violation{Property: FailoverBound, At: time.Duration(held), PIDs: []int{tr.Procs[p].PID}, Events: []int{ack, x, by},
		Detail: fmt.Sprintf("process %s exited at %s without a release call, leaving its own last write (version %d), acknowledged past its deadline, in the store: process %s read it at %s. Nobody else holds it, and a compare-and-set release hands over at once: its successors wait out the lease",
			tr.ProcName(p), secs(time.Duration(tr.Events[x].T)), rec.Version, tr.ProcName(int(tr.Events[by].Proc)), secs(time.Duration(held)))}
}

// termRecordHeld returns the instant of the first read, begun after event
// x, that returned the record of the term rec belongs to: rec itself, or
// a later version of the same holder and epoch (a renewal whose outcome
// its writer could not know, which took effect; an epoch is one term's,
// whoever shares the PID), and that read's index; -1, -1 when none did
// before something changed the record (a write or a release that took
// effect, a server's expiry, a loss of its data or of power).
func termRecordHeld(tr *trace.Trace, rec lease.Record, x int) (int64, int) {
	called := make([][]bool, len(tr.Procs)) // each activity's store call in flight began after x
	for q := range called {
		called[q] = make([]bool, len(tr.Acts[q]))
	}
	for i := x + 1; i < len(tr.Events); i++ {
		e := &tr.Events[i]
		switch {
		case e.Kind == trace.EvStoreCall && e.Proc >= 0 && int(e.Act) < len(called[e.Proc]):
			called[e.Proc][e.Act] = true
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && (e.Store.Writes() || e.Store == trace.StoreRelease),
			e.Kind == trace.EvStore && e.Store == trace.StoreExpire,
			e.Kind == trace.EvFault && !e.Missed() && (e.FaultKind() == trace.Lose || e.FaultKind() == trace.Power):
			return -1, -1
		case e.Kind == trace.EvStore && e.Store == trace.StoreRead && e.Res == trace.ResOK && e.Proc >= 0 && int(e.Act) < len(called[e.Proc]) && called[e.Proc][e.Act]:
			if r := e.Record(); r.Holder == rec.Holder && r.Epoch == rec.Epoch && r.Version >= rec.Version {
				return e.T, i
			}
		}
	}
	return -1, -1
}
