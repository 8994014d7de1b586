package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"
)

// afterTerm is what a process watches from when its term, or its hold of
// a record over a lost lease, has ended: its own last write, sent at
// lastAt (none after a loss). What it saw before the term is stale; its
// own record is not: a version below it, read or made next, shows that
// the store lost data (a check with the loss as a fault: a leader whose
// renewal found its record gone made a new one at once and led beside a
// process whose lease a second loss had taken).
func (r *Reference) afterTerm() (Record, time.Duration, bool) {
	if r.mistake.in(mLossSeenOnly, mNeverOwn) || r.last.Version == 0 { // (mNeverOwn: its own record is news to it)
		return Record{}, 0, false
	}
	return r.last, r.lastAt, true
}

// ownRenewal reports whether cur, read after a conflict of a renewal or
// release of the term of epoch, is this term's own earlier renewal, whose
// outcome was not known: of this process's PID, of the term's epoch, and
// made by one of the renewals tried since the term's last known write (its
// nonce). A store that names no writes (nonce 0: the file stores) makes no
// versions again while its processes live, and no other term has the
// epoch. A server that lost its data does: another process of the same PID
// (another PID namespace) may hold a record of that epoch (a check with
// the loss and shared PIDs as faults: two led, in 17 of 20,000 runs of
// -faults lose,stop,samepid).
func (r *Reference) ownRenewal(cur Record, epoch int64) bool {
	if cur.Holder != r.pid || cur.Epoch != epoch {
		return false
	}
	// By nonce when this term's writes carry one: a record of nonce 0 on
	// a store that names writes is an earlier leaselab's (a review).
	byEpoch := r.wrote.Nonce == 0 && cur.Nonce == 0
	return byEpoch || slices.Contains(r.tried, cur.Nonce) || r.mistake == mOwnRenewalByEpoch
}

// unknownWrite remembers the nonce of a takeover that failed with an
// error, which may have taken effect (lease.Store): a record of it, read
// next, is this process's own, taken back at once (ownRecord), not waited
// out as another's. (A probe, helper-101: a lost reply left its own record
// to expire, nobody leading for a lease; no property said so.) A takeover
// is a compare-and-set on a record still there: it replaces nothing a
// server dropped unseen.
func (r *Reference) unknownWrite(sent Record) {
	if sent.Nonce != 0 && r.mistake != mUnknownWriteForgotten { // (mutant: forgotten)
		if len(r.tried) >= maxTried {
			// A server down for hours fails a takeover every back-off:
			// the oldest goes (the read after each write shows its
			// record, if it took effect; a review, helper-103: the list
			// grew by one a failed takeover, for good).
			r.tried = append(r.tried[:0], r.tried[1:]...)
		}
		r.tried = append(r.tried, sent.Nonce)
	}
}

// maxTried bounds the takeovers' nonces a watcher remembers.
const maxTried = 16

// unknownCreate remembers a create that failed with an error, which may
// have taken effect, made after a read that showed the store's last
// version known (-1: not known): a record of its nonce is this process's
// own (ownRecord) only at the version next to that one. A create's answer
// says whether it replaced a record its server dropped early (a wall-clock
// step), which may still be held (lostUntil, holdLost): a lost answer
// hides it, and a create at any other version may have (a review of the
// rule without the version, 2026-12-07: a create whose reply was lost,
// over a record dropped between its read and its write, was taken back
// at once and led beside that record's holder; spec.TestLostCreateOverDropped).
// At the next version no write came between the read and the create, so
// nothing dropped there.
func (r *Reference) unknownCreate(sent Record, known int64) {
	if sent.Nonce != 0 && known >= 0 && r.mistake != mUnknownWriteForgotten { // (mutant: forgotten)
		r.lostCreate = Record{Nonce: sent.Nonce, Version: known + 1}
	}
}

// createdAfter is the version a create made after a read that returned
// rec and err would replace (the next create's version less one), where
// the store says it: a record released or gone (its version), none ever
// (0); -1 where it does not (a release a server names without its
// version).
func createdAfter(rec Record, err error) int64 {
	if ve, ok := errors.AsType[*VanishedError](err); ok {
		return ve.Version
	}
	switch {
	case err == nil:
		return rec.Version
	case errors.Is(err, ErrReleased):
		return -1
	}
	return 0
}

