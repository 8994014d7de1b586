package lease

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// The reference algorithm's own log lines.
const (
	MsgRefAcquired       Msg = refBase + iota // [LEADER] Acquired lease, epoch a (version b)
	MsgRefRenewed                             // [LEADER] Lease renewed, version a
	MsgRefDeadline                            // [LEADER] Local deadline passed without a renewal, stepping down
	MsgRefLost                                // [LEADER] Lease version a replaced by another write, stepping down
	MsgRefHeld                                // [WATCHER] Lease held by a, version b
	MsgRefExpired                             // [WATCHER] Lease held by a unchanged for the lease duration, taking over
	MsgRefTakeover                            // [WATCHER] Takeover successful, epoch a
	MsgRefUnreadable                          // [WATCHER] Lease version a unreadable, waiting it out
	MsgRefReleaseSkipped                      // Lease no longer ours, nothing to release
	MsgRefNotLeading                          // Not leading, nothing to release
	MsgRefWriteFailed                         // [WATCHER] Could not write the lease, trying again in a ms
	MsgRefOwn                                 // [WATCHER] Lease version a is still our own last write, taking it back
	MsgRefVanished                            // [WATCHER] The store lost the lease held by a, version b: waiting it out
	MsgRefReleaseFailed                       // Could not release the lease: it expires at its lease's end
	refEnd
)

var refMsgs = [...]msgText{
	MsgRefAcquired - refBase:       {text: "[LEADER] Acquired lease, epoch % (version %)", a: argNum, b: argNum},
	MsgRefRenewed - refBase:        {text: "[LEADER] Lease renewed, version %", a: argNum},
	MsgRefDeadline - refBase:       {text: "[LEADER] Local deadline passed without a renewal, stepping down"},
	MsgRefLost - refBase:           {text: "[LEADER] Lease version % replaced by another write, stepping down", a: argNum},
	MsgRefHeld - refBase:           {text: "[WATCHER] Lease held by %, version %", a: argPID, b: argNum},
	MsgRefExpired - refBase:        {text: "[WATCHER] Lease held by % unchanged for the lease duration, taking over", a: argPID},
	MsgRefTakeover - refBase:       {text: "[WATCHER] Takeover successful, epoch %", a: argNum},
	MsgRefUnreadable - refBase:     {text: "[WATCHER] Lease version % unreadable, waiting it out", a: argNum},
	MsgRefReleaseSkipped - refBase: {text: "Lease no longer ours, nothing to release"},
	MsgRefNotLeading - refBase:     {text: "Not leading, nothing to release"},
	MsgRefWriteFailed - refBase:    {text: "[WATCHER] Could not write the lease, trying again in % ms", a: argNum},
	MsgRefOwn - refBase:            {text: "[WATCHER] Lease version % is still our own last write, taking it back", a: argNum},
	MsgRefVanished - refBase:       {text: "[WATCHER] The store lost the lease held by %, version %: waiting it out", a: argPID, b: argNum},
	MsgRefReleaseFailed - refBase:  {text: "Could not release the lease: it expires at its lease's end"},
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
	// release (Vanishing).
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
	// successful write that failed with an error, and so may have taken
	// effect (lease.Store): a record of one of them, read after a
	// conflict, is this term's own (ownRenewal).
	tried []uint64
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
}

// Term is a leadership term: its fencing epoch and local deadline. The
// context given to OnStartedLeading carries it (TermOf).
type Term struct {
	clock    Clock
	epoch    int64
	mu       sync.Mutex
	deadline time.Duration
	lapsed   bool  // the deadline passed once: the term is over for good
	ended    error // why the term's context ended (end), once it has
	// moved, if set, moves the timer that ends the user's context at
	// the deadline (MonoTimer) when the deadline moves.
	moved func(time.Duration)
}

// Epoch is the term's fencing epoch: pass it with every action on a
// resource that can reject stale epochs.
func (t *Term) Epoch() int64 { return t.epoch }

// Valid reports whether the term's local deadline has not passed: check
// it before acting. (An action already under way when it passes is what
// fencing is for.) Once it has reported false it always does: a renewal
// that lands after the deadline does not revive the term.
func (t *Term) Valid() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.lapsed && t.clock.Mono() >= t.deadline {
		t.lapsed = true
	}
	return !t.lapsed
}

