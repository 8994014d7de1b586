package lease

import (
	"context"
	"errors"
	"time"
)

// leadFrom leads with rec, written by a system call started at start,
// until the deadline passes or a renewal loses (then it returns false,
// to watch again), or until ctx ends: then it steps down, releases, and
// returns true.
func (r *Reference) leadFrom(ctx context.Context, rec Record, start time.Duration, m Msg) bool {
	if r.mistake == mDeadlineAfterWrite { // mutant: from after the write
		start = r.p.Mono()
	}
	deadline := start + r.cfg.RenewDeadlineInEffect()
	if r.p.Mono() >= deadline {
		// Paused between the write and now for longer than the deadline:
		// the lease may already be someone else's. Never act on it. But
		// the store acknowledged the write: the record, if it is still
		// there, is this process's own last write, taken back at once
		// (ownRecord) rather than waited out as another's, as a renewal
		// acknowledged past the deadline is (a probe: a lone process paused
		// 10 s right after its create's link led again only 9 s after it
		// resumed).
		r.p.Log(MsgRefDeadline, 0, 0)
		r.wrote, r.last, r.lastAt = rec, rec, start
		r.tried = r.tried[:0]
		return false
	}
	r.wrote, r.last, r.lastAt = rec, rec, start
	r.tried = r.tried[:0]
	epoch := rec.Epoch
	if r.mistake == mEpochFromSeen { // mutant: a create's epoch one above the highest read
		if m == MsgRefAcquired {
			epoch = r.mut.maxRead + 1
		}
		r.mut.maxRead = max(r.mut.maxRead, epoch)
	}
	term := &Term{clock: r.p, epoch: epoch, deadline: deadline}
	first := rec                  // (mReleaseFirstRecord)
	if r.mistake == mTermShared { // mutant: one Term for every term, reset
		if r.shared != nil {
			t := r.shared
			t.mu.Lock()
			t.epoch, t.deadline, t.lapsed, t.ended, t.moved, t.done = rec.Epoch, deadline, false, nil, nil, nil
			t.mu.Unlock()
			term = t
		}
		r.shared = term
	}
	// The user's context is ctx's child: it ends the instant ctx does,
	// whatever the elector is doing then (a store call may hang), so
	// that the user has stopped before the release is written.
	parent := ctx
	if r.mistake.in(mReleaseBeforeStepDown, mTermCancelsLate) { // mutant: ended only by the step-down
		parent = context.WithoutCancel(ctx)
	}
	// Its cause is Err's reason (context.Cause), which the contexts
	// derived from it report too: with a plain cancel, Cause said
	// Canceled of a term whose Err said DeadlineExceeded (a probe).
	cctx, cancelCtx := context.WithCancelCause(context.WithValue(parent, termKey{}, term))
	term.done = cctx.Done()
	term.deadlineOnly = r.mistake == mValidUntilDeadline // mutant: Valid until the deadline, whatever ended the term
	cancel := func() { cancelCtx(term.end()) }           // (Err's reason, latched as it ends)
	// A callback's panic on this goroutine (OnError's at a failed
	// renewal) unwinds past every step-down below, and the deferred
	// move(-1) stops the deadline's timer: the user's context said
	// DeadlineExceeded from Err once the deadline passed, but its Done
	// never closed, nor a derived context's (a probe, helper-112: a
	// service that recovered Run's panic to run it again). It ends on
	// the way out; the panic goes on. (On the real OS only: a simulated
	// process dies by a panic that unwinds it, and its clock with it.)
	if _, real := r.p.(*osProc); real {
		defer func() {
			if p := recover(); p != nil {
				cancel()
				panic(p)
			}
		}()
	}
	var uctx context.Context = termContext{cctx, term}
	if r.mistake.in(mPlainContext, mErrTrustsTimer) { // mutant: done only when cancelled (by the timer, for mErrTrustsTimer)
		uctx = cctx
	}
	// The user's context is done at the local deadline, not when the
	// loop below next looks (a renewal may hang past it): a context
	// derived from it sees only its Done, never termContext's Err. (Found
	// by a probe: with 250 ms renewals failing past the deadline, the
	// derived context outlived it until another process led.)
	if mt, ok := r.p.(MonoTimer); ok && !r.mistake.in(mPlainContext, mNoDeadlineTimer) {
		move := mt.AfterMono(deadline, func() {
			if !term.inTime() {
				cancel()
			}
		})
		defer move(-1)
		if r.mistake != mTimerNotMoved { // mutant: never moved
			term.moved = move
		}
	}
	if ctx.Err() != nil {
		// Ended while the write was in flight: never lead; give back
		// what was written.
		cancel()
		r.p.Log(MsgShutdown, 0, 0)
		if r.mistake != mNoReleaseWhileAcquiring { // mutant: what was written is left to expire
			r.release(rec, term)
		}
		return true
	}
	r.p.Role(RoleLeader)
	r.p.Lead(epoch, deadline)
	r.p.Log(m, epoch, rec.Version) // m is MsgRefAcquired or MsgRefTakeover
	if r.mistake != mNotToldSelf { // mutant: only watchers are told
		r.newLeader(r.pid)
	}
	if uctx.Err() != nil {
		// Ended since the look above: the log line and OnNewLeader take
		// time (a SIGTERM, or the deadline, came during them). The user
		// is never handed a term already over, which it might act on
		// before it looked at its context (a probe's mutants without the
		// looks above passed; check then found the reference itself
		// handing over done contexts, 1 run in 5,000, 27 over servers).
		r.resign(cancel)
		if ctx.Err() != nil {
			r.p.Log(MsgShutdown, 0, 0)
			if r.mistake != mNoReleaseWhileAcquiring { // mutant: what was written is left to expire
				r.release(rec, term)
			}
			return true
		}
		r.p.Log(MsgRefDeadline, 0, 0)
		return false
	}
	if f := r.cfg.Callbacks.OnStartedLeading; f != nil {
		switch r.mistake {
		case mStartedElectorCtx: // mutant: the elector's context
			f(context.WithValue(ctx, termKey{}, term))
		case mStartedAsync: // mutant: in an activity of its own
			r.p.Go("started", func() { f(uctx) })
		default:
			f(uctx)
		}
	}
	last, backoff := start, time.Duration(0) // backoff: after a failed renewal (0: none failed)
	for {
		every := r.cfg.RenewInterval
		if backoff > 0 {
			every = backoff
		}
		next := min(last+every, deadline)
		if r.mistake == mSleepPastDeadline { // mutant: the deadline does not cut the sleep short
			next = last + every
		}
		if r.mistake == mRenewAtLease { // mutant: renews every lease
			next = min(last+r.cfg.LeaseDuration, deadline)
		}
		if r.mistake == mTermAgeLimit && r.p.Mono()-start > r.cfg.LeaseDuration { // mutant: steps down when the term is older than the lease
			r.resign(cancel)
			r.stoppedLeading()
			return false
		}
		if d := next - r.p.Mono(); d > 0 && ctx.Err() == nil {
			if r.mistake == mRenewSleepIgnoresTerm { // mutant: the sleep outlives a SIGTERM
				r.sleep(context.Background(), d)
			} else {
				r.sleep(ctx, d)
			}
		}
		if ctx.Err() != nil {
			if r.mistake == mReleaseFirstRecord { // mutant: the term's first record released
				rec = first
			}
			r.shutdown(rec, term, cancel)
			return true
		}
		if r.p.Mono() >= deadline {
			r.resign(cancel)
			r.p.Log(MsgRefDeadline, 0, 0)
			if r.mistake != mNoStoppedOnDeadline {
				r.stoppedLeading()
			}
			return false
		}
		start := r.p.Mono()
		if r.mistake == mRenewRereads { // mutant: renews whatever it reads
			if cur, err := r.s.Read(); err == nil && cur.Holder > 0 {
				rec = cur
			} else if err != nil {
				r.report("read", err)
			}
		}
		nrec, err := r.s.Renew(rec, r.cfg.LeaseDuration)
		if r.mistake == mDeadlineAfterWrite { // mutant: from after the write
			start = r.p.Mono()
		}
		base := start
		if r.mistake == mDeadlineFromPrevRenewal { // mutant: from the previous renewal's start
			base = last
		}
		switch {
		case err == nil && !term.extend(base+r.cfg.RenewDeadlineInEffect()):
			// The term lapsed while the renewal was in flight (a pause, a
			// slow store): the user's context already says so, and a new
			// version does not revive it. Step down; the record, still
			// ours (the store acknowledged it), is this process's last
			// write: as a watcher it takes it back at once (ownRecord), in
			// a new term, rather than waiting it out as another's (a probe:
			// a lone leader paused 10 s inside its renewal led again 9 s
			// after it resumed).
			if r.mistake != mLateRenewalNotOwn { // mutant: as before 2026-12-07 (and without ownRecord's epoch rule, which tells it too since)
				r.wrote, r.last, r.lastAt = nrec, nrec, start
			}
			r.resign(cancel)
			r.p.Log(MsgRefDeadline, 0, 0)
			if r.mistake != mNoStoppedOnDeadline {
				r.stoppedLeading()
			}
			return false
		case err == nil:
			if r.mistake == mLeakPerRenewal { // mutant: a goroutine left behind
				r.p.Go("leak", func() { r.sleep(context.Background(), 24*time.Hour) })
			}
			if mt, ok := r.p.(MonoTimer); ok && r.mistake == mTimerPerRenewal { // mutant: a timer left armed
				mt.AfterMono(r.p.Mono()+24*time.Hour, func() {})
			}
			rec, last, deadline = nrec, start, base+r.cfg.RenewDeadlineInEffect()
			backoff, r.wrote, r.last, r.lastAt = 0, nrec, nrec, start
			r.tried = r.tried[:0]
			if r.mistake != mStaleLead { // mutant: the new deadline unreported
				r.p.Lead(term.Epoch(), deadline)
			}
			r.p.Log(MsgRefRenewed, rec.Version, 0)
		case errors.Is(err, ErrConflict):
			// Another write replaced the version we hold: a takeover, or
			// our own earlier renewal whose outcome we could not know (its
			// link took effect and the listing after it failed; its reply
			// was lost). A record of that renewal (ownRenewal) is this
			// term's: renew from it, soon; the deadline stands, as that
			// renewal's start is not known.
			cur, rerr := r.s.Read()
			if rerr != nil && r.mistake != mConflictReadUnreported { // mutant: as before 2026-12-05
				// (Reported as any read's: errors-reported found it
				// unreported.)
				r.report("read", rerr)
			}
			if rerr == nil && cur.Version > rec.Version && r.ownRenewal(cur, term.Epoch()) {
				rec, r.wrote, r.last, r.lastAt = cur, cur, cur, start
				r.tried = r.tried[:0]
				last, backoff = start, renewBackoff
				// (mutant: the deadline counted from this failed attempt's start)
				if r.mistake == mOwnRenewalExtends && term.extend(start+r.cfg.RenewDeadlineInEffect()) {
					deadline = start + r.cfg.RenewDeadlineInEffect()
					r.p.Lead(rec.Epoch, deadline)
				}
				continue
			}
			if r.mistake == mStoppedBeforeCancel { // mutant: told before the context ends
				r.stoppedLeading()
			}
			if r.mistake == mNoCancelLost { // mutant: the user's context left live
				r.p.Role(RoleWatcher)
			} else {
				r.resign(cancel)
			}
			r.p.Log(MsgRefLost, rec.Version, 0)
			if r.mistake != mStoppedBeforeCancel {
				r.stoppedLeading()
			}
			if rerr == nil && cur.Holder > 0 && cur.Holder != Unknown && r.mistake != mToldLate {
				// The read named who took over: told now, not at the
				// watcher's next read (leader-known).
				r.newLeader(cur.Holder)
			}
			return false
		default:
			// I/O error: the deadline stands; retry after a back-off (from
			// renewBackoff, doubling up to the renew interval), so that a
			// failed write or two cost no term, and a failing disk no spin.
			r.report("renew", err)
			if nrec.Nonce != 0 {
				if r.mistake != mUnknownRenewalForgotten { // mutant: its nonce forgotten
					r.tried = append(r.tried, nrec.Nonce) // it may have taken effect
				}
			}
			last, backoff = start, min(max(2*backoff, renewBackoff), r.cfg.RenewInterval)
			if r.mistake == mBackoffToDeadline { // mutant: capped at the deadline
				backoff = min(max(2*backoff, renewBackoff), r.cfg.RenewDeadlineInEffect())
			}
			// (mutant: as if renewed)
			if r.mistake == mRenewErrorIgnored && term.extend(start+r.cfg.RenewDeadlineInEffect()) {
				deadline, backoff = start+r.cfg.RenewDeadlineInEffect(), 0
				r.p.Lead(rec.Epoch, deadline)
			}
		}
	}
}