// ownRecord reports whether rec is a record this process wrote, which,
// when it does not lead, no one holds: its last known write (by version,
// and nonce where the store names writes), or one of its last term's
// renewals whose outcome it could not know (by nonce: a nonce is this
// process's alone; by its term's epoch where writes carry none). (A check:
// a leader whose renewal's reply was lost stepped down at its deadline,
// then read that renewal's record and waited out its 27 s lease as
// another's, 15 s with no leader.)
func (r *Reference) ownRecord(rec Record) bool {
	if rec.Holder != r.pid || r.mistake == mNeverOwn { // mutant: never its own
		return false
	}
	return r.wrote.Version != 0 && rec.Version == r.wrote.Version && rec.Nonce == r.wrote.Nonce ||
		rec.Nonce != 0 && slices.Contains(r.tried, rec.Nonce) ||
		// On a store that names no writes, a later version of the last
		// known write's term: its renewal whose outcome it could not know
		// (ownRenewal's rule; errors in bursts: a leader whose conflict's
		// read failed stepped down and left it to expire).
		r.wrote.Version != 0 && r.wrote.Nonce == 0 && rec.Nonce == 0 && rec.Epoch == r.wrote.Epoch && rec.Version > r.wrote.Version && r.mistake != mSeenReleaseOnce && r.mistake != mLateRenewalNotOwn ||
		rec.Nonce != 0 && rec.Nonce == r.lostCreate.Nonce && rec.Version == r.lostCreate.Version
}

// sameRecord reports whether a and b are one record: holder, epoch,
// version and nonce.
func sameRecord(a, b Record) bool {
	return a.Holder == b.Holder && a.Epoch == b.Epoch && a.Version == b.Version && a.Nonce == b.Nonce
}

// remade reports whether rec, of the version of seen, is another record
// all the same: both readable, and of another holder, epoch or nonce. A
// version alone names a record while the store keeps its data; after a
// loss versions repeat (a review: a leader back from a pause took a
// re-created lease whose version had climbed back to one it saw before
// its term, as unchanged since then), and so may holder and epoch, but
// not a nonce (a check with the loss as a fault: a watcher paused across
// a loss took a record of the holder it had seen, made anew with the
// epoch and version it had seen, for that one, and took it over while
// its holder led).
func (r *Reference) remade(seen, rec Record) bool {
	if seen.Holder == Unknown || rec.Holder == Unknown {
		return false
	}
	return rec.Holder != seen.Holder || rec.Epoch != seen.Epoch || rec.Nonce != seen.Nonce && r.mistake != mNoNonce
}

// otherLife reports whether rec was read or written in another life of
// the store's data than seen (Record.Incarnation): the store lost its
// data between them, whatever their versions say. A counter that starts
// again from 1 may climb past the version seen (creates and expiries
// after the loss), and a version above it says nothing then. An
// incarnation of 0 (a store that keeps none, a server's data from before
// incarnations) tells nothing.
func (r *Reference) otherLife(seen, rec Record) bool {
	return seen.Incarnation != 0 && rec.Incarnation != 0 && seen.Incarnation != rec.Incarnation
}

// newLeader calls OnNewLeader with holder, when it is not the holder it
// was last called with: a watcher that reads a record of another holder,
// or this process leading.
func (r *Reference) newLeader(holder int64) {
	if r.mistake == mToldOnce { // mutant: each holder told of once
		if slices.Contains(r.toldOnce, holder) {
			return
		}
		r.toldOnce = append(r.toldOnce, holder)
	}
	if f := r.cfg.Callbacks.OnNewLeader; f != nil && (holder != r.told || r.mistake == mToldEveryRead) { // (mutant: at every read)
		r.told = holder
		f(holder)
	}
}

// failed handles a create or takeover that did not lead and returns the
// next back-off. A lost race (the lease exists, or changed) is read again
// at once: the read shows the winner and waits on it (and a version not
// seen before ends the back-off); a write waits, as below. Any other error
// (a full disk, an I/O error) says nothing about the lease, and trying
// again at once would spin while the disk stays full: the next write
// waits, from renewBackoff, doubling up to the watch interval or the
// lease, whichever is shorter (maxBackoff).
func (r *Reference) failed(err error, backoff time.Duration) time.Duration {
	if errors.Is(err, fs.ErrExist) || errors.Is(err, ErrConflict) {
		r.p.Log(MsgLostRace, 0, 0)
		// Lost to a write the next read shows, which ends the back-off (a
		// version not seen before), or to one it does not: the store's
		// listing and its writes disagree (a name it cannot read as a
		// version; a key of a type its reads take for none), and every
		// write is lost at once. Backed off, from none: the first retry
		// waits renewBackoff, so that a race lost to nobody cannot spin
		// (a probe: 8,000 lost races a second, for ever).
		return min(max(2*backoff, renewBackoff), r.maxBackoff())
	}
	backoff = min(max(2*backoff, renewBackoff), r.maxBackoff())
	r.p.Log(MsgRefWriteFailed, int64(backoff/time.Millisecond), 0)
	return backoff
}

