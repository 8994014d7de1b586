package lease

import (
	"context"
	"errors"
	"time"
)

// renewBackoff is the first pause after a write that failed with an I/O
// error; it doubles with every failure, up to the renew interval (a
// renewal) or the watch interval (a create or takeover).
const renewBackoff = 10 * time.Millisecond

// resign stops leading: the role is watcher again and the term's
// context is cancelled. The caller logs why, then calls stoppedLeading.
func (r *Reference) resign(cancel context.CancelFunc) {
	r.p.Role(RoleWatcher)
	cancel()
}

// stoppedLeading tells the callbacks that this process no longer leads.
func (r *Reference) stoppedLeading() {
	if f := r.cfg.Callbacks.OnStoppedLeading; f != nil {
		f()
	}
}

// shutdown ends a term whose elector's context has ended: it steps down
// (the user's context, a child of the elector's, is already done), then
// releases rec, the lease as last written.
func (r *Reference) shutdown(rec Record, term *Term, cancel context.CancelFunc) {
	r.p.Log(MsgShutdown, 0, 0)
	// Stop leading first: from here on nothing acts with this term, so the
	// release below can hand over at once.
	if r.mistake != mReleaseBeforeStepDown {
		r.resign(cancel)
		if r.mistake != mStoppedAfterRelease {
			r.stoppedLeading()
		}
	}
	r.release(rec, term)
	if r.mistake == mStoppedAfterRelease { // mutant: the user told after the release
		r.stoppedLeading()
	}
	if r.mistake == mReleaseBeforeStepDown { // mutant: released first, stepped down after
		r.resign(cancel)
		r.stoppedLeading()
	}
}

// release gives back cur, this process's lease, if it still is: a
// compare-and-set on the version it last wrote, so it can never delete a
// lease another process has taken over, and only while the term's local
// deadline has not passed.
func (r *Reference) release(cur Record, term *Term) {
	for range 3 {
		if !term.inTime() {
			// The stepping down (the user's OnStoppedLeading, a command
			// slow to stop) or a pause outlasted the term: the lease may
			// be someone else's by now, and nothing is read or retried.
			// But cur, if it is still there, is this process's own last
			// write, which nobody else holds: one compare-and-set release
			// of it hands over at once instead of a lease later, and one
			// that finds another's record changes nothing (as a watcher
			// does with its own last write, rule 6; a review, 2026-12-07:
			// a leader paused past its deadline with a SIGTERM pending
			// left it to expire).
			if r.mistake != mLateReleaseSkipped { // (mutant: left to expire)
				err := r.s.Release(cur)
				if err == nil {
					r.p.Log(MsgReleased, 0, 0)
					return
				}
				if !errors.Is(err, ErrConflict) {
					r.report("release", err)
				}
			}
			// Not "no longer ours": a conflict may be this term's own
			// renewal whose outcome it could not know (not read for). Nor
			// "released" when superseded: past the deadline the higher
			// version may be two writes of others since cur, its name
			// swept and linked again by this release (a review).
			r.p.Log(MsgRefReleaseLate, 0, 0)
			return
		}
		err := r.s.Release(cur)
		if err == nil || Superseded(err) {
			// Superseded: the released version was linked, and a higher
			// one was there by the listing after it: a watcher woken by
			// the release took over at once. (Not a version another
			// process had written and removed: that takes two writes by
			// others since cur, which no one makes before this term's
			// deadline.)
			r.p.Log(MsgReleased, 0, 0)
			return
		}
		r.report("release", err)
		if r.mistake == mReleaseGivesUp { // mutant: one error, and it says released
			r.p.Log(MsgReleased, 0, 0)
			return
		}
		if r.mistake == mReleaseErrorUnreported { // mutant: unreported, and given up
			r.p.Log(MsgRefReleaseFailed, 0, 0)
			return
		}
		// Any error: the release may not have reached the store (then
		// cur is still there: release it again), or someone wrote the
		// next version first: our own renewal whose outcome we could not
		// know (then release that), or a takeover (then there is nothing
		// of ours).
		rec, err := r.s.Read()
		if err != nil {
			// Neither the release nor a read worked (a server down or
			// hung): whether the lease is still ours is not known, and it
			// is left to expire (a probe saw this said as "no longer ours").
			r.report("read", err)
			r.p.Log(MsgRefReleaseFailed, 0, 0)
			return
		}
		// (cur itself, after an I/O error: a review found it skipped once
		// ownRenewal asked for a renewal's nonce, and the lease left to
		// expire instead of released.)
		if !sameRecord(rec, cur) && (r.mistake == mReleaseSkipsOwnRenewal || !r.ownRenewal(rec, term.Epoch())) { // (mutant: its own renewal taken for another's)
			r.p.Log(MsgRefReleaseSkipped, 0, 0)
			return
		}
		cur = rec
	}
}

// releaseOwn gives back rec, this process's own write, on a SIGTERM to a
// process that is not leading, and reports whether it logged how that
// ended (released, or not known to be: the caller says there was nothing
// to release otherwise). A conflict or an error is not the end: the record
// there may be a later write of this process whose outcome it could not
// know (a renewal whose reply was lost, after which the conflict of the
// next renewal found the record unreadable and the leader stepped down:
// errors in bursts found it left to expire, its successors waiting out the
// lease), or the release may not have reached the store. A read says which
// (ownRecord); a record that is not this process's own is left alone.
// Three attempts, as a leader's release makes.
func (r *Reference) releaseOwn(rec Record) bool {
	for range 3 {
		err := r.s.Release(rec)
		if err == nil {
			r.p.Log(MsgReleased, 0, 0)
			return true
		}
		r.report("release", err)
		if r.mistake == mSeenReleaseOnce { // (mutant: a conflict ends it)
			return false
		}
		cur, err := r.s.Read()
		if err != nil {
			// Whose the record is, is not known: it says it could not
			// release, not that there was nothing to (a review).
			r.report("read", err)
			r.p.Log(MsgRefReleaseFailed, 0, 0)
			return true
		}
		if !sameRecord(cur, rec) && !r.ownRecord(cur) {
			return false
		}
		rec = cur
	}
	return false
}
