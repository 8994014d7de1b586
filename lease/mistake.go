package lease

import "time"

// mistake plants a realistic mistake in the algorithms, for the mutation
// tests (lease/mutants_test.go): each value names one (a mutant has one
// mistake; a set of bits ran out at 64). Only lease's own tests can set
// it (export_test.go); the zero value, which every exported constructor
// and variant uses, plants none. Each hook is one guarded line at the
// place where the mistake would be made.
type mistake uint8

// mutantState is what some mistakes keep in the reference (the field
// mut): the clocks read together at the first read (mWatcherWallClock),
// the highest epoch read or led with (mEpochFromSeen).
type mutantState struct {
	wall0   time.Time
	mono0   time.Duration
	clocked bool
	maxRead int64
}

// epochFloor returns floor, the least epoch a new term may have (its
// boot's base plus its version), or none for mEpochFromPrev, whose term
// has the previous record's epoch plus one.
func (s *VersionedFile) epochFloor(floor int64) int64 {
	if s.mistake == mEpochFromPrev { // mutant: no floor
		return 0
	}
	return floor
}

// in reports whether m is one of ms.
func (m mistake) in(ms ...mistake) bool {
	for _, x := range ms {
		if m == x {
			return true
		}
	}
	return false
}

// The mistakes with a hook in the algorithms. (Mutants that wrap a store,
// a config or a variant's Run need none.)
const (
	// Reference: the local deadline is measured from when the write
	// returned, not from before it was sent.
	mDeadlineAfterWrite mistake = iota + 1
	// Reference: a watcher with a Notifier waits for a change only, not
	// also for the instant the lease it saw can expire.
	mNoExpiryWake
	// Reference: a watcher restarts its expiry clock when the holder
	// changes, not when the version does: renewals do not count.
	mHolderNotVersion
	// Reference: the change token is taken after reading the record, so a
	// change between the read and the token is never woken for.
	mTokenAfterRead
	// Reference: the user's context is a plain cancellable context, ended
	// only when the renew loop gets round to it, not at the deadline.
	mPlainContext
	// Reference: a renewal that fails with an I/O error extends the
	// deadline as if it had succeeded.
	mRenewErrorIgnored
	// Reference: the SIGTERM handler releases the lease before it cancels
	// the leader's context.
	mReleaseBeforeStepDown
	// Reference: the renew loop steps down once the term is older than
	// the lease (confusing the term's age with the lease's).
	mTermAgeLimit
	// Reference: a renewal does not report its new deadline (Proc.Lead).
	mStaleLead
	// Reference: the leader renews every LeaseDuration instead of every
	// RenewInterval.
	mRenewAtLease
	// VersionedFile: a renewal links version cur+2, not cur+1.
	mVersionSkip
	// VersionedFile: a takeover keeps the stale record's epoch.
	mStaleEpoch
	// VersionedFile: a write removes the versions below it before it
	// links its own: for a moment the directory has no version, or only
	// an older one.
	mRemoveBeforeLink
	// VersionedFile: a write trusts its link and never lists the directory
	// after it, so a writer paused long enough re-creates a removed
	// version and believes it won.
	mNoVerify
	// VersionedFile: the reader probes versions from 1 up, as if they were
	// contiguous from 1.
	mProbeFromOne
	// VersionedFile: the sweep keeps only the newest version (harmless:
	// see MaxFiles; a reader that finds its version gone lists again).
	mKeepOne
	// VersionedFile: no version is ever removed.
	mNoSweep
	// FlockElection: on SIGTERM, unlock before cancelling the context.
	mUnlockBeforeCancel
	// FlockElection: a lock held by another process is polled (LOCK_NB
	// every WatchInterval) instead of waited for.
	mPollLock
	// FlockElection: after an error, retry at once, with no back-off.
	mNoBackoff
	// FlockElection: the SIGTERM handler does not unlock; the exit does.
	mNoUnlockOnTerm
	// EpochFile: the record is never fsynced, whether or not the machine
	// can tell its boot.
	mNoRecordSync
	// Reference: after a failed read a watcher waits a whole watch
	// interval, not a back-off from renewBackoff.
	mReadErrorWaitsWatch
	// Reference: a watcher waits its own LeaseDuration for a record to
	// change, not the lease the record's writer held it for.
	mOwnLease
	// Reference: no timer ends the user's context at the local deadline
	// (MonoTimer): its Err lapses then, its Done closes only when the
	// renew loop gets round to it.
	mNoDeadlineTimer
	// Reference: the deadline timer is set for the term's first deadline
	// and not moved when a renewal extends it.
	mTimerNotMoved
	// Reference: a leader that steps down at its local deadline does not
	// call OnStoppedLeading.
	mNoStoppedOnDeadline
	// Reference: on shutdown the leader cancels its context, releases the
	// lease, and only then calls OnStoppedLeading.
	mStoppedAfterRelease
	// Reference: a write's back-off is kept when a new version shows that
	// the disk takes writes again.
	mStaleBackoff
	// VersionedFile: a temporary file whose write failed is left behind
	// (only a write that got as far as the link removes it).
	mLeakTempOnWriteError
	// VersionedFile: every Read tries again to make the boot record, after
	// it failed (the behaviour before the fix of 2026-12-05).
	mReadRetriesBoot
	// Reference: a loss of the store's data is judged by the record seen
	// alone, as before 2026-12-05: that record is kept after the loss is
	// detected, only its lease is waited out, and a term's own last
	// record is not watched after the term.
	mLossSeenOnly
	// Reference: records are compared without their nonces, as before
	// 2026-12-05: a record made anew after a loss, of the holder, epoch
	// and version seen before it, is taken for the one seen.
	mNoNonce
	// VersionedFile: a temporary name that exists (another process's of
	// the same PID) fails the write with EEXIST, as before 2026-12-05,
	// which a create reports as a lease that exists.
	mTempExistIsRecord
	// Reference: a record that names this process's PID is taken back at
	// once as its own, whoever wrote it (another process of the same PID,
	// in another PID namespace).
	mOwnByPID
	// Reference: a process that leads does not tell its own OnNewLeader;
	// only watchers are told who leads.
	mNotToldSelf
	// Reference: OnNewLeader is told of a holder only the first time this
	// process reads it, not again after another holder came between.
	mToldOnce
	// Reference: a read that fails with an I/O error is not reported to
	// OnError (a watcher's, a leader's, a release's).
	mReadErrorUnreported
	// Reference: the read after a renewal's conflict, which tells its own
	// earlier renewal from another's write, does not report its error (as
	// before 2026-12-05).
	mConflictReadUnreported
	// Reference: after a renewal's (or a release's) conflict, a record of
	// this PID and the term's epoch is taken for this term's own earlier
	// renewal, whatever its nonce (as before this fix, 2026-12-05): after
	// a loss of the server's data, another process of the same PID may
	// have made it.
	mOwnRenewalByEpoch
	// Reference: a store error is an outcome (not reported) by its kind
	// alone, whatever the operation (as before this fix, 2026-12-05): a
	// write's ENOENT, its temporary file removed by another's sweep, goes
	// unreported.
	mOutcomeByKind
	// Reference: a process about to take over an expired lease tells its
	// OnNewLeader that it leads before its takeover's write has worked.
	mToldBeforeWrite
	// VersionedFile: a read error not in a list of those that may pass
	// (EIO, EMFILE, ...: ENOSPC, EACCES, ESTALE are not) makes the version
	// garbage held by no one, cached for its life (as before this fix,
	// 2026-12-05).
	mReadErrorIsGarbage
	// Reference: OnError is given the error as text, wrapped with %v:
	// errors.Is no longer finds what the store failed with.
	mErrorChainLost
	// Reference: a release's error (on shutdown) is not reported, and the
	// release is given up: the process exits.
	mReleaseErrorUnreported
	// Reference: OnNewLeader is called at every read that names a holder,
	// not when the holder changes.
	mToldEveryRead
	// Reference: a watcher tells OnNewLeader of a new holder only at the
	// next read that names it again, a poll late; a leader whose renewal
	// found another's record does not tell of it.
	mToldLate
	// Reference: a record seen live that its server dropped without a
	// release (an early expiry on a wall clock that stepped, an
	// eviction) is taken for no lease at once (as before 2026-12-05).
	mVanishedAtOnce
	// Reference: the renew loop sleeps until the next renewal even past
	// its local deadline: the timer ends the user's context on time, but
	// OnStoppedLeading comes up to a renew interval late, after the next
	// leader's OnStartedLeading (a probe's mutant).
	mSleepPastDeadline
	// Reference: a renewal whose conflict shows the leader's own earlier
	// renewal (its reply lost) counts the deadline from this failed
	// attempt's start, not from the last acknowledged write's (a probe's
	// mutant C).
	mOwnRenewalExtends
	// FlockElection: a lock file whose record cannot be read (torn by a
	// power loss, overwritten) is continued from epoch 1, not from the
	// wall clock (a probe's mutant A).
	mUnreadableFromOne
	// Reference: a SIGTERM that lands while the acquiring write is in
	// flight is obeyed (the process never leads) but the record it
	// wrote is not released: successors wait out the lease (a probe's
	// mutant of 2026-12-06).
	mNoReleaseWhileAcquiring
	// Reference: a watcher whose read failed tries again every
	// renewBackoff (10 ms), never doubling: a read that keeps failing
	// is retried a hundred times a second (a probe's mutant of
	// 2026-12-06).
	mReadRetryNoDoubling
	// Reference: each renewal starts an activity (a goroutine) that
	// waits for a context nobody ends: one more left behind every renewal
	// (a probe's mutant of 2026-12-06).
	mLeakPerRenewal
	// Reference: the Term's Valid looks at the local deadline only, as
	// before 2026-12-06: true after a shutdown or a lost lease until the
	// deadline, while the next leader leads (a probe).
	mValidUntilDeadline
	// Reference: the user's context ends when the renew loop notices the
	// SIGTERM (it steps down, then releases), not when the handler runs
	// (a probe's mutant of 2026-12-06).
	mTermCancelsLate
	// Reference: the user's context is a plain cancellable one whose Err
	// trusts the deadline's timer (kept) and never reads the clock: a user
	// that runs before the timer's goroutine sees it live past the
	// deadline (a probe's mutant of 2026-12-06).
	mErrTrustsTimer
	// Reference: one Term value serves every term of the process, reset
	// as each begins: an earlier term's context, done, finds its Term
	// valid again with the new epoch (a probe's mutant of 2026-12-06).
	mTermShared
	// Reference: a process never takes its own record back: after a
	// step-down it waits the record out as another's, a whole lease from
	// when it reads it (a probe's mutant of 2026-12-06).
	mNeverOwn
	// Reference: a renewal acknowledged after the term lapsed (a pause
	// inside it) is not counted as this process's record: it waits it
	// out as another's (the reference before 2026-12-07, found by a
	// probe).
	mLateRenewalNotOwn
	// Reference: a watcher's wait does not end with its context: a
	// SIGTERMed watcher ends only when the wait does, up to a lease later
	// (a probe's mutant of 2026-12-07).
	mWaitIgnoresTerm
	// VersionedFile: other processes' stale temporary files (a writer
	// killed mid-write) are never swept (a probe's mutant of 2026-12-07).
	mKeepStaleTemps
	// VersionedFile: old boot records are never removed: a file a boot
	// (a probe's mutant of 2026-12-07).
	mKeepBootRecords
	// Reference: each renewal arms a timer (a watchdog) that is never
	// stopped: one more armed every renewal (a probe's mutant of
	// 2026-12-07).
	mTimerPerRenewal
	// Reference: a failed renewal's back-off doubles up to the renew
	// deadline, not the renew interval: a leader whose store recovers
	// tries again only after its deadline (a probe's mutant of
	// 2026-12-07).
	mBackoffToDeadline
	// Reference: a create that took the place of a record its server
	// dropped without a release, a record this process never saw (made
	// and dropped between its read and its create), leads at once (the
	// reference before 2026-12-07, found by CI's property test).
	mDroppedAtOnce
	// Reference: a record gone without a release that this process never
	// saw is waited out for its own lease, or the longest it has read,
	// not the lease the store says that record stated (the reference
	// before 2026-12-07, found by a search with mixed leases).
	mVanishedOwnLease
	// Reference: a record gone without a release is named by its version
	// alone, its nonce not compared: after a loss of the server's data
	// versions repeat, and another's record is taken for one waited out
	// or for the one seen (the reference before 2026-12-07, found by a
	// review).
	mVanishedByVersion
	// Reference: a renewal whose outcome it could not know (its reply
	// lost) is not remembered by its nonce: the next renewal's conflict
	// with it reads as another's write, the leader steps down and waits
	// out its own record (a probe's mutant of 2026-12-07).
	mUnknownRenewalForgotten
	// Reference: a SIGTERMed leader's release gives up after its first
	// error, and logs "Lease released" all the same: a one-shot I/O
	// error leaves the lease to expire (a probe's mutant M100 of
	// 2026-12-07).
	mReleaseGivesUp
	// Reference: a release in conflict with the term's own renewal whose
	// outcome it could not know (it took effect) takes that record for
	// another's and skips it: the lease is left to expire (a probe's
	// mutant of 2026-12-07).
	mReleaseSkipsOwnRenewal
	// Reference: a SIGTERM that finds the process not leading, the record
	// it saw its own last write (acknowledged past its deadline), leaves
	// that record to expire (the reference before 2026-12-07, 888e21a).
	mOwnRecordNotReleased
	// Reference: a SIGTERMed leader whose local deadline passed before
	// its release (a pause, a slow OnStoppedLeading) writes nothing and
	// leaves its own record to expire (the reference before 2026-12-07's
	// evening).
	mLateReleaseSkipped
	// Reference: a renewal that finds another's record steps down (role,
	// log, OnStoppedLeading) without cancelling the user's context.
	mNoCancelLost
	// Reference: a watcher reads its clock for a version it reads before
	// the read, not after: a version written while the read was in flight
	// (a pause inside it) is timed from before it existed (helper-101).
	mSeenBeforeRead
	// Reference: a leader whose renewal found another's record calls
	// OnStoppedLeading before it cancels the term's context (helper-101).
	mStoppedBeforeCancel
	// Reference: a SIGTERMed leader releases its term's first record, not
	// the one its last renewal wrote (helper-101).
	mReleaseFirstRecord
	// Reference: a renewal's deadline is counted from the previous
	// renewal's start, not its own (helper-101).
	mDeadlineFromPrevRenewal
	// Reference: a watcher takes its own record back at once even while a
	// lost or dropped lease is waited out (helper-101).
	mOwnSkipsHold
	// Reference: a release notice is trusted on a store whose records
	// vanish: the watcher creates without reading (the reference before a
	// probe's fix of 2026-12-05; helper-101).
	mHintOnVanishing
	// Reference: a watcher waits the renew deadline for a record to
	// change, not the lease (helper-101).
	mWaitDeadline
	// Reference: a create or takeover that failed with an error does not
	// remember its nonce: a record it made all the same (its reply lost)
	// is waited out as another's (the reference before c53a9a3, found by
	// helper-101).
	mUnknownWriteForgotten
	// Reference: a SIGTERM to a process not leading releases the record
	// it last saw, its own, once: a conflict ends it, though the record
	// there may be its own later write whose outcome it could not know
	// (the reference before 2026-12-07's last evening, found by errors
	// in bursts).
	mSeenReleaseOnce
	// Reference: a leader reads the record before each renewal and renews
	// whatever it finds (check-then-act: a pause between its deadline
	// check and the read lets another's live record be renewed as its
	// own; helper-105's probe).
	mRenewRereads
	// Reference: a watcher times a version it reads on the wall clock
	// (Now), not the monotonic one: a wall clock stepped forward makes a
	// live lease look expired (helper-107).
	mWatcherWallClock
	// Reference: OnStartedLeading is given the elector's context (with
	// the Term in it), not the term's: it ends at a shutdown only, never
	// at the deadline or a lost lease (helper-107).
	mStartedElectorCtx
	// Reference: OnStartedLeading runs in an activity of its own, as
	// client-go's "go OnStartedLeading(ctx)" (helper-107).
	mStartedAsync
	// Reference: a create's fencing epoch is computed by the client, one
	// above the highest epoch this process has read, not taken from the
	// store's answer (helper-107).
	mEpochFromSeen
	// Reference: OnStoppedLeading is called when the elector returns,
	// whether or not it leads then, as client-go's deferred call
	// (helper-107).
	mStoppedOnExit
	// Reference: a watcher allows for drift the wrong way: it waits the
	// lease less the drift bound, lease x (1-rho), "in case its own clock
	// runs slow" (helper-107).
	mWatcherDriftSign
	// VersionedFile: a term's epoch is the previous record's plus one,
	// without the boot's base and the version as its floor (helper-107).
	mEpochFromPrev
	// Reference: the leader's sleep between renewals does not end with
	// its context: a SIGTERM is obeyed (the user's context ends) but the
	// release waits for the next renewal's time (helper-107).
	mRenewSleepIgnoresTerm
	// VersionedFile: a write(2) of the record that fails (ENOSPC, EIO)
	// is not checked: the temporary file, empty or short, is linked as
	// the version (helper-107).
	mWriteErrorIgnored
)
