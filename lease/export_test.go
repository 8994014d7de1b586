package lease

import (
	"context"
	"path/filepath"
)

// What the mutation tests (mutants_test.go, package lease_test) need to
// plant mistakes: compiled only into lease's own test binary, so no user
// of the package can switch a mistake on.

// Mistake is one or more of the hooked mistakes (mistake.go).
type Mistake = mistake

// The hooked mistakes, for mutants_test.go.
const (
	MistakeDeadlineAfterWrite      = mDeadlineAfterWrite
	MistakeNoExpiryWake            = mNoExpiryWake
	MistakeTokenAfterRead          = mTokenAfterRead
	MistakeHolderNotVersion        = mHolderNotVersion
	MistakePlainContext            = mPlainContext
	MistakeRenewErrorIgnored       = mRenewErrorIgnored
	MistakeReleaseBeforeStepDown   = mReleaseBeforeStepDown
	MistakeTermAgeLimit            = mTermAgeLimit
	MistakeStaleLead               = mStaleLead
	MistakeRenewAtLease            = mRenewAtLease
	MistakeReadErrorWaitsWatch     = mReadErrorWaitsWatch
	MistakeOwnLease                = mOwnLease
	MistakeNoDeadlineTimer         = mNoDeadlineTimer
	MistakeTimerNotMoved           = mTimerNotMoved
	MistakeNoStoppedOnDeadline     = mNoStoppedOnDeadline
	MistakeStoppedAfterRelease     = mStoppedAfterRelease
	MistakeStaleBackoff            = mStaleBackoff
	MistakeLeakTempOnWriteError    = mLeakTempOnWriteError
	MistakeReadRetriesBoot         = mReadRetriesBoot
	MistakeLossSeenOnly            = mLossSeenOnly
	MistakeNoNonce                 = mNoNonce
	MistakeTempExistIsRecord       = mTempExistIsRecord
	MistakeOwnByPID                = mOwnByPID
	MistakeNotToldSelf             = mNotToldSelf
	MistakeToldOnce                = mToldOnce
	MistakeReadErrorUnreported     = mReadErrorUnreported
	MistakeConflictReadUnreported  = mConflictReadUnreported
	MistakeOwnRenewalByEpoch       = mOwnRenewalByEpoch
	MistakeOutcomeByKind           = mOutcomeByKind
	MistakeToldBeforeWrite         = mToldBeforeWrite
	MistakeReadErrorIsGarbage      = mReadErrorIsGarbage
	MistakeErrorChainLost          = mErrorChainLost
	MistakeReleaseErrorUnreported  = mReleaseErrorUnreported
	MistakeToldEveryRead           = mToldEveryRead
	MistakeToldLate                = mToldLate
	MistakeVanishedAtOnce          = mVanishedAtOnce
	MistakeDroppedAtOnce           = mDroppedAtOnce
	MistakeVanishedOwnLease        = mVanishedOwnLease
	MistakeVanishedByVersion       = mVanishedByVersion
	MistakeUnknownRenewalForgotten = mUnknownRenewalForgotten
	MistakeSleepPastDeadline       = mSleepPastDeadline
	MistakeOwnRenewalExtends       = mOwnRenewalExtends
	MistakeVersionSkip             = mVersionSkip
	MistakeStaleEpoch              = mStaleEpoch
	MistakeRemoveBeforeLink        = mRemoveBeforeLink
	MistakeNoVerify                = mNoVerify
	MistakeProbeFromOne            = mProbeFromOne
	MistakeKeepOne                 = mKeepOne
	MistakeNoSweep                 = mNoSweep
	MistakeUnlockBeforeCancel      = mUnlockBeforeCancel
	MistakePollLock                = mPollLock
	MistakeNoBackoff               = mNoBackoff
	MistakeNoUnlockOnTerm          = mNoUnlockOnTerm
	MistakeNoRecordSync            = mNoRecordSync
	MistakeUnreadableFromOne       = mUnreadableFromOne
	MistakeNoReleaseWhileAcquiring = mNoReleaseWhileAcquiring
	MistakeReadRetryNoDoubling     = mReadRetryNoDoubling
	MistakeLeakPerRenewal          = mLeakPerRenewal
	MistakeValidUntilDeadline      = mValidUntilDeadline
	MistakeTermCancelsLate         = mTermCancelsLate
	MistakeErrTrustsTimer          = mErrTrustsTimer
	MistakeTermShared              = mTermShared
	MistakeNeverOwn                = mNeverOwn
	MistakeLateRenewalNotOwn       = mLateRenewalNotOwn
	MistakeWaitIgnoresTerm         = mWaitIgnoresTerm
	MistakeKeepStaleTemps          = mKeepStaleTemps
	MistakeKeepBootRecords         = mKeepBootRecords
	MistakeTimerPerRenewal         = mTimerPerRenewal
	MistakeBackoffToDeadline       = mBackoffToDeadline
	MistakeReleaseGivesUp          = mReleaseGivesUp
	MistakeReleaseSkipsOwnRenewal  = mReleaseSkipsOwnRenewal
	MistakeOwnRecordNotReleased    = mOwnRecordNotReleased
	MistakeLateReleaseSkipped      = mLateReleaseSkipped
	MistakeSeenReleaseOnce         = mSeenReleaseOnce
	MistakeRenewRereads            = mRenewRereads
	MistakeNoCancelLost            = mNoCancelLost
	MistakeSeenBeforeRead          = mSeenBeforeRead
	MistakeStoppedBeforeCancel     = mStoppedBeforeCancel
	MistakeReleaseFirstRecord      = mReleaseFirstRecord
	MistakeDeadlineFromPrevRenewal = mDeadlineFromPrevRenewal
	MistakeOwnSkipsHold            = mOwnSkipsHold
	MistakeHintOnVanishing         = mHintOnVanishing
	MistakeWaitDeadline            = mWaitDeadline
	MistakeUnknownWriteForgotten   = mUnknownWriteForgotten
	MistakeWatcherWallClock        = mWatcherWallClock
	MistakeStartedElectorCtx       = mStartedElectorCtx
	MistakeStartedAsync            = mStartedAsync
	MistakeEpochFromSeen           = mEpochFromSeen
	MistakeStoppedOnExit           = mStoppedOnExit
	MistakeWatcherDriftSign        = mWatcherDriftSign
	MistakeEpochFromPrev           = mEpochFromPrev
	MistakeRenewSleepIgnoresTerm   = mRenewSleepIgnoresTerm
	MistakeWriteErrorIgnored       = mWriteErrorIgnored
)