// create publishes a lease for this process where there is none and, if
// that worked (led), leads from it until it loses it, or until ctx ends
// (done: the elector returns); the back-off is then 0. A create that
// failed is reported, and its back-off is failed's, from backoff (0 for a
// live record: a lost race); known is createdAfter of the read before it
// (-1: none), for unknownCreate.
func (r *Reference) create(ctx context.Context, backoff time.Duration, lost func(Record) bool, known int64) (led, done bool, next time.Duration) {
	start := r.p.Mono()
	nrec, err := r.s.Create(r.pid, r.cfg.LeaseDuration)
	if err != nil {
		r.unknownCreate(nrec, known)
		r.report("create", err)
		return false, false, r.failed(err, backoff)
	}
	if lost(nrec) {
		// The store lost a lease that may still be held. Hold the new
		// record, renewing it, without leading, until that lease has
		// ended: the other watchers see a live record and wait, nobody
		// else creates (a record given back at once let another detector
		// create, moving the fresh counter past the lost version, and a
		// later create above it was trusted: two leaders in 51 of 60
		// runs of three processes), and the lost lease's holder, whose
		// renewal now fails, steps down by its deadline.
		return r.holdLost(ctx, nrec, start)
	}
	return true, r.leadFrom(ctx, nrec, start, MsgRefAcquired), 0
}

// holdLost holds rec, created over a store that lost a lease which may be
// held until waitLost, renewing it without leading until then, and then
// leads from it. A write that fails gives the hold up (the record, if it
// is still there, expires); the caller waits until waitLost before it
// writes again.
func (r *Reference) holdLost(ctx context.Context, rec Record, last time.Duration) (led, done bool, next time.Duration) {
	// Held for at least the lost lease's length: the other watchers wait
	// out the lease the held record states, and a holder killed now must
	// not let them take over before the lost lease's holder has stopped
	// (a review: the lost lease 27 s, the holder's own 9 s).
	ttl := max(r.cfg.LeaseDuration, r.lostTTL)
	r.last, r.lastAt = rec, last
	renewAt := last + r.cfg.RenewInterval
	if ttl > r.cfg.LeaseDuration {
		renewAt = last // at once: the created record may state the shorter (a loss's; a dropped record's lease the store states itself: RaisedTTL)
	}
	for {
		until := r.waitLost
		if now := r.p.Mono(); now >= until {
			break
		}
		r.sleep(ctx, min(renewAt, until)-r.p.Mono())
		if ctx.Err() != nil {
			// Not given back: a watcher that read the held record would
			// take its release for the end of the only lease it knows and
			// lead while the lost lease's holder still may (a review:
			// two leaders in 30 of 30 runs). It expires.
			r.p.Log(MsgShutdown, 0, 0)
			r.p.Log(MsgRefNotLeading, 0, 0)
			r.waitLost = 0
			return false, true, 0
		}
		if r.p.Mono() < renewAt {
			continue // the lost lease ended first
		}
		start := r.p.Mono()
		nrec, err := r.s.Renew(rec, ttl)
		if err != nil {
			r.report("renew", err)
			return false, false, 0
		}
		rec, last, renewAt = nrec, start, start+r.cfg.RenewInterval
		r.last, r.lastAt = rec, last
	}
	r.waitLost = 0
	return true, r.leadFrom(ctx, rec, last, MsgRefAcquired), 0
}

// leaseOf is how long a watcher waits for rec to change before it takes
// over: the lease its writer held it for, when the record says, whatever
// this process's own LeaseDuration (during a rolling change of -lease the
// processes of one lock hold different leases; waiting one's own, shorter
// lease would take over a longer one while its holder still leads); for a
// record it cannot read, the longest lease it has read in any record or
// its own; else (a record from before leases were recorded) its own.
func (r *Reference) leaseOf(rec Record) time.Duration {
	switch {
	case r.mistake == mWaitDeadline: // mutant: the renew deadline
		return r.cfg.RenewDeadlineInEffect()
	case r.mistake == mOwnLease: // mutant: always its own
	case rec.TTL > 0:
		if r.mistake == mWatcherDriftSign { // mutant: the drift allowed for the wrong way
			return time.Duration(float64(rec.TTL) * (1 - float64(r.cfg.DriftBound())/1e6))
		}
		return rec.TTL
	case rec.Holder == Unknown:
		// Whose lease, and how long, the record does not say: wait the
		// longest this process has seen stated, or its own if longer.
		return max(r.cfg.LeaseDuration, r.longest)
	}
	return r.cfg.LeaseDuration
}

// readStart is the clock before a read, for mSeenBeforeRead only (no
// clock is read otherwise).
func (r *Reference) readStart() time.Duration {
	switch r.mistake {
	case mSeenBeforeRead:
		return r.p.Mono()
	case mWatcherWallClock:
		if !r.mut.clocked {
			r.mut.wall0, r.mut.mono0, r.mut.clocked = r.p.Now(), r.p.Mono(), true
		}
	}
	return 0
}

