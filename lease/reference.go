package lease

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"
)

// The reference algorithm's own log lines.
const (
	MsgRefAcquired        Msg = refBase + iota // [LEADER] Acquired lease, epoch a (version b)
	MsgRefRenewed                              // [LEADER] Lease renewed, version a
	MsgRefDeadline                             // [LEADER] Local deadline passed without a renewal, stepping down
	MsgRefLost                                 // [LEADER] Lease version a replaced by another write, stepping down
	MsgRefHeld                                 // [WATCHER] Lease held by a, version b
	MsgRefExpired                              // [WATCHER] Lease held by a unchanged for the lease duration, taking over
	MsgRefTakeover                             // [WATCHER] Takeover successful, epoch a
	MsgRefUnreadable                           // [WATCHER] Lease version a unreadable, waiting it out
	MsgRefReleaseSkipped                       // Lease no longer ours, nothing to release
	MsgRefNotLeading                           // Not leading, nothing to release
	MsgRefWriteFailed                          // [WATCHER] Could not write the lease, trying again in a ms
	MsgRefOwn                                  // [WATCHER] Lease version a is still our own last write, taking it back
	MsgRefVanished                             // [WATCHER] The store lost the lease held by a, version b: waiting it out
	MsgRefReleaseFailed                        // Could not release the lease: it expires at its lease's end
	MsgRefVanishedUnknown                      // [WATCHER] The store lost lease version a, its holder unknown: waiting it out
	MsgRefReleaseLate                          // Local deadline passed before the release: the lease expires at its lease's end
	MsgStopping                                // Stopping, releasing lease (MsgShutdown's line where no signal ended the run: a runner's own end)
	refEnd
)

var refMsgs = [...]msgText{
	MsgRefAcquired - refBase:        {text: "[LEADER] Acquired lease, epoch % (version %)", a: argNum, b: argNum},
	MsgRefRenewed - refBase:         {text: "[LEADER] Lease renewed, version %", a: argNum},
	MsgRefDeadline - refBase:        {text: "[LEADER] Local deadline passed without a renewal, stepping down"},
	MsgRefLost - refBase:            {text: "[LEADER] Lease version % replaced by another write, stepping down", a: argNum},
	MsgRefHeld - refBase:            {text: "[WATCHER] Lease held by %, version %", a: argHolder, b: argNum},
	MsgRefExpired - refBase:         {text: "[WATCHER] Lease held by % unchanged for the lease duration, taking over", a: argHolder},
	MsgRefTakeover - refBase:        {text: "[WATCHER] Takeover successful, epoch %", a: argNum},
	MsgRefUnreadable - refBase:      {text: "[WATCHER] Lease version % unreadable, waiting it out", a: argNum},
	MsgRefReleaseSkipped - refBase:  {text: "Lease no longer ours, nothing to release"},
	MsgRefNotLeading - refBase:      {text: "Not leading, nothing to release"},
	MsgRefWriteFailed - refBase:     {text: "[WATCHER] Could not write the lease, trying again in % ms", a: argNum},
	MsgRefOwn - refBase:             {text: "[WATCHER] Lease version % is still our own last write, taking it back", a: argNum},
	MsgRefVanished - refBase:        {text: "[WATCHER] The store lost the lease held by %, version %: waiting it out", a: argHolder, b: argNum},
	MsgRefReleaseFailed - refBase:   {text: "Could not release the lease: it expires at its lease's end"},
	MsgRefVanishedUnknown - refBase: {text: "[WATCHER] The store lost lease version %, its holder unknown: waiting it out", a: argNum},
	MsgRefReleaseLate - refBase:     {text: "Local deadline passed before the release: the lease expires at its lease's end"},
	MsgStopping - refBase:           {text: "Stopping, releasing lease"},
}