// RunReferenceWith is a Variant.Run for the reference algorithm with
// mistake m. Unless validate, the config is not checked against the
// deadline's inequalities (a mutant whose mistake is its config).
func RunReferenceWith(m Mistake, validate bool) func(p Proc, s Store, path string, cfg Config) error {
	return func(p Proc, s Store, path string, cfg Config) error {
		if validate {
			if err := cfg.ValidateDeadline(); err != nil {
				return err
			}
		}
		r := newReference(p, s, filepath.Dir(path), cfg)
		r.mistake = m
		r.Run()
		return nil
	}
}

// RunFlockWith is a Variant.Run for the flock election with mistake m.
func RunFlockWith(m Mistake) func(p Proc, s Store, path string, cfg Config) error {
	return func(p Proc, s Store, path string, cfg Config) error {
		f, err := NewFlockElection(p, s, path, cfg)
		if err != nil {
			return err
		}
		f.mistake = m
		f.Run()
		return nil
	}
}

// NewVersionedFileWith is the reference variant's store for p, with
// mistake m.
func NewVersionedFileWith(p Proc, path string, m Mistake) *VersionedFile {
	return &VersionedFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p), mistake: m}
}

// NewEpochFileWith is the flock variant's store for p, with mistake m;
// without boot ids if noBoot.
func NewEpochFileWith(p Proc, path string, m Mistake, noBoot bool) *EpochFile {
	s := &EpochFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p), mistake: m}
	if noBoot {
		s.Boot = nil
	}
	return s
}

// Forever is a local deadline that never passes.
const Forever = forever

// BootOf is bootOf, for stores the tests build.
func BootOf(p Proc) func() (string, error) { return bootOf(p) }

// TermContext is a leader's context for a term with epoch e that starts
// now and never passes its deadline, as a mutant that starts leading
// before its write hands its user.
func TermContext(c Clock, e int64) (context.Context, context.CancelFunc) {
	term := &Term{clock: c, epoch: e, deadline: forever}
	cctx, cancel := context.WithCancel(context.WithValue(context.Background(), termKey{}, term))
	return termContext{cctx, term}, cancel
}

// OpenTempForTest makes the store's next temporary file, as a write does
// before its link, and leaves it under way.
func (s *VersionedFile) OpenTempForTest() (string, FD, error) { return s.openTemp() }