// readAt is the instant a read that began at before saw its record: the
// clock read after it returned (mSeenBeforeRead: before it began;
// mWatcherWallClock: the wall clock's reading, as a monotonic one).
func (r *Reference) readAt(before time.Duration) time.Duration {
	switch r.mistake {
	case mSeenBeforeRead:
		return before
	case mWatcherWallClock:
		return r.mut.mono0 + r.p.Now().Sub(r.mut.wall0)
	}
	return r.p.Mono()
}

// unseenLease is how long a record this process never saw, that its
// server dropped without a release, may still be held from now: the
// longest of its own lease, any it has read and the one the server says
// that record stated (stated; 0: not said).
func (r *Reference) unseenLease(stated time.Duration) time.Duration {
	ttl := max(r.cfg.LeaseDuration, r.longest)
	if r.mistake != mVanishedOwnLease {
		ttl = max(ttl, stated)
	}
	return ttl
}

// sameNonce reports whether two nonces name one record (with a
// version that does already).
func (r *Reference) sameNonce(a, b uint64) bool {
	return a == b || r.mistake == mVanishedByVersion
}

// report tells Callbacks.OnError of a store error that is none of the
// contract's outcomes.
func (r *Reference) report(op string, err error) {
	f := r.cfg.Callbacks.OnError
	if f == nil || outcome(op, err) || r.mistake == mReadErrorUnreported && op == "read" { // mutant: read errors unreported
		return
	}
	if r.mistake == mOutcomeByKind && (errors.Is(err, fs.ErrNotExist) && !missingDir(err) || errors.Is(err, fs.ErrExist)) { // mutant: by kind alone
		return
	}
	if r.mistake == mReleaseErrorUnreported && op == "release" { // mutant: a release's error unreported
		return
	}
	if r.mistake == mErrorChainLost { // mutant: the error as text
		err = fmt.Errorf("lease %s: %v", op, err)
	}
	f(op, err)
}

// outcome reports whether err, a failed Store call of op ("read",
// "create", "renew", "takeover", "release"), is one of the contract's
// outcomes for op rather than an error its caller is owed word of:
// Reference calls OnError with every other. The outcomes: success; a
// read's missing record, unless the lock's directory is missing; a
// create's existing record; a write's conflict (a superseded write
// included). (Not a write's ENOENT: a renewal whose temporary file
// another's sweep removed while it was paused went unreported while any
// ENOENT counted as an outcome; errors-reported, once it read the
// contract by operation, found it.)
func outcome(op string, err error) bool {
	switch {
	case err == nil || errors.Is(err, ErrConflict) && op != "read":
		return true
	case op == "read":
		return errors.Is(err, fs.ErrNotExist) && !missingDir(err)
	case op == "create":
		return errors.Is(err, fs.ErrExist)
	}
	return false
}

// missingDir reports whether err says the lock's directory is missing (a
// listing of it failed with ENOENT): no outcome of the protocol, unlike a
// missing lease, and one that lasts until someone makes the directory
// again. (Found by a probe: Run over a path in a removed directory retried
// for ever and reported nothing.)
func missingDir(err error) bool {
	pe, ok := errors.AsType[*fs.PathError](err)
	return ok && pe.Op == "readdir" && errors.Is(pe.Err, fs.ErrNotExist)
}

// wait blocks until the record may have changed, until the monotonic
// clock reads until, or until ctx ends: on a notification when there is
// one, by polling every WatchInterval otherwise.
func (r *Reference) wait(ctx context.Context, token uint64, until time.Duration) {
	if r.mistake == mNoExpiryWake { // mutant: no wake at the expiry
		until = forever
	}
	if r.mistake == mWaitIgnoresTerm { // mutant: the wait outlives a SIGTERM
		ctx = context.Background()
	}
	if r.note != nil {
		r.note.WaitChangeContext(ctx, r.dir, token, until)
		return
	}
	d := until - r.p.Mono()
	if d > r.cfg.WatchInterval {
		d = r.cfg.WatchInterval
	}
	if d > 0 {
		r.sleep(ctx, d)
	}
}

// sleep sleeps for d, or until ctx ends.
func (r *Reference) sleep(ctx context.Context, d time.Duration) {
	if r.cw != nil {
		r.cw.SleepContext(ctx, d)
	} else {
		r.p.Sleep(d)
	}
}

// maxBackoff is the longest a watcher waits after a failed read or write:
// the watch interval, but never more than the lease. Once the disk takes
// writes again nothing else wakes a watcher whose writes failed (nobody
// writes), and with a watch interval longer than the lease (-watch 20s
// -lease 9s) it waited up to 20 s before trying, leaderless meanwhile (a
// probe: 12.9 s without a leader after a full disk recovered, against
// the 9.3 s bound).
func (r *Reference) maxBackoff() time.Duration {
	return min(r.cfg.WatchInterval, r.cfg.LeaseDuration)
}