// Reference is the corrected algorithm, the one to copy. Over a Store
// whose operations are compare-and-set (VersionedFile on a file system),
// it follows client-go's leaderelection where the post's program does not:
//
//   - Expiry is judged on the observer's own monotonic clock, from when it
//     first saw the current version of the record: a watcher takes over
//     only after the record has not changed for LeaseDuration as it
//     measures it. Writers' clocks, wall clocks, offsets and steps do not
//     matter; only the rate of monotonic clocks does (Config.DriftBoundPPM).
//   - The leader stops acting at its own local deadline, RenewDeadline
//     after it started its last successful write, unless it renews before.
//     Config.ValidateDeadline requires deadline/(1-rho) < lease/(1+rho), so
//     the deadline passes strictly before any watcher may take over.
//   - Acquisition, renewal, takeover and release are all compare-and-set
//     on the record's version: none can delete or overwrite a lease that
//     another process wrote meanwhile, whatever pauses intervene.
//   - The fencing epoch comes with leadership (Term) and strictly
//     increases from leader to leader.
//   - Watchers wait for a change notification (Notifier) or for the
//     instant the lease they saw can expire, so a crash fails over in one
//     lease, not a lease plus a poll interval; without a Notifier they
//     poll every WatchInterval.
//   - When its context ends ([Run]; SIGTERM or SIGINT for [Reference.Run])
//     a leader stops acting first, then releases the lease by
//     compare-and-set, so only if it is still this process's.
type Reference struct {
	p    Proc
	s    Store
	cfg  Config
	pid  int64
	dir  string
	note StoreNotifier // what watchers wait on (nil: they poll)
	hint ReleaseHint   // note's word that its latest notice was a release (nil: none)
	// vanishes: the store's server can drop a live record without a
	// release: Vanishing, or its word (a read's VanishedError, a create's
	// Record.Vanished), which no wrapper without Unwrap hides.
	vanishes bool
	cw       ContextWaiter // nil: sleeps do not end with the context
	// wrote is the record of this process's last successful write as a
	// leader (Version 0: none yet, or none since a loss was detected).
	wrote Record
	// last is the record of this process's last successful write as a
	// leader or a holder (Version 0: none since a loss was detected), and
	// lastAt when that write was sent: what a term's end leaves it to
	// watch, so that a version below it later shows a loss.
	last   Record
	lastAt time.Duration
	// tried are the nonces of the term's renewals since its last
	// successful write, and of a watcher's takeovers, that failed with an
	// error and so may have taken effect (lease.Store): its own
	// (ownRenewal, ownRecord); lostCreate is such a create's (unknownCreate).
	tried      []uint64
	lostCreate Record
	// lateSeen is a holder read once and not yet told of (mToldLate).
	lateSeen int64
	// told is the holder OnNewLeader was last called with (0: none).
	told     int64
	toldOnce []int64 // the holders told of (the mutant mToldOnce only)
	// waitLost is until when a lease the store lost may still be held
	// (0: none known): a record created meanwhile is held, not led from.
	waitLost time.Duration
	lostTTL  time.Duration // the lost lease's length
	// longest is the longest lease any record this process read stated:
	// what it waits out a record whose content it cannot read.
	longest time.Duration

	mistake mistake // planted by the mutation tests only (mistake.go)
	shared  *Term   // the one Term of mutant mTermShared
	mut     mutantState
}

// NewReference returns the reference elector for process p over s. Unless
// cfg.Poll is set, a watcher waits for the store's notices when s is a
// [ChangeFeed] (or, in the simulator, a [StoreNotifier]), else for changes
// to the directory of path when p is a [Notifier]; otherwise it polls.
func NewReference(p Proc, s Store, path string, cfg Config) (*Reference, error) {
	if err := cfg.ValidateDeadline(); err != nil {
		return nil, err
	}
	return newReference(p, s, filepath.Dir(path), cfg), nil
}

// newReference is the elector for p over s, watching dir ("": polling).
func newReference(p Proc, s Store, dir string, cfg Config) *Reference {
	r := &Reference{p: p, s: s, cfg: cfg, pid: int64(p.PID()), dir: dir}
	r.note = watchSource(p, s, dir, cfg)
	if w, ok := p.(NameWatcher); ok {
		for u := s; u != nil; u = unwrapped(u) {
			if path, ok := lockPathOf(u); ok && filepath.Dir(path) == dir {
				w.WatchName(path) // its directory's other files wake nobody
				break
			}
		}
	}
	r.hint, _ = r.note.(ReleaseHint)
	r.vanishes = vanishes(s)
	r.cw, _ = p.(ContextWaiter)
	return r
}