// end latches, the first time it is called, why the term's context ends:
// DeadlineExceeded if the deadline has passed, else Canceled; and returns
// it.
func (t *Term) end() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended == nil {
		if !t.lapsed && t.clock.Mono() >= t.deadline {
			t.lapsed = true
		}
		t.ended = context.Canceled
		if t.lapsed {
			t.ended = context.DeadlineExceeded
		}
	}
	return t.ended
}

// extend moves the term's deadline to d, unless the term has lapsed; it
// reports whether it did.
func (t *Term) extend(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lapsed || t.clock.Mono() >= t.deadline {
		t.lapsed = true
		return false
	}
	t.deadline = d
	if t.moved != nil {
		t.moved(d) // (under the lock: a timer firing now sees the new deadline)
	}
	return true
}

type termKey struct{}

// termContext is a leader's context: done when the leader steps down,
// and, whatever the algorithm is doing (a store call may hang), reporting
// DeadlineExceeded from Err once the term's local deadline has passed. A
// user who checks ctx.Err() before acting never acts on a lapsed term.
type termContext struct {
	context.Context
	term *Term
}

// Err is DeadlineExceeded once the term's deadline has passed, Canceled
// if the term ended before it (a lost lease, a shutdown), and, once
// non-nil, the same at every call: the reason is latched when the term
// ends (Term.end), so that the timer's cancellation at the deadline does
// not turn it into Canceled, nor a deadline passing after a shutdown into
// DeadlineExceeded (a probe saw Canceled after the deadline).
func (c termContext) Err() error {
	if c.Context.Err() == nil {
		if !c.term.Valid() {
			return context.DeadlineExceeded // (the timer not run yet)
		}
		return nil
	}
	return c.term.end()
}