// Run runs the elector as the post's program does: a SIGTERM or SIGINT
// (its handler installed before any lease is written) ends the context
// the elector runs with (see [Run]), and once it has stepped down and
// released, the process exits through p.Exit(0). It does not return.
func (r *Reference) Run() {
	untilSignal(r.p, func(ctx context.Context) error {
		r.elect(ctx)
		return nil
	})
}

// untilSignal is a program's main: it runs run with a context that a
// SIGTERM or SIGINT ends, and exits 0 when run returns nil.
func untilSignal(p Proc, run func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n, ok := p.(ShutdownNotifier); ok {
		n.NotifyShutdown() // before any lease is ours: see ShutdownNotifier
	}
	p.Go("signal", func() {
		p.AwaitShutdown()
		cancel()
	})
	if err := run(ctx); err != nil {
		return err
	}
	p.Exit(0)
	return nil
}

// elect runs the elector until ctx ends, then stops leading, releases
// the lease if it is this process's, and returns.
func (r *Reference) elect(ctx context.Context) {
	r.p.Log(MsgStarted, r.pid, 0)
	r.p.Role(RoleWatcher)
	var seen Record
	var seenAt time.Duration
	haveSeen := false // (a monotonic clock may read 0)
	// seenGone: a read since seen found no record, or a release: seen is
	// gone, and a record read later is another, however like it (a check
	// with the loss as a fault: a watcher paused across a loss took a
	// record made after it, identical in holder, epoch and version, for
	// the one it saw before, and took it over while another led).
	seenGone := false
	// After a write that failed with an error, no write is tried again
	// before retryAt (backoff later), whatever wakes the loop meanwhile: a
	// failed write changes the lock directory itself (a temporary file
	// made and removed), and so do another process's, so that waking on a
	// change and writing again would spin, alone or in pairs, on a disk
	// whose blocks are full while its inodes are not. A real change (a
	// new version) is still seen at once.
	var backoff, retryAt time.Duration
	// holdUntil: no write before it either, for a lease the store lost
	// or dropped that may still be held (lostUntil, Vanishing). Unlike
	// retryAt, a release read meanwhile does not end it: another
	// process's record made and released during the wait says nothing of
	// the lost holder (a check with the loss and the wall-clock step as
	// faults: a watcher waiting out a lost lease read a fresh process's
	// record and then its release, and led beside the lost holder).
	var holdUntil time.Duration
	var lastVersion int64 // the version the last successful read showed
	// prevToken is the change token the previous pass took (haveToken:
	// one did), against which a release notice counts as new.
	var prevToken uint64
	haveToken := false
	var readBackoff time.Duration // the wait after the last of a run of failed reads
	// waitedFor is the version of the record gone without a release that
	// has been waited out (Vanishing; -1: none since the last record or
	// release read): another version gone so is waited out again (a
	// search: a watcher paused across two such drops waited out the
	// first, then took the second, a live leader's dropped by a wall-clock
	// step, for the same, and led beside it).
	waitedFor := int64(-1)
	// waitedNonce is that record's nonce, where the store says it (0:
	// not known): after a loss of the server's data versions repeat, and
	// a version alone named another's record for one waited out or for
	// this process's own (a review: two leaders in 20 of 20 scripted runs
	// of a loss and then a step).
	var waitedNonce uint64
	// lostUntil reports whether rec, a record this process just created
	// (at or below the version seen, or of another incarnation) or read
	// (below it, or of another incarnation: otherLife), shows that
	// the store lost a lease this process saw, which may still be held,
	// and until when; lost, for a created record, holds it till then:
	// versions come from a counter that never goes back, a release's
	// included, so a new record's version at or below one seen says the
	// store forgot them (a lease server restarted without its data:
	// Redis without persistence; an etcd whose data directory was wiped;
	// a database restored from a backup). The lease seen is then waited
	// out, from when it was seen, as if it were there, holding the new
	// record meanwhile (holdLost): its holder leads on until its renewal
	// fails (a probe: two commands ran at once, with one epoch, for up to
	// a renew interval, 2.8 s at the default intervals). A release or a
	// server's expiry of the key loses no version, and costs nothing.
	lostUntil := func(rec Record, created bool) (time.Duration, bool) {
		if !haveSeen || !r.otherLife(seen, rec) && (rec.Version > seen.Version || rec.Version == seen.Version && !created && !r.remade(seen, rec)) {
			return 0, false
		}
		expiry := seenAt + r.leaseOf(seen)
		now := r.p.Mono()
		if r.mistake == mLossSeenOnly && (seen.Holder <= 0 || now >= expiry) {
			return 0, false // mutant: the loss of a lease no longer held, or of none, costs nothing
		}
		// The lease seen may be over, or a release: the loss is one all
		// the same, and leases this process never saw may be lost with it
		// (a check with the loss as a fault: a leader paused across a
		// loss, its deadline passed, made a record at once and led beside
		// the holder of a lease made while it was paused).
		if seen.Holder > 0 {
			r.p.Log(MsgRefVanished, seen.Holder, seen.Version)
		} else {
			r.p.Log(MsgRefVanishedUnknown, seen.Version, 0)
		}
		r.wrote, r.last = Record{}, Record{} // versions repeat now: a version this process wrote before is not its own
		r.tried = r.tried[:0]
		if r.mistake != mLossSeenOnly {
			// A lease it never saw may have been made and lost too (two
			// losses), and be held for up to a lease from when it was
			// made, before now: waited out as well. (A check with the
			// loss as a fault: a leader whose record a loss took found
			// none, made one and led, beside a process whose lease, made
			// after that loss, a second one had taken.)
			expiry = max(expiry, now+max(r.cfg.LeaseDuration, r.longest))
			// And records repeat: the one seen is forgotten (its lease is
			// waited out through expiry), so that the next record read,
			// however like it, starts a clock of its own. (The same
			// check: a detector whose hold a second loss ended took the
			// lost holder's new record, identical in holder, epoch and
			// version, for the one it saw before the loss, and took it
			// over 3 s into its holder's term.)
			haveSeen = false
		}
		return expiry, true
	}
	// watchOwn is where a term, or a hold, leaves the watcher: its own
	// last record seen (afterTerm).
	watchOwn := func() {
		seen, seenAt, haveSeen = r.afterTerm()
		seenGone, waitedFor, waitedNonce = false, -1, 0
	}
	// dropped reports whether nrec, a record this process just created,
	// took the place of one its server dropped without a release
	// (Record.Vanished) whose holder may still lead, until when, and the
	// length of that lease. Such a record was waited out if a read showed
	// it gone (waitedFor); any other was never seen (made and dropped
	// between this process's read and its create: a wall-clock step
	// right after another's create) and is held for a whole lease from
	// now, the longest of its own, any it has read and the one the store
	// says the dropped record stated. (Not matched with the record last
	// seen, nor with its own last write, by version: after a loss of the
	// server's data versions repeat, and a review found the own-write
	// match taking another's dropped record, made after a loss, for its
	// own: two leaders in 20 of 20 scripted runs. A record seen live is
	// read as gone before any create, which sets waitedFor.)
	dropped := func(nrec Record) (time.Duration, time.Duration, bool) {
		v := nrec.Vanished
		r.vanishes = r.vanishes || v != 0 // (its word, through any wrapper)
		if !r.vanishes || v == 0 || v == waitedFor && r.sameNonce(nrec.VanishedNonce, waitedNonce) || r.mistake == mDroppedAtOnce {
			return 0, 0, false
		}
		now := r.p.Mono()
		ttl := r.unseenLease(nrec.VanishedTTL)
		r.p.Log(MsgRefVanishedUnknown, v, 0)
		return now + ttl, ttl, true
	}
	lost := func(nrec Record) bool {
		ttl := r.leaseOf(seen)
		expiry, ok := lostUntil(nrec, true)
		// (Both may hold: a loss, and a record made after it that a step
		// dropped unseen, of a longer lease than any read: the later end
		// and the longer lease.)
		if dexp, dttl, dok := dropped(nrec); dok {
			if !ok {
				expiry, ttl = dexp, dttl
			} else {
				expiry, ttl = max(expiry, dexp), max(ttl, dttl)
			}
			ok = true
		}
		if ok {
			r.waitLost, r.lostTTL = expiry, ttl
		}
		return ok
	}
	for {
		if ctx.Err() != nil {
			r.p.Log(MsgShutdown, 0, 0)
			// Not leading, but the record last seen may be this process's
			// own (a renewal acknowledged just past its deadline, a SIGTERM
			// pending): releasing it hands over at once, not a lease later
			// (a review: a watcher waited 9 s after such a SIGTERM).
			if haveSeen && r.ownRecord(seen) && r.mistake != mOwnRecordNotReleased && r.releaseOwn(seen) { // (mutant: left to expire)
				return
			}
			r.p.Log(MsgRefNotLeading, 0, 0)
			if r.mistake == mStoppedOnExit { // mutant: told on exit, leading or not
				r.stoppedLeading()
			}
			return
		}
		var token uint64
		if r.note != nil && r.mistake != mTokenAfterRead {
			token = r.note.ChangeToken(r.dir)
		}
		// Woken by a notice that says the lease was released: create at
		// once, without reading first (Create publishes only where there
		// is no live record, so a wrong hint costs this one call and the
		// read below, as a lost race does). Not on a store whose records
		// vanish: there a record can be gone without a release and still
		// held, and a notice taken for the latest (a duplicate of the
		// release; another's create, its notice lost, since) made a create
		// over a record the server had dropped early (a wall-clock step)
		// succeed while its holder led (a probe: up to 2 s of two leaders;
		// spec.TestStaleReleaseNoticeDoesNotSkipTheWait). The read below
		// tells a release (create at once) from a vanish (wait it out).
		hinted := r.hint != nil && haveToken && r.hint.Released(prevToken) && (!r.vanishes || r.mistake == mHintOnVanishing)
		prevToken, haveToken = token, r.note != nil && r.mistake != mTokenAfterRead
		if hinted && r.p.Mono() >= max(retryAt, holdUntil) && ctx.Err() == nil {
			led, done, b := r.create(ctx, backoff, lost, -1)
			if done {
				return
			}
			if backoff = b; led {
				watchOwn() // what it saw before its term is stale
				continue
			}
			if r.waitLost > 0 {
				watchOwn() // the record it held
				holdUntil, r.waitLost, lastVersion = max(holdUntil, r.waitLost), 0, 0
				continue
			}
			if backoff > 0 {
				retryAt = r.p.Mono() + backoff
				continue
			}
			// A live record: read it, as the watcher would have.
		}
		before := r.readStart() // (0 but for mSeenBeforeRead)
		rec, err := r.s.Read()
		now := r.readAt(before)
		if r.mistake == mEpochFromSeen && err == nil {
			r.mut.maxRead = max(r.mut.maxRead, rec.Epoch) // (mutant: epochs by the client)
		}
		if r.note != nil && r.mistake == mTokenAfterRead { // mutant: the token after the read
			token = r.note.ChangeToken(r.dir)
		}
		// A version whose name is there but whose content could not be read
		// this time (EIO): seen, but not known.
		unread := err != nil && rec.Holder == Unknown && rec.Version != 0
		if (err == nil || unread) && rec.Version != lastVersion || errors.Is(err, fs.ErrNotExist) && lastVersion != 0 {
			// A version nobody had seen, or a lease seen held that now
			// reads as none (a release: the file store reports it so,
			// without its version): someone's write succeeded since ours
			// failed, so the disk takes writes again. A back-off left
			// from then would delay the next acquisition (after a
			// release, by up to a watch interval) for nothing.
			lastVersion = rec.Version
			if r.mistake != mStaleBackoff { // mutant: the back-off outlives its cause
				backoff, retryAt = 0, 0
			}
		}
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			readBackoff = 0 // the read worked: the next failure starts short again
		}
		if err == nil || errors.Is(err, ErrReleased) {
			waitedFor, waitedNonce = -1, 0 // a record, or a release: a vanish from here on is another
		}
		if err == nil && rec.Holder != Unknown {
			// A version read below one seen: nothing is written before the
			// lost lease has ended, and a version this process wrote
			// before is not its own any more (a review: a create whose
			// error hid its effect made version 1, which this process had
			// written in an earlier term, and it "took it back" while the
			// other led).
			if expiry, ok := lostUntil(rec, false); ok {
				holdUntil = max(holdUntil, expiry)
			}
		}
		switch {
		case errors.Is(err, fs.ErrNotExist) || err == nil && rec.Holder == 0:
			// No lease, or a released one: acquire at once. But a record
			// seen live that a server dropped without a release (its TTL
			// run out early on a wall clock that stepped forward, an
			// eviction) may still be held: its holder leads until its
			// next renewal fails. It is waited out on this process's
			// clock from when it was seen, as a file store's version is
			// (Vanishing).
			// A record this process did not see (a later version than the
			// one it saw: a process paused across it), that the store
			// says went without a release (ErrVanished), may be held for
			// up to a lease from before now: waited out from now, once.
			// (Not a store that says no record at all, and forgot its
			// counter: that is a loss of its data, which the create below
			// detects by its version and holds its record through
			// (lostUntil, holdLost), so that a process that joins finds a
			// live record and waits. Waiting instead left the store empty,
			// and a process that joined then led beside the lost holder:
			// spec.TestServerLossSearch.)
			ve, vanished := errors.AsType[*VanishedError](err)
			r.vanishes = r.vanishes || vanished // (as a create's answer says it)
			if r.vanishes && vanished && (ve.Version != waitedFor || !r.sameNonce(ve.Nonce, waitedNonce)) && r.mistake != mVanishedAtOnce {
				waitedFor, waitedNonce = ve.Version, ve.Nonce
				// (The record seen, where the store names the one that went
				// by its nonce too: after a loss versions repeat.)
				if haveSeen && !seenGone && seen.Holder > 0 && ve.Version == seen.Version && (ve.Nonce == 0 || r.sameNonce(ve.Nonce, seen.Nonce)) {
					// (This process's own record, of a term over, is held by
					// no one: nothing to wait out.)
					if expiry := seenAt + r.leaseOf(seen); now < expiry && !r.ownRecord(seen) {
						r.p.Log(MsgRefVanished, seen.Holder, seen.Version)
						holdUntil = max(holdUntil, expiry)
					}
				} else {
					r.p.Log(MsgRefVanishedUnknown, ve.Version, 0)
					holdUntil = max(holdUntil, now+r.unseenLease(ve.TTL))
				}
			}
			seenGone = haveSeen && r.mistake != mLossSeenOnly
			if until := max(retryAt, holdUntil); now < until {
				r.wait(ctx, token, until)
				continue
			}
			if ctx.Err() != nil {
				continue // write nothing more
			}
			led, done, b := r.create(ctx, backoff, lost, createdAfter(rec, err))
			if done {
				return
			}
			if backoff = b; !led {
				retryAt = r.p.Mono() + backoff
			} else {
				watchOwn() // what it saw before its term is stale
			}
			if r.waitLost > 0 {
				watchOwn() // the record it held
				// (lastVersion forgotten: the lost lease reading as none
				// is no release, which would end the wait.)
				holdUntil, r.waitLost, lastVersion = max(holdUntil, r.waitLost), 0, 0
			}
			continue
		case err != nil:
			if unread && (!haveSeen || rec.Version != seen.Version || seenGone) {
				// Its clock starts now, as any version's; but how long a
				// lease it holds only its content says, and it is taken
				// over only once read (the branch below keeps this
				// instant). Waiting this process's own lease, or the
				// longest it had read, took over a longer lease of a
				// holder it had never read (a probe: a fresh 9 s watcher
				// whose reads of a 27 s holder's version failed led beside
				// it at 9.5 s).
				seen, seenAt, haveSeen, seenGone = rec, now, true, false
				r.p.Log(MsgRefUnreadable, rec.Version, 0)
			}
			// An I/O error says nothing about the lease: try again soon,
			// from renewBackoff doubling up to a watch interval or the
			// lease, whichever is shorter (maxBackoff). Not a
			// whole watch interval at once: a watcher whose first read
			// failed has not seen the lease yet, and its expiry clock
			// starts only when it does, so that each millisecond of
			// waiting here is one more on a crashed leader's failover
			// (explore -procs 2 -fserrs 1 -crashes 1: 11.5 s after a
			// SIGKILL, against 9.3 s, when it waited 3 s).
			r.report("read", err)
			readBackoff = min(max(2*readBackoff, renewBackoff), r.maxBackoff())
			if r.mistake == mReadErrorWaitsWatch { // mutant: a whole watch interval
				readBackoff = r.cfg.WatchInterval
			}
			if r.mistake == mReadRetryNoDoubling { // mutant: never doubles
				readBackoff = renewBackoff
			}
			r.wait(ctx, token, now+readBackoff)
			continue
		}
		if rec.Holder > 0 {
			if r.mistake == mToldLate && rec.Holder != r.told && rec.Holder != r.lateSeen { // mutant: told at the next read that names it
				r.lateSeen = rec.Holder
			} else {
				r.newLeader(rec.Holder)
			}
		}
		// (After a loss a version seen may name another record: remade.)
		changed := rec.Version != seen.Version || seenGone || r.remade(seen, rec)
		if r.mistake == mHolderNotVersion { // mutant: renewals do not count
			changed = rec.Holder != seen.Holder
		}
		if changed || !haveSeen {
			seen, seenAt, haveSeen, seenGone = rec, now, true, false
			if rec.Holder == Unknown {
				r.p.Log(MsgRefUnreadable, rec.Version, 0)
			} else {
				r.p.Log(MsgRefHeld, rec.Holder, rec.Version)
			}
		} else if seen.Holder == Unknown && rec.Holder != Unknown {
			// The same version, unreadable before (this process's read
			// failed), read now: its lease is the one its writer states,
			// counted from when the version was first seen.
			seen = rec
		}
		if rec.Holder != Unknown {
			r.longest = max(r.longest, rec.TTL)
		}
		// A version this very process wrote last, when it no longer leads
		// (its deadline passed while the disk failed), was written by no
		// one else since: take it back at once, by compare-and-set as any
		// takeover, instead of waiting out a lease nobody else holds. (By
		// version, not by holder: another process may have the same PID,
		// in another PID namespace or after a restart.)
		own := r.ownRecord(rec)
		if r.mistake == mOwnByPID { // mutant: a record of this PID is this process's
			own = rec.Holder == r.pid
		}
		expiry := seenAt + r.leaseOf(seen)
		if now < expiry && !own {
			r.wait(ctx, token, expiry)
			continue
		}
		if until := max(retryAt, holdUntil); now < until && (!own || r.mistake != mOwnSkipsHold) { // (mutant: own skips it)
			r.wait(ctx, token, until)
			continue
		}
		if ctx.Err() != nil {
			continue // write nothing more
		}
		if own {
			r.p.Log(MsgRefOwn, rec.Version, 0)
		} else {
			r.p.Log(MsgRefExpired, rec.Holder, 0)
		}
		if r.mistake == mToldBeforeWrite { // mutant: told before the write
			r.newLeader(r.pid)
		}
		start := r.p.Mono()
		nrec, err := r.s.Takeover(rec, r.pid, r.cfg.LeaseDuration)
		if err != nil {
			r.unknownWrite(nrec)
			r.report("takeover", err)
			backoff = r.failed(err, backoff)
			retryAt = r.p.Mono() + backoff
			continue
		}
		if r.leadFrom(ctx, nrec, start, MsgRefTakeover) {
			return
		}
		backoff = 0
		watchOwn() // what it saw before its term is stale
	}
}