// TermOf returns the leadership term carried by ctx.
func TermOf(ctx context.Context) (*Term, bool) {
	t, ok := ctx.Value(termKey{}).(*Term)
	return t, ok
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
	// lostUntil reports whether version v, of a record this process just
	// created (at or below one seen) or read (below one seen), shows that
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
		if !haveSeen || rec.Version > seen.Version || rec.Version == seen.Version && !created && !r.remade(seen, rec) {
			return 0, false
		}
		expiry := seenAt + r.leaseOf(seen)
		now := r.p.Mono()
		if r.mistake&mLossSeenOnly != 0 && (seen.Holder <= 0 || now >= expiry) {
			return 0, false // mutant: the loss of a lease no longer held, or of none, costs nothing
		}
		// The lease seen may be over, or a release: the loss is one all
		// the same, and leases this process never saw may be lost with it
		// (a check with the loss as a fault: a leader paused across a
		// loss, its deadline passed, made a record at once and led beside
		// the holder of a lease made while it was paused).
		r.p.Log(MsgRefVanished, max(seen.Holder, 0), seen.Version)
		r.wrote, r.last = Record{}, Record{} // versions repeat now: a version this process wrote before is not its own
		r.tried = r.tried[:0]
		if r.mistake&mLossSeenOnly == 0 {
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
		seenGone, waitedFor = false, -1
	}
	lost := func(nrec Record) bool {
		ttl := r.leaseOf(seen)
		expiry, ok := lostUntil(nrec, true)
		if ok {
			r.waitLost, r.lostTTL = expiry, ttl
		}
		return ok
	}
	for {
		if ctx.Err() != nil {
			r.p.Log(MsgShutdown, 0, 0)
			r.p.Log(MsgRefNotLeading, 0, 0)
			return
		}
		var token uint64
		if r.note != nil && r.mistake&mTokenAfterRead == 0 {
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
		hinted := r.hint != nil && haveToken && r.hint.Released(prevToken) && !r.vanishes
		prevToken, haveToken = token, r.note != nil && r.mistake&mTokenAfterRead == 0
		if hinted && r.p.Mono() >= max(retryAt, holdUntil) && ctx.Err() == nil {
			led, done, b := r.create(ctx, backoff, lost)
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
		rec, err := r.s.Read()
		now := r.p.Mono()
		if r.note != nil && r.mistake&mTokenAfterRead != 0 { // mutant: the token after the read
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
			if r.mistake&mStaleBackoff == 0 { // mutant: the back-off outlives its cause
				backoff, retryAt = 0, 0
			}
		}
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			readBackoff = 0 // the read worked: the next failure starts short again
		}
		if err == nil || errors.Is(err, ErrReleased) {
			waitedFor = -1 // a record, or a release: a vanish from here on is another
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
			var ve *VanishedError
			if r.vanishes && errors.As(err, &ve) && ve.Version != waitedFor && r.mistake&mVanishedAtOnce == 0 {
				waitedFor = ve.Version
				if haveSeen && !seenGone && seen.Holder > 0 && ve.Version == seen.Version {
					// (This process's own record, of a term over, is held by
					// no one: nothing to wait out.)
					if expiry := seenAt + r.leaseOf(seen); now < expiry && !r.ownRecord(seen) {
						r.p.Log(MsgRefVanished, seen.Holder, seen.Version)
						holdUntil = max(holdUntil, expiry)
					}
				} else {
					r.p.Log(MsgRefVanished, 0, ve.Version)
					holdUntil = max(holdUntil, now+max(r.cfg.LeaseDuration, r.longest))
				}
			}
			seenGone = haveSeen && r.mistake&mLossSeenOnly == 0
			if until := max(retryAt, holdUntil); now < until {
				r.wait(ctx, token, until)
				continue
			}
			if ctx.Err() != nil {
				continue // write nothing more
			}
			led, done, b := r.create(ctx, backoff, lost)
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
			// from renewBackoff doubling up to a watch interval. Not a
			// whole watch interval at once: a watcher whose first read
			// failed has not seen the lease yet, and its expiry clock
			// starts only when it does, so that each millisecond of
			// waiting here is one more on a crashed leader's failover
			// (explore -procs 2 -fserrs 1 -crashes 1: 11.5 s after a
			// SIGKILL, against 9.3 s, when it waited 3 s).
			r.report("read", err)
			readBackoff = min(max(2*readBackoff, renewBackoff), r.cfg.WatchInterval)
			if r.mistake&mReadErrorWaitsWatch != 0 { // mutant: a whole watch interval
				readBackoff = r.cfg.WatchInterval
			}
			r.wait(ctx, token, now+readBackoff)
			continue
		}
		if rec.Holder > 0 {
			if r.mistake&mToldLate != 0 && rec.Holder != r.told && rec.Holder != r.lateSeen { // mutant: told at the next read that names it
				r.lateSeen = rec.Holder
			} else {
				r.newLeader(rec.Holder)
			}
		}
		// (After a loss a version seen may name another record: remade.)
		changed := rec.Version != seen.Version || seenGone || r.remade(seen, rec)
		if r.mistake&mHolderNotVersion != 0 { // mutant: renewals do not count
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
		if r.mistake&mOwnByPID != 0 { // mutant: a record of this PID is this process's
			own = rec.Holder == r.pid
		}
		expiry := seenAt + r.leaseOf(seen)
		if now < expiry && !own {
			r.wait(ctx, token, expiry)
			continue
		}
		if until := max(retryAt, holdUntil); now < until {
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
		if r.mistake&mToldBeforeWrite != 0 { // mutant: told before the write
			r.newLeader(r.pid)
		}
		start := r.p.Mono()
		nrec, err := r.s.Takeover(rec, r.pid, r.cfg.LeaseDuration)
		if err != nil {
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

// afterTerm is what a process watches from when its term, or its hold of
// a record over a lost lease, has ended: its own last write, sent at
// lastAt (none after a loss). What it saw before the term is stale; its
// own record is not: a version below it, read or made next, shows that
// the store lost data (a check with the loss as a fault: a leader whose
// renewal found its record gone made a new one at once and led beside a
// process whose lease a second loss had taken).
func (r *Reference) afterTerm() (Record, time.Duration, bool) {
	if r.mistake&mLossSeenOnly != 0 || r.last.Version == 0 {
		return Record{}, 0, false
	}
	return r.last, r.lastAt, true
}

// ownRenewal reports whether cur, read after a conflict of term's
// renewal or release, is this term's own earlier renewal, whose outcome
// was not known: of this process's PID, of the term's epoch, and made by
// one of the renewals tried since the term's last known write (its
// nonce). A store that names no writes (nonce 0: the file stores) makes
// no versions again while its processes live, and no other term has the
// epoch. A server that lost its data does: another process of the same
// PID (another PID namespace) may hold a record of that epoch (a check
// with the loss and shared PIDs as faults: two led, in 17 of 20,000 runs
// of -faults lose,stop,samepid).
func (r *Reference) ownRenewal(cur Record, term *Term) bool {
	if cur.Holder != r.pid || cur.Epoch != term.Epoch() {
		return false
	}
	// By nonce when this term's writes carry one: a record of nonce 0 on
	// a store that names writes is an earlier leaselab's (a review).
	byEpoch := r.wrote.Nonce == 0 && cur.Nonce == 0
	return byEpoch || slices.Contains(r.tried, cur.Nonce) || r.mistake&mOwnRenewalByEpoch != 0
}

// ownRecord reports whether rec is a record this process wrote, which,
// when it does not lead, no one holds: its last known write (by version,
// and nonce where the store names writes), or one of its last term's
// renewals whose outcome it could not know (by nonce: a nonce is this
// process's alone). (A check: a leader whose renewal's reply was lost
// stepped down at its deadline, then read that renewal's record and
// waited out its 27 s lease as another's, 15 s with no leader.)
func (r *Reference) ownRecord(rec Record) bool {
	if rec.Holder != r.pid {
		return false
	}
	return r.wrote.Version != 0 && rec.Version == r.wrote.Version && rec.Nonce == r.wrote.Nonce ||
		rec.Nonce != 0 && slices.Contains(r.tried, rec.Nonce)
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
	return rec.Holder != seen.Holder || rec.Epoch != seen.Epoch || rec.Nonce != seen.Nonce && r.mistake&mNoNonce == 0
}

// newLeader calls OnNewLeader with holder, when it is not the holder it
// was last called with: a watcher that reads a record of another holder,
// or this process leading.
func (r *Reference) newLeader(holder int64) {
	if r.mistake&mToldOnce != 0 { // mutant: each holder told of once
		if slices.Contains(r.toldOnce, holder) {
			return
		}
		r.toldOnce = append(r.toldOnce, holder)
	}
	if f := r.cfg.Callbacks.OnNewLeader; f != nil && (holder != r.told || r.mistake&mToldEveryRead != 0) { // (mutant: at every read)
		r.told = holder
		f(holder)
	}
}

// failed handles a create or takeover that did not lead and returns the
// next back-off. A lost race (the lease exists, or changed) is read again
// at once (0): the read shows the winner and waits on it. Any other error
// (a full disk, an I/O error) says nothing about the lease, and trying
// again at once would spin while the disk stays full: the next write
// waits, from renewBackoff, doubling up to the watch interval.
func (r *Reference) failed(err error, backoff time.Duration) time.Duration {
	if errors.Is(err, fs.ErrExist) || errors.Is(err, ErrConflict) {
		r.p.Log(MsgLostRace, 0, 0)
		return 0
	}
	backoff = min(max(2*backoff, renewBackoff), r.cfg.WatchInterval)
	r.p.Log(MsgRefWriteFailed, int64(backoff/time.Millisecond), 0)
	return backoff
}

// create publishes a lease for this process where there is none and, if
// that worked (led), leads from it until it loses it, or until ctx ends
// (done: the elector returns); the back-off is then 0. A create that
// failed is reported, and its back-off is failed's, from backoff (0 for a
// live record: a lost race).
func (r *Reference) create(ctx context.Context, backoff time.Duration, lost func(Record) bool) (led, done bool, next time.Duration) {
	start := r.p.Mono()
	nrec, err := r.s.Create(r.pid, r.cfg.LeaseDuration)
	if err != nil {
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
		renewAt = last // at once: the created record states the shorter
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
	case r.mistake&mOwnLease != 0: // mutant: always its own
	case rec.TTL > 0:
		return rec.TTL
	case rec.Holder == Unknown:
		// Whose lease, and how long, the record does not say: wait the
		// longest this process has seen stated, or its own if longer.
		return max(r.cfg.LeaseDuration, r.longest)
	}
	return r.cfg.LeaseDuration
}

// report tells Callbacks.OnError of a store error that is none of the
// contract's outcomes.
func (r *Reference) report(op string, err error) {
	f := r.cfg.Callbacks.OnError
	if f == nil || outcome(op, err) || r.mistake&mReadErrorUnreported != 0 && op == "read" { // mutant: read errors unreported
		return
	}
	if r.mistake&mOutcomeByKind != 0 && (errors.Is(err, fs.ErrNotExist) && !missingDir(err) || errors.Is(err, fs.ErrExist)) { // mutant: by kind alone
		return
	}
	if r.mistake&mReleaseErrorUnreported != 0 && op == "release" { // mutant: a release's error unreported
		return
	}
	if r.mistake&mErrorChainLost != 0 { // mutant: the error as text
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
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "readdir" && errors.Is(pe.Err, fs.ErrNotExist)
}

// wait blocks until the record may have changed, until the monotonic
// clock reads until, or until ctx ends: on a notification when there is
// one, by polling every WatchInterval otherwise.
func (r *Reference) wait(ctx context.Context, token uint64, until time.Duration) {
	if r.mistake&mNoExpiryWake != 0 { // mutant: no wake at the expiry
		until = forever
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

// leadFrom leads with rec, written by a system call started at start,
// until the deadline passes or a renewal loses (then it returns false,
// to watch again), or until ctx ends: then it steps down, releases, and
// returns true.
func (r *Reference) leadFrom(ctx context.Context, rec Record, start time.Duration, m Msg) bool {
	if r.mistake&mDeadlineAfterWrite != 0 { // mutant: from after the write
		start = r.p.Mono()
	}
	deadline := start + r.cfg.RenewDeadlineInEffect()
	if r.p.Mono() >= deadline {
		// Paused between the write and now for longer than the deadline:
		// the lease may already be someone else's. Never act on it.
		r.p.Log(MsgRefDeadline, 0, 0)
		return false
	}
	r.wrote, r.last, r.lastAt = rec, rec, start
	r.tried = r.tried[:0]
	term := &Term{clock: r.p, epoch: rec.Epoch, deadline: deadline}
	// The user's context is ctx's child: it ends the instant ctx does,
	// whatever the elector is doing then (a store call may hang), so
	// that the user has stopped before the release is written.
	parent := ctx
	if r.mistake&mReleaseBeforeStepDown != 0 { // mutant: ended only by the step-down, after the release
		parent = context.WithoutCancel(ctx)
	}
	cctx, cancelCtx := context.WithCancel(context.WithValue(parent, termKey{}, term))
	cancel := func() { term.end(); cancelCtx() } // (Err's reason, latched as it ends)
	var uctx context.Context = termContext{cctx, term}
	if r.mistake&mPlainContext != 0 { // mutant: done only when cancelled
		uctx = cctx
	}
	// The user's context is done at the local deadline, not when the
	// loop below next looks (a renewal may hang past it): a context
	// derived from it sees only its Done, never termContext's Err. (Found
	// by a probe: with 250 ms renewals failing past the deadline, the
	// derived context outlived it until another process led.)
	if mt, ok := r.p.(MonoTimer); ok && r.mistake&(mPlainContext|mNoDeadlineTimer) == 0 {
		move := mt.AfterMono(deadline, func() {
			if !term.Valid() {
				cancel()
			}
		})
		defer move(-1)
		if r.mistake&mTimerNotMoved == 0 { // mutant: never moved
			term.moved = move
		}
	}
	if ctx.Err() != nil {
		// Ended while the write was in flight: never lead; give back
		// what was written.
		cancel()
		r.p.Log(MsgShutdown, 0, 0)
		r.release(rec, term)
		return true
	}
	r.p.Role(RoleLeader)
	r.p.Lead(rec.Epoch, deadline)
	r.p.Log(m, rec.Epoch, rec.Version) // m is MsgRefAcquired or MsgRefTakeover
	if r.mistake&mNotToldSelf == 0 {   // mutant: only watchers are told
		r.newLeader(r.pid)
	}
	if f := r.cfg.Callbacks.OnStartedLeading; f != nil {
		f(uctx)
	}
	last, backoff := start, time.Duration(0) // backoff: after a failed renewal (0: none failed)
	for {
		every := r.cfg.RenewInterval
		if backoff > 0 {
			every = backoff
		}
		next := min(last+every, deadline)
		if r.mistake&mSleepPastDeadline != 0 { // mutant: the deadline does not cut the sleep short
			next = last + every
		}
		if r.mistake&mRenewAtLease != 0 { // mutant: renews every lease
			next = min(last+r.cfg.LeaseDuration, deadline)
		}
		if r.mistake&mTermAgeLimit != 0 && r.p.Mono()-start > r.cfg.LeaseDuration { // mutant: steps down when the term is older than the lease
			r.resign(cancel)
			r.stoppedLeading()
			return false
		}
		if d := next - r.p.Mono(); d > 0 && ctx.Err() == nil {
			r.sleep(ctx, d)
		}
		if ctx.Err() != nil {
			r.shutdown(rec, term, cancel)
			return true
		}
		if r.p.Mono() >= deadline {
			r.resign(cancel)
			r.p.Log(MsgRefDeadline, 0, 0)
			if r.mistake&mNoStoppedOnDeadline == 0 {
				r.stoppedLeading()
			}
			return false
		}
		start := r.p.Mono()
		nrec, err := r.s.Renew(rec, r.cfg.LeaseDuration)
		if r.mistake&mDeadlineAfterWrite != 0 { // mutant: from after the write
			start = r.p.Mono()
		}
		switch {
		case err == nil && !term.extend(start+r.cfg.RenewDeadlineInEffect()):
			// The term lapsed while the renewal was in flight (a pause, a
			// slow store): the user's context already says so, and a new
			// version does not revive it. Step down; the lease, still
			// ours, expires as any other and a watcher takes over.
			r.resign(cancel)
			r.p.Log(MsgRefDeadline, 0, 0)
			if r.mistake&mNoStoppedOnDeadline == 0 {
				r.stoppedLeading()
			}
			return false
		case err == nil:
			rec, last, deadline = nrec, start, start+r.cfg.RenewDeadlineInEffect()
			backoff, r.wrote, r.last, r.lastAt = 0, nrec, nrec, start
			r.tried = r.tried[:0]
			if r.mistake&mStaleLead == 0 { // mutant: the new deadline unreported
				r.p.Lead(rec.Epoch, deadline)
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
			if rerr != nil && r.mistake&mConflictReadUnreported == 0 { // mutant: as before 2026-12-05
				// (Reported as any read's: errors-reported found it
				// unreported.)
				r.report("read", rerr)
			}
			if rerr == nil && cur.Version > rec.Version && r.ownRenewal(cur, term) {
				rec, r.wrote, r.last, r.lastAt = cur, cur, cur, start
				r.tried = r.tried[:0]
				last, backoff = start, renewBackoff
				// (mutant: the deadline counted from this failed attempt's start)
				if r.mistake&mOwnRenewalExtends != 0 && term.extend(start+r.cfg.RenewDeadlineInEffect()) {
					deadline = start + r.cfg.RenewDeadlineInEffect()
					r.p.Lead(rec.Epoch, deadline)
				}
				continue
			}
			r.resign(cancel)
			r.p.Log(MsgRefLost, rec.Version, 0)
			r.stoppedLeading()
			if rerr == nil && cur.Holder > 0 && cur.Holder != Unknown && r.mistake&mToldLate == 0 {
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
				r.tried = append(r.tried, nrec.Nonce) // it may have taken effect
			}
			last, backoff = start, min(max(2*backoff, renewBackoff), r.cfg.RenewInterval)
			// (mutant: as if renewed)
			if r.mistake&mRenewErrorIgnored != 0 && term.extend(start+r.cfg.RenewDeadlineInEffect()) {
				deadline, backoff = start+r.cfg.RenewDeadlineInEffect(), 0
				r.p.Lead(rec.Epoch, deadline)
			}
		}
	}
}
