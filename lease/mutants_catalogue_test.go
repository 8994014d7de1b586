package lease_test

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// The mutant catalogue's entries; mutants_test.go is the harness that
// registers and hunts them.

var mutants = []mutant{
	// The reference: the local deadline and the drift margin.
	{
		name: "reference~deadline-after-write", base: "reference",
		mistake:    "the local deadline is measured from when the lease write returned, not from before it was sent",
		property:   spec.HonestRole, // (exclusive-leadership too, where a pause lands between the two; honest-role judges every deadline since 2026-12-05)
		run:        referenceRun(lease.MistakeDeadlineAfterWrite),
		exploreWhy: "the pause must land after the link, for less than a lease, and the watcher's takeover come first of two steps at one instant: procs 2, pauses 1 found it through a pause longer than a lease, whose write the listing after the link now reports superseded (procs 2, pauses 1, preemptions 1: not in 20,000 schedules)",
	},
	{
		name: "reference~no-drift-factor", base: "reference",
		mistake:  "the local deadline is the lease less the slack, without the drift factor (1-rho)/(1+rho)",
		property: spec.HonestRole, // (and exclusive-leadership under drift)
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			cfg.RenewDeadline = cfg.LeaseDuration - 50*time.Millisecond
			return lease.RunReferenceWith(0, false)(p, s, path, cfg)
		},
		explore: "procs 2, drifts 2, pauses 1",
		confirm: &confirmation{faults: "drift,emfile"},
	},
	{
		// What stable-leadership's rule on terms cut short finds (2026-12-07).
		name: "reference~deadline-far-short", base: "reference",
		mistake:  "the local deadline is 3.2 s of a 9 s lease (a renew deadline the config's check would refuse): the leader steps down whenever a renewal is 0.2 s late, though the store backs its term for 5.5 s more, and takes its record back at once",
		property: spec.StableLeadership,
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			cfg.RenewDeadline = 3200 * time.Millisecond
			return lease.RunReferenceWith(0, false)(p, s, path, cfg)
		},
		explore: "procs 2, pauses 1",
	},
	{
		// What stable-leadership's rule on one's own record finds
		// (2026-12-07).
		name: "reference~never-own", base: "reference",
		mistake:    "a process that stepped down never takes its own record back: it waits the record out as another's, a whole lease from when it reads it, with nobody leading, after its renewals failed",
		property:   spec.StableLeadership,
		run:        referenceRun(lease.MistakeNeverOwn),
		exploreWhy: "it shows only where the leader steps down by its deadline and no other process takes over first (renewals failing one by one, or its own EMFILE stretch): explore (procs 2, pauses 1) runs 808 schedules without one",
	},
	{
		// What the same rule finds since it counts a renewal that came
		// back after the term lapsed (2026-12-07).
		name: "reference~late-renewal-not-own", base: "reference",
		mistake:    "a renewal the store acknowledged after the term lapsed (a pause inside it) is not counted as this process's record: it waits it out as another's, a lease after it resumed, with nobody leading (the reference before 2026-12-07)",
		property:   spec.StableLeadership,
		run:        referenceRun(lease.MistakeLateRenewalNotOwn),
		exploreWhy: "it needs a pause inside a renewal, after its link, past the deadline, and no other process to take over first",
	},
	{
		// What no-own-exit's rule on ending in time finds (2026-12-07).
		name: "reference~wait-ignores-term", base: "reference",
		mistake:  "a watcher's wait does not end with its context: told to stop (SIGTERM), a watcher ends only when its wait does, at the next change or the lease's expiry: a renew interval, or a lease with a dead leader (systemctl stop waits, or kills it)",
		property: spec.NoOwnExit,
		run:      referenceRun(lease.MistakeWaitIgnoresTerm),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		name: "reference~holder-not-version", base: "reference",
		mistake:  "a watcher restarts its expiry clock when the holder changes, not the version: it takes over a lease the leader keeps renewing",
		property: spec.ExclusiveLeadership,
		run:      referenceRun(lease.MistakeHolderNotVersion),
		explore:  "procs 3, preemptions 2",
	},
	// The reference's store.
	{
		name: "reference~version-skip", base: "reference",
		mistake:  "a renewal links version cur+2 (the next version counted twice): a reader that lists the directory still finds it, but the register's next version is cur+1",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeVersionSkip)
		},
		exploreWhy: "the register's model sees the skip only when a renewal's history pins the version it replaced, which an exploration's same-instant runs do not (procs 2, crashes 1: none of its 268 schedules; procs 3, preemptions 2, which found it when readers scanned forward: not in 20,000)",
	},
	// The reference's removal of old versions (issue 16).
	{
		name: "reference~no-verify", base: "reference",
		mistake:  "a write trusts its link and never lists the directory after it: a writer paused before its link re-creates a version that was removed and believes it won",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeNoVerify)
		},
		explore: "procs 2, pauses 1",
	},
	{
		name: "reference~remove-before-link", base: "reference",
		mistake:  "a write removes the versions it replaces before it links their successor: a reader in between finds no version, takes it for no lease and acquires",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeRemoveBeforeLink)
		},
		explore: "procs 2, pauses 1",
	},
	{
		name: "reference~probe-from-one", base: "reference",
		mistake:  "the reader probes versions from 1 up, as if they were contiguous from 1: once version 1 is removed it finds no lease",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeProbeFromOne)
		},
		exploreWhy: "a process that reads after version 1 is gone finds no lease and tries to create one at once, again and again, to the system-call cap: each schedule is thousands of steps, each a choice point",
	},
	{
		name: "reference~no-sweep", base: "reference",
		mistake:  "no version is ever removed: a file a renewal, 28,800 a day at 3 s",
		property: spec.BoundedFiles,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeNoSweep)
		},
		exploreWhy: "the bound for two processes is 15 names, more than the nine renewals of an exploration's 27 s horizon leave",
	},
	{
		// What bounded-files' look at the names left at the end finds
		// (2026-12-07; a probe's mutants).
		name: "reference~keep-stale-temps", base: "reference",
		mistake:  "a writer's sweep never removes other processes' stale temporary files: a writer killed mid-write leaves one for good (a crash-looping service, one a crash)",
		property: spec.BoundedFiles,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeKeepStaleTemps)
		},
		exploreWhy: "the file is judged when the run ends, after a live process's two writes since the death: explore's horizon and bounds leave few",
	},
	{
		name: "reference~keep-boot-records", base: "reference",
		mistake:  "old boot records are never removed: a file a boot, for good",
		property: spec.BoundedFiles,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeKeepBootRecords)
		},
		exploreWhy: "it needs a power loss, and a write after the restart",
	},
	{
		// Found invisible by a probe (2026-12-05) until the simulated disk
		// could run out of blocks alone (sim.DiskNoBlocks).
		name: "reference~leak-temp-on-write-error", base: "reference",
		mistake:  "a temporary file whose write failed is left behind: a file a renewal while the disk has inodes but no blocks",
		property: spec.BoundedFiles,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeLeakTempOnWriteError)
		},
		exploreWhy: "needs a disk whose writes fail while its creates succeed for many renewals; explore injects one ENOSPC",
		confirm:    &confirmation{faults: "diskfull"},
	},
	{
		// The bug the same disk found in the reference itself (2026-12-05).
		name: "reference~read-retries-boot", base: "reference",
		mistake:  "every read tries again to make the boot record after it failed: on a disk with inodes but no blocks the watcher's own temporary file wakes its wait for a change, a busy loop",
		property: spec.NoBusyLoop,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeReadRetriesBoot)
		},
		exploreWhy: "needs a disk whose writes fail while its creates succeed; explore injects one ENOSPC",
		confirm:    &confirmation{faults: "diskfull"},
	},
	{
		// What processes that share a PID (containers, each in a PID
		// namespace of its own, on one lock directory) found (2026-12-05).
		name: "reference~temp-exist-is-record", base: "reference",
		mistake:  "a temporary name that exists (another process's of the same PID) fails the write with EEXIST, which a create reports as a lease that exists",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeTempExistIsRecord)
		},
		exploreWhy: "explore gives every process a PID of its own",
	},
	{
		name: "reference~own-by-pid", base: "reference",
		mistake:    "a record that names this process's PID is taken back at once as its own, whoever wrote it",
		property:   spec.ExclusiveLeadership,
		run:        referenceRun(lease.MistakeOwnByPID),
		exploreWhy: "explore gives every process a PID of its own",
	},
	{
		// What leader-known, the property of OnNewLeader, finds
		// (2026-12-05).
		name: "reference~not-told-self", base: "reference",
		mistake:  "a process that leads does not tell its own OnNewLeader: its user goes on believing the leader it last watched leads",
		property: spec.LeaderKnown,
		run:      referenceRun(lease.MistakeNotToldSelf),
		explore:  "procs 2, crashes 1",
	},
	{
		// What failover-bound judges since it counts the store's holder
		// as well as the leader its user saw (2026-12-06).
		name: "reference~no-release-while-acquiring", base: "reference",
		mistake:  "a SIGTERM that lands while the acquiring write is in flight is obeyed, the process never leads, but the record it wrote is not released: its successors wait out the lease",
		property: spec.FailoverBound,
		run:      referenceRun(lease.MistakeNoReleaseWhileAcquiring),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		// What no-busy-loop's bound on failed calls finds (2026-12-06).
		name: "reference~read-retry-no-doubling", base: "reference",
		mistake:    "a watcher whose read failed tries again every 10 ms, never doubling the wait: a read that keeps failing is retried a hundred times a second, under no-busy-loop's bound on calls",
		property:   spec.NoBusyLoop,
		run:        referenceRun(lease.MistakeReadRetryNoDoubling),
		exploreWhy: "it needs a read that fails for a second on end (a full disk's or EMFILE's stretch), which explore does not inject (one error)",
	},
	{
		// What no-busy-loop's bound on wakes finds (2026-12-07).
		name: "reference~renew-often", base: "reference",
		mistake:  "the leader renews every RenewInterval/30 (100 ms at the post's intervals): thirty times the writes a term needs, each waiting between tries, so under no-busy-loop's bound on calls (a probe's: 465 renewals against 15 in 48 s)",
		property: spec.NoBusyLoop,
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			cfg.RenewInterval /= 30
			return referenceRun(0)(p, s, path, cfg)
		},
		explore: "procs 2, crashes 1",
	},
	{
		name: "reference~poll-though-notified", base: "reference",
		mistake:  "watchers poll every 50 ms although the directory's notifications tell them of every change (Poll set, the watch interval 50 ms): a listing twenty times a second (a probe's: 1,959 against 123 in 48 s)",
		property: spec.NoBusyLoop,
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			cfg.Poll, cfg.WatchInterval = true, 50*time.Millisecond
			return referenceRun(0)(p, s, path, cfg)
		},
		explore: "procs 2, crashes 1",
	},
	{
		name: "reference~backoff-cap-50ms", base: "reference",
		mistake:  "the algorithm takes the watch interval for 50 ms: a back-off after a failed write or read stops doubling at 50 ms (and a watcher without notifications would poll every 50 ms), so a failing store is retried twenty times a second, under the bound on failed calls (36)",
		property: spec.NoBusyLoop,
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			cfg.WatchInterval = 50 * time.Millisecond
			return referenceRun(0)(p, s, path, cfg)
		},
		exploreWhy: "it needs a store that fails for a second on end (a full disk's or EMFILE's stretch), which explore does not inject (one error)",
	},
	{
		// What stopped-callback's look back at ended terms finds
		// (2026-12-07).
		name: "reference~term-shared", base: "reference",
		mistake:  "one Term value serves every term of the process, reset as each begins: an earlier term's context, done, finds its Term valid again, with the new term's epoch (an action of the old term, delayed, passes its check and is fenced as the new term's)",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeTermShared),
		explore:  "procs 2, pauses 1",
	},
	{
		// What bounded-activities finds (2026-12-06).
		name: "reference~leak-per-renewal", base: "reference",
		mistake:  "each renewal starts a goroutine that waits on a context nobody ends: one more left behind every renewal, nothing else changed",
		property: spec.BoundedActivities,
		run:      referenceRun(lease.MistakeLeakPerRenewal),
		explore:  "procs 2, crashes 1",
	},
	{
		// What bounded-activities' count of armed timers finds
		// (2026-12-07; a probe's mutant).
		name: "reference~timer-per-renewal", base: "reference",
		mistake:  "each renewal arms a timer (a watchdog, a day long) and never stops it: one more armed every renewal, 28,800 a day at 3 s, each memory on the real runtime",
		property: spec.BoundedActivities,
		run:      referenceRun(lease.MistakeTimerPerRenewal),
		explore:  "procs 2, crashes 1",
	},
	{
		// What stable-leadership's rule that a leader keeps renewing
		// finds (2026-12-07; a probe's mutant).
		name: "reference~backoff-to-deadline", base: "reference",
		mistake:    "a failed renewal's back-off doubles up to the renew deadline, not the renew interval: a leader whose store recovers tries again only after its deadline, steps down, and starts a new term",
		property:   spec.StableLeadership,
		run:        referenceRun(lease.MistakeBackoffToDeadline),
		exploreWhy: "it needs renewals failing for seconds (a full disk's stretch), which explore does not inject (one error)",
	},
	{
		// What failover-bound's rule on a graceful exit finds (2026-12-07;
		// a probe's mutant M100).
		name: "reference~release-gives-up", base: "reference",
		mistake:  "a SIGTERMed leader's release gives up after its first error and logs \"Lease released\" all the same: a one-shot I/O error leaves the lease to expire, and its successors wait it out (no property caught it: failover-bound excuses a window with a fault in it, and the release's error is one)",
		property: spec.FailoverBound,
		run:      referenceRun(lease.MistakeReleaseGivesUp),
		explore:  "procs 3, crashes 1, terms 1, fserrs 1",
	},
	{
		// The same rule, on a record of the term written by a renewal
		// whose outcome the leader could not know (2026-12-07; a probe's).
		name: "reference~release-skips-own-renewal", base: "reference",
		mistake:  "a SIGTERMed leader's release, in conflict with its own renewal whose outcome it could not know (its listing failed after the link), takes that record for another's and skips it: the lease is left to expire",
		property: spec.FailoverBound,
		run:      referenceRun(lease.MistakeReleaseSkipsOwnRenewal),
		explore:  "procs 3, crashes 1, terms 1, fserrs 1",
	},
	{
		// The same rule on a write that came back past its deadline
		// (2026-12-07; a probe's revert of 888e21a).
		name: "reference~own-record-not-released", base: "reference",
		mistake:    "a SIGTERM that finds the process not leading, the record it saw its own last write (a renewal or create acknowledged past its deadline, after a pause inside it), logs \"Not leading, nothing to release\" and leaves that record to expire: its successors wait out the lease (the reference before 2026-12-07; reverted, it passed 60,000 runs of every property)",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeOwnRecordNotReleased),
		exploreWhy: "it needs a pause inside a write, past the deadline, with a SIGTERM pending at its SIGCONT",
	},
	{
		// The same rule for a leader whose deadline passed while it
		// stepped down or was paused, its SIGTERM pending (2026-12-07,
		// evening; the reference before it).
		name: "reference~late-release-skipped", base: "reference",
		mistake:    "a SIGTERMed leader whose local deadline passed before its release (paused with the signal pending, or slow to step down) writes nothing and leaves its own record to expire, where a compare-and-set release frees it at once (the reference before 2026-12-07's evening)",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeLateReleaseSkipped),
		exploreWhy: "it needs a pause past the deadline with a SIGTERM pending at its SIGCONT",
	},
	{
		// A probe's (helper-96, 2026-12-07): on a server its kill is
		// quick (below); on the file store a renewal meets another's
		// record before its deadline only through its own renewal of
		// unknown outcome and a failed read: two errors of one process
		// a few calls apart, which the default command missed until its
		// swarms chained errors in bursts (sim.chainErrors).
		name: "reference~no-cancel-lost", base: "reference",
		mistake:    "a renewal that finds another's record steps down (its role, the log line, OnStoppedLeading) but leaves the user's context live; the deadline's timer, disarmed as the term ends, never ends it",
		property:   spec.HonestRole,
		run:        referenceRun(lease.MistakeNoCancelLost),
		exploreWhy: "it needs two injected errors on one process; the documented bounds inject one",
	},
	{
		// What the simulated user's third look at its term finds
		// (2026-12-06): Term.Valid, which the reference itself had wrong.
		name: "reference~valid-until-deadline", base: "reference",
		mistake:  "Term.Valid looks at the local deadline alone: after a SIGTERM's release, or a lost lease, it says true until the deadline while the next leader leads (the reference's own behaviour until 2026-12-06)",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeValidUntilDeadline),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		// What stopped-callback's rule on the SIGTERM handler finds
		// (2026-12-06).
		name: "reference~term-cancels-late", base: "reference",
		mistake:  "the user's context ends when the renew loop notices the SIGTERM (it steps down, then releases), not when the handler runs: a store call that hangs keeps the user acting up to the deadline",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeTermCancelsLate),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		// What the look before a due timer fires finds (2026-12-06).
		name: "reference~err-trusts-timer", base: "reference",
		mistake:  "the user's context is a plain one ended by the deadline's timer alone (kept), its Err never reading the clock: a user whose code runs before the timer's goroutine sees it live past the deadline",
		property: spec.HonestRole,
		run:      referenceRun(lease.MistakeErrTrustsTimer),
		explore:  "procs 2, pauses 1",
	},
	{
		name: "reference~told-once", base: "reference",
		mistake:    "OnNewLeader is told of each holder once: a leader that comes back after another is not told of again",
		property:   spec.LeaderKnown,
		run:        referenceRun(lease.MistakeToldOnce),
		exploreWhy: "it needs a leader back after another, which one fault in 27 s does not make",
	},
	{
		// What errors-reported, the property of OnError, finds
		// (2026-12-05).
		name: "reference~read-error-unreported", base: "reference",
		mistake:  "a read that fails with an I/O error is not reported to OnError: a user counting errors, or run exiting on a refusal, never hears of it",
		property: spec.ErrorsReported,
		run:      referenceRun(lease.MistakeReadErrorUnreported),
		explore:  "procs 2, crashes 1, fserrs 1",
	},
	{
		name: "reference~conflict-read-unreported", base: "reference",
		mistake:    "the read after a renewal's conflict does not report its I/O error (the reference before 2026-12-05, found by errors-reported)",
		property:   spec.ErrorsReported,
		run:        referenceRun(lease.MistakeConflictReadUnreported),
		exploreWhy: "it needs a renewal's conflict and then a failed read, which one fault does not make",
	},
	{
		name: "reference~read-error-is-garbage", base: "reference",
		mistake:  "a read error not in a list of those that may pass (ENOSPC, EACCES, ESTALE are not) makes the version garbage held by no one, cached: a watcher with a shorter lease takes over a longer one it could not read (the reference before this fix, 2026-12-05)",
		property: spec.ExclusiveLeadership,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeReadErrorIsGarbage)
		},
		exploreWhy: "it needs processes of different leases and a failed read, and explore runs one lease",
		confirm:    &confirmation{faults: "stop,fserr,emfile", runs: 20000},
		missed:     "it needs a read failing with ENOSPC (fserr draws EIO or ENOSPC) by a watcher with a shorter lease than the holder's, a mix the default command draws rarely (found at run 47,618 of 50,000 at seed 3)",
	},
	{
		name: "reference~error-chain-lost", base: "reference",
		mistake:  "OnError is given the store's error as text (wrapped with %v): errors.Is no longer finds it, and leaselab run's exit on a refused write never comes",
		property: spec.ErrorsReported,
		run:      referenceRun(lease.MistakeErrorChainLost),
		explore:  "procs 2, crashes 1, fserrs 1",
	},
	{
		name: "reference~release-error-unreported", base: "reference",
		mistake:  "a release's error on shutdown is not reported and the release given up: the process exits, and its user never hears of it",
		property: spec.ErrorsReported,
		run:      referenceRun(lease.MistakeReleaseErrorUnreported),
		explore:  "procs 3, crashes 1, terms 1, fserrs 1",
	},
	{
		name: "reference~told-every-read", base: "reference",
		mistake:  "OnNewLeader is called at every read that names a holder, not when the holder changes",
		property: spec.LeaderKnown,
		run:      referenceRun(lease.MistakeToldEveryRead),
		explore:  "procs 2, crashes 1",
	},
	{
		name: "reference~sleep-past-deadline", base: "reference",
		mistake:    "the renew loop sleeps until its next renewal even past its local deadline: the timer ends the user's context on time, but OnStoppedLeading comes up to a renew interval late, after the next leader's OnStartedLeading",
		property:   spec.StoppedCallback,
		run:        referenceRun(lease.MistakeSleepPastDeadline),
		exploreWhy: "it shows only when a running leader's renewals fail until its local deadline (a full disk, descriptors exhausted, a server unreachable, for a lease): no exploration bound injects that",
	},
	{
		name: "reference~told-late", base: "reference",
		mistake:  "OnNewLeader is told of a new holder only at the next read that names it again, a poll late; a leader whose renewal found another's record does not tell of it",
		property: spec.LeaderKnown,
		run:      referenceRun(lease.MistakeToldLate),
		explore:  "procs 2, crashes 1",
	},
	{
		name: "reference~keep-one", base: "reference",
		mistake:  "the sweep keeps only the newest version, not the newest two",
		property: spec.LinearizableStore,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeKeepOne)
		},
		exploreWhy: "argued harmless",
		harmless:   "the highest version is never removed and every write is verified by the listing after its link, so the version below it is needed by no one: a reader whose version was removed between its listing and its read lists again",
	},
	{
		name: "reference~epoch-not-incremented", base: "reference",
		mistake:  "a takeover keeps the stale record's epoch instead of starting a new one",
		property: spec.Fencing,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeStaleEpoch)
		},
		explore: "procs 2, crashes 1",
	},
	{
		name: "reference~boot-record-not-fsynced", base: "reference",
		mistake:  "the boot record (data and directory) is not fsynced: after a power loss the boot's epoch base, and epochs, repeat",
		property: spec.Fencing,
		newStore: func(p lease.Proc, path string) lease.Store {
			return &lease.VersionedFile{FS: p, Path: path, PID: int64(p.PID()), Boot: lease.BootOf(p), NoDirSync: true}
		},
		explore: "procs 2, powers 1",
	},
	{
		name: "reference~no-dirsync-after-link", base: "reference",
		mistake:  "without boot records, the directory is not fsynced after the link that starts a term: a power loss takes the epoch back",
		property: spec.Fencing,
		newStore: func(p lease.Proc, path string) lease.Store {
			return &lease.VersionedFile{FS: p, Path: path, PID: int64(p.PID()), NoDirSync: true}
		},
		explore: "procs 2, powers 1",
	},
	// The reference's watching.
	{
		name: "reference~no-expiry-wake", base: "reference",
		mistake:  "a notified watcher waits for a change only, not also for the instant the lease it saw can expire",
		property: spec.NoWedge,
		run:      referenceRun(lease.MistakeNoExpiryWake),
		explore:  "procs 2, crashes 1",
	},
	{
		name: "reference~token-after-read", base: "reference",
		mistake:    "the change token is taken after reading the record: a release between the read and the token is never woken for",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeTokenAfterRead),
		exploreWhy: "the release must land between a watcher's read and its token, an in-memory step: explore -procs 2 -terms 1 -preemptions 1 does not find it in 20,000 of its 32,690 schedules",
		// PCT with -faults term found it at run 733 while a signal handler
		// released beside the renewal loop, at run 7,152 once the elector
		// released on its own goroutine (lease.Run), and not in 10,000 runs
		// since the store lists its directory: a write changes the
		// directory again after its link (the temporary file's removal,
		// the sweep), which wakes a watcher whose token came late unless
		// those steps too land before the token. The default command
		// still finds it (run 3,153 when last measured, 9,795 before
		// mixed configurations joined the swarm): a plain kill.
	},
	// The reference's leadership as its user sees it.
	{
		name: "reference~plain-context", base: "reference",
		mistake:  "the user's context is a plain cancellable context, ended when the renew loop gets round to it, not at the local deadline",
		property: spec.HonestRole,
		run:      referenceRun(lease.MistakePlainContext),
		explore:  "procs 2, pauses 1",
	},
	{
		// Found by a probe on the real kernel (2026-12-04), which the
		// checker could not see while it judged the leader context's own
		// Err: a context derived from the user's sees only Done.
		name: "reference~no-deadline-timer", base: "reference",
		mistake:  "no timer ends the user's context at the local deadline: its Err lapses then, but its Done, all a derived context sees, closes only when the renew loop gets round to it",
		property: spec.HonestRole,
		run:      referenceRun(lease.MistakeNoDeadlineTimer),
		explore:  "procs 2, pauses 1",
	},
	{
		name: "reference~timer-not-moved", base: "reference",
		mistake:  "the timer that ends the user's context at the local deadline is set for the term's first deadline and not moved by renewals: after it, a derived context outlives the deadline as without a timer",
		property: spec.HonestRole,
		run:      referenceRun(lease.MistakeTimerNotMoved),
		explore:  "procs 2, pauses 1",
	},
	{
		// Found by a probe (2026-12-05) when nothing judged the user's
		// OnStoppedLeading: the checker's new property stopped-callback.
		name: "reference~no-stopped-on-deadline", base: "reference",
		mistake:  "a leader that steps down at its local deadline never calls OnStoppedLeading: a user who stops its work there never does",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeNoStoppedOnDeadline),
		explore:  "procs 2, pauses 1",
	},
	{
		name: "reference~stopped-after-release", base: "reference",
		mistake:  "on SIGTERM the leader cancels its context and releases the lease before calling OnStoppedLeading: the work it stops overlaps the next leader",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeStoppedAfterRelease),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		// Found by a probe (2026-12-05): failover-bound excused every
		// hand-over within a watch interval of a failing disk's end.
		name: "reference~stale-backoff", base: "reference",
		mistake:    "a watcher's back-off from a failed write is kept when a new version shows the disk takes writes again: a SIGTERMed leader's hand-over waits it out",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeStaleBackoff),
		exploreWhy: "needs a failing disk for every write of a stretch, which explore does not inject (one ENOSPC)",
		confirm:    &confirmation{faults: "diskfull,term"},
		missed:     "it needs a full disk that outlasts a watcher's first failed writes, a write that succeeds after it, and a SIGTERM of that leader within the stale back-off: the default command's swarms seldom draw diskfull with term that close together (diskfull,term finds it at run 548)",
	},
	{
		name: "reference~renew-error-ignored", base: "reference",
		mistake:    "a renewal that fails with an I/O error extends the local deadline as if it had succeeded",
		property:   spec.ExclusiveLeadership,
		run:        referenceRun(lease.MistakeRenewErrorIgnored),
		exploreWhy: "needs three failed renewals in a row; explore injects one ENOSPC",
	},
	{
		name: "reference~release-before-stepdown", base: "reference",
		mistake: "the SIGTERM handler releases the lease, then cancels the leader's context",
		// It breaks exclusive-leadership when a watcher takes over before
		// the cancel; OnStoppedLeading after the release (stopped-callback)
		// shows in every run where the leader is sent SIGTERM.
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeReleaseBeforeStepDown),
		explore:  "procs 2, terms 1, preemptions 1",
	},
	{
		name: "reference~started-before-write", base: "reference",
		mistake: "OnStartedLeading is called before the acquiring write is confirmed, and cancelled if the write fails",
		// Both: an early start overlaps the winner's (exclusive-leadership,
		// random alone: run 1) and announces the epoch it guesses before
		// the write (one more than the highest it read: 1 for a process
		// restarted after a power loss), which repeats an earlier term's
		// (fencing: for a while the only property the default command's
		// first find broke).
		property:   spec.Fencing,
		run:        wrapRun(lease.RunReferenceWith(0, true), earlyStart),
		exploreWhy: "every process starts at one instant and system calls take no time, and overlap is judged by timestamps: the loser's early context ends at the instant the winner starts (issue 15, item 5)",
	},
	{
		name: "reference~term-age-limit", base: "reference",
		mistake:    "the leader steps down once its term is older than the lease (the term's age taken for the lease's): it flaps every 9 to 12 s",
		property:   "stable-leadership",
		run:        referenceRun(lease.MistakeTermAgeLimit),
		exploreWhy: "no exploration checks availability",
	},
	{
		name: "reference~stale-lead", base: "reference",
		mistake:  "a renewal does not report its new deadline (Proc.Lead): the role says the term ended while the user's context is live",
		property: spec.HonestRole,
		run:      referenceRun(lease.MistakeStaleLead),
		explore:  "procs 3, preemptions 2",
	},
	{
		name: "reference~renew-at-lease", base: "reference",
		mistake:    "the renew interval is stretched to the lease: the leader reaches its deadline before it renews, steps down, and a watcher takes over a lease later",
		property:   "stable-leadership",
		run:        referenceRun(lease.MistakeRenewAtLease),
		exploreWhy: "no exploration checks availability",
	},
	{
		name: "reference~read-error-waits-watch", base: "reference",
		mistake:  "after a failed read a watcher waits a whole watch interval before it reads again: one whose read of a new version failed starts that version's expiry clock that much later",
		property: spec.NoWedge,
		run:      referenceRun(lease.MistakeReadErrorWaitsWatch),
		explore:  "procs 2, crashes 1, fserrs 1",
		// Missed by the default command until swarms drew aftershocks
		// (a signal to the leader at the instant another process's
		// fault fires): the watcher's read must fail, and the leader die
		// then, before the watcher has seen its last version.
	},
	{
		name: "reference~own-lease", base: "reference",
		mistake:    "a watcher waits its own lease for a record to change, not the lease the record's writer states: during a rolling change of -lease it takes over a longer lease early",
		property:   spec.ExclusiveLeadership,
		run:        referenceRun(lease.MistakeOwnLease),
		exploreWhy: "explore runs every process with one configuration",
	},
	{
		name: "reference~takeover-rereads", base: "reference",
		mistake:    "a takeover compares against a fresh read, not the record it watched expire: it replaces a lease another watcher just took",
		property:   spec.ExclusiveLeadership,
		run:        wrapRun(lease.RunReferenceWith(0, true), takeoverRereads),
		exploreWhy: "two watchers must decide to take over before either writes: a SIGKILL and a preemption with three processes, which no documented bound has",
	},

	// flock.
	{
		name: "flock~unlock-before-cancel", base: "flock",
		mistake:    "on SIGTERM the handler unlocks, then cancels the leader's context",
		property:   spec.StoppedCallback, // (a system call made after the handler ran with the context live: since 2026-12-06; exclusive-leadership where the next leader starts before the cancel)
		run:        lease.RunFlockWith(lease.MistakeUnlockBeforeCancel),
		exploreWhy: "explore judges overlap by timestamps and has no bound with a SIGTERM and a pause (issue 15, item 5)",
	},
	{
		name: "flock~epoch-after-started", base: "flock",
		mistake:  "OnStartedLeading is called with the next epoch before the record holding it is written; a failed write cancels it",
		property: spec.Fencing,
		run:      wrapRun(lease.RunFlockWith(0), earlyStart),
		explore:  "procs 3, crashes 1, terms 1, fserrs 1",
	},
	{
		name: "flock~write-error-ignored", base: "flock",
		mistake:  "an error writing the epoch record is ignored: the process leads with an epoch the record does not hold",
		property: spec.Fencing,
		run:      wrapRun(lease.RunFlockWith(0), ignoreWriteError),
		explore:  "procs 3, crashes 1, terms 1, fserrs 1",
	},
	{
		name: "flock~poll-lock", base: "flock",
		mistake:  "a lock held by another process is polled (LOCK_NB every watch interval) instead of waited for in LOCK_EX",
		property: spec.FailoverBound,
		run:      lease.RunFlockWith(lease.MistakePollLock),
		explore:  "procs 2, crashes 1, pauses 1, preemptions 1",
	},
	{
		name: "flock~read-before-lock", base: "flock",
		mistake:  "the epoch is computed from the record read before contending, not re-read under the lock",
		property: spec.Fencing,
		run:      wrapRun(lease.RunFlockWith(0), readOnce),
		explore:  "procs 2, crashes 1, preemptions 1",
	},
	{
		name: "flock~no-backoff", base: "flock",
		mistake:    "after a failed attempt the process retries at once, with no back-off: a full disk makes it spin",
		property:   "no-busy-loop",
		run:        lease.RunFlockWith(lease.MistakeNoBackoff),
		exploreWhy: "no exploration has a stretch fault or checks system-call rates",
	},
	{
		name: "flock~no-unlock-on-term", base: "flock",
		mistake:  "the SIGTERM handler steps down but does not unlock; the process's exit releases the lock",
		property: spec.FailoverBound,
		run:      lease.RunFlockWith(lease.MistakeNoUnlockOnTerm),
		harmless: "no system call lies between its step-down and its exit(2), which releases the flock at once as LOCK_UN would, so no fault can land between them; its kills until then were false alarms of the checker: waiters backing off after a failing disk judged against the 100 ms hand-over bound (spec.TestFailoverAfterDiskStretch)",
	},
	{
		name: "flock~unreadable-from-one", base: "flock",
		mistake:    "a lock file whose record cannot be read (torn by a power loss between its write and its fsync) is continued from epoch 1, not from the wall clock",
		property:   spec.Fencing,
		run:        lease.RunFlockWith(lease.MistakeUnreadableFromOne),
		confirm:    &confirmation{faults: "kill,term,power,nobootid", runs: 20000},
		missed:     "it needs a takeover's record write torn by a power loss before its fsync, on a machine without boot ids: a signal that ends the first term, a loss aimed after that write and no boot ids in one run, which -faults all's swarm turns on together in few runs; with those kinds alone it breaks fencing in 4 runs of 20,000 (with losses at instants only: 1)",
		exploreWhy: "an exploration's processes can always tell their boot, and then the new boot's epoch base keeps the epoch after a torn record above the last boot's, whatever the floor",
	},
	{
		name: "flock~record-not-fsynced", base: "flock",
		mistake:  "on a runtime without boot ids the epoch record is not fsynced before its holder leads: a power loss takes the epoch back",
		property: spec.Fencing,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewEpochFileWith(p, path, lease.MistakeNoRecordSync, true)
		},
		explore: "procs 2, powers 1",
	},

	// The server variants: the reference over each server's model.
	{
		name: "redis~ttl-in-seconds", base: "redis",
		mistake:  "the TTL is sent in seconds where Redis's PX takes milliseconds: the server expires a 9 s lease after 9 ms",
		property: spec.ExclusiveLeadership,
		newStore: serverStore("redis", func(p lease.Proc, s lease.Store) lease.Store {
			return ttlStore{s, func(d time.Duration) time.Duration { return d / 1000 }}
		}),
		run:     serverRun(0, nil),
		explore: "procs 2, pauses 1",
	},
	{
		name: "redis~ttl-doubled", base: "redis",
		mistake:  "the TTL sent is twice the lease: the record states it, and watchers wait it out (since records state their writer's lease: a dead holder is replaced a lease late)",
		property: spec.NoWedge,
		newStore: serverStore("redis", func(p lease.Proc, s lease.Store) lease.Store {
			return ttlStore{s, func(d time.Duration) time.Duration { return 2 * d }}
		}),
		run:        serverRun(0, nil),
		exploreWhy: "no exploration runs the server variants' stores with a wrapped TTL",
	},
	{
		name: "etcd~ttl-truncated", base: "etcd",
		mistake:  "the lease TTL is rounded down to whole seconds instead of up: a 4.5 s lease (a rolling change of -lease) is dropped by the server after 4 s, before its leader's deadline",
		property: spec.ExclusiveLeadership,
		newStore: serverStore("etcd", func(p lease.Proc, s lease.Store) lease.Store {
			return ttlStore{s, func(d time.Duration) time.Duration { return d.Truncate(time.Second) }}
		}),
		run: serverRun(0, nil),
		// Argued harmless at the default 9 s lease, a whole number of
		// seconds, until swarms drew aftershocks: a mixed run's 4.5 s
		// lease is truncated to 4 s and the server drops the record
		// before its leader's deadline.
	},
	{
		name: "etcd~create-overwrites", base: "etcd",
		mistake:  "the create's transaction does not compare the key's create revision: a create that finds a live lease overwrites it",
		property: spec.ExclusiveLeadership,
		newStore: serverStore("etcd", func(p lease.Proc, s lease.Store) lease.Store { return overwritingCreate{s} }),
		run:      serverRun(0, nil),
		explore:  "procs 3, preemptions 2",
	},
	{
		name: "sql~deadline-after-request", base: "sql",
		mistake:    "the local deadline is not shortened by the request's round trip: it runs from the response, not from before the request (argued harmless in the simulator's model until 2026-12-05, where it moves a deadline by one request's latency; a deadline counted from after the call is the mistake, which honest-role now judges)",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeDeadlineAfterWrite, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
	},
	{
		// Found by a probe (2026-12-05): 3,000 runs passed it on every
		// server variant while their only I/O fault was one failed
		// request; an eio stretch (the server unreachable) now finds it.
		name: "redis~renew-error-ignored", base: "redis",
		mistake:    "a renewal that fails (the server unreachable) extends the local deadline as if it had succeeded: the leader outlives its lease, which the server expires",
		property:   spec.HonestRole, // (and exclusive-leadership)
		run:        serverRun(lease.MistakeRenewErrorIgnored, nil),
		exploreWhy: "needs renewals failing for a lease; explore injects one failed request",
	},
	{
		// The rules a check with the loss as a fault (-faults lose) found
		// wanting (2026-12-05).
		name: "redis~loss-seen-only", base: "redis",
		mistake:    "a loss of the server's data is judged by the record seen alone: that record is kept after the loss (a later one identical to it is taken for it), only its lease is waited out (not one made and lost unseen), and a term's own record is not watched after the term (with -faults lose, two leaders)",
		property:   spec.StableLeadership,
		run:        serverRun(lease.MistakeLossSeenOnly, nil),
		exploreWhy: "no exploration draws a loss of the server's data",
		// (Missed by the default command until 2026-12-05, found only by
		// -faults lose, as exclusive-leadership: since a record a
		// server's wall-clock expiry drops is waited out, a watcher that
		// never forgets what it saw wedges there.)
	},
	{
		name: "redis~loss-no-nonce", base: "redis",
		mistake:    "records are compared without their nonces: a record made anew after a loss, of the holder, epoch and version a watcher saw before it, is taken for that one; run over stores whose records name no incarnation (data an earlier leaselab wrote), since the incarnation shows such a loss too",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(lease.MistakeNoNonce, withoutLife), // (over a store of no incarnation: lifeless)
		exploreWhy: "no exploration draws a loss of the server's data",
		confirm:    &confirmation{faults: "lose,stop", runs: 20000},
		missed:     "a loss of the server's data is a fault a search draws only when named (-faults lose), and this one needs a watcher paused across it",
	},
	{
		name: "reference~outcome-by-kind", base: "reference",
		mistake:    "a store error is an outcome, and not reported, by its kind alone whatever the operation: a renewal's ENOENT (its temporary file removed by another's sweep while it was paused) goes unreported (the reference before this fix, 2026-12-05)",
		property:   spec.ErrorsReported,
		run:        referenceRun(lease.MistakeOutcomeByKind),
		exploreWhy: "it needs a writer paused between its temporary file and its link while another writes twice (a sweep), beyond the documented bounds",
	},
	{
		name: "reference~told-before-write", base: "reference",
		mistake:  "a process taking over an expired lease tells its OnNewLeader that it leads before the takeover's write has worked",
		property: spec.LeaderKnown,
		run:      referenceRun(lease.MistakeToldBeforeWrite),
		explore:  "procs 2, crashes 1",
	},
	{
		name: "redis~vanished-at-once", base: "redis",
		mistake:    "a record seen live that the server dropped without a release (its TTL run out early on a wall clock that stepped forward, an eviction) is taken for no lease at once (the reference before 2026-12-05, found by a probe on real Redis and PostgreSQL: two leaders); since creates name the record they replace (2026-12-07) the create over it holds a lease from then, not from when it was seen: no leader for up to a lease more",
		property:   spec.NoWedge,
		run:        serverRun(lease.MistakeVanishedAtOnce, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
	},
	{
		name: "redis~dropped-at-once", base: "redis",
		mistake:    "a create that took the place of a record the server dropped without a release (a wall-clock step right after another's create), a record this process never saw, leads at once (the reference before 2026-12-07, found by CI's property test at a random seed)",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(lease.MistakeDroppedAtOnce, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
		confirm:    &confirmation{faults: "all", sched: "mixed", runs: 40000},
		missed:     "it needs a wall-clock step right after another's create while this process's create is in flight: about one run in 10,000 of the default command (4 of its first 40,000), whose 10,000 runs miss it since clock readings count as aim points; they found it at run 6,179 before, at one in 20,000",
	},
	{
		name: "redis~vanished-own-lease", base: "redis",
		mistake:    "a record gone without a release that the process never saw is waited out for its own lease (or the longest it has read), not the lease the store says that record stated: a 9 s watcher leads beside a 27 s holder whose record a clock step dropped (the reference before 2026-12-07, found by a search)",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(lease.MistakeVanishedOwnLease, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
		confirm:    &confirmation{faults: "kill,term,stop,jump", sched: "mixed", runs: 30000},
		missed:     "it needs a holder of a longer lease than a watcher's (a swarm's mixed leases) whose record a step drops before that watcher ever reads it, and the holder leading on past the watcher's own lease: the default command's swarms draw that seldom (not in 60,000 runs at seed 1; the search that found it, -faults all at seed 3, within 20,000); with kill,term,stop,jump it breaks exclusive-leadership at run 27,420",
	},
	{
		name: "redis~vanished-by-version", base: "redis",
		mistake:    "a record gone without a release is named by its version alone, not its nonce too: after a loss of the server's data versions repeat, and a leader takes another's post-loss record, dropped by a clock step, for its own or for one it waited out, and leads beside its holder (the reference before 2026-12-07, found by a review); run over stores whose records name no incarnation (data an earlier leaselab wrote), since the incarnation shows such a loss too",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(lease.MistakeVanishedByVersion, withoutLife), // (over a store of no incarnation: lifeless)
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's data",
		confirm:    &confirmation{faults: "lose,jump,stop", sched: "mixed", runs: 20000},
		missed:     "a loss of the server's data is a fault a search draws only when named (-faults lose), and this one needs a wall-clock step after it that drops a post-loss record of a version another process held before",
	},
	{
		name: "redis~unknown-renewal-forgotten", base: "redis",
		mistake:    "a renewal whose reply was lost (it took effect) is not remembered by its nonce: the next renewal's conflict with it reads as another's write, and the leader steps down and waits out its own record, a lease without a leader after one lost reply (a probe's mutant, 2026-12-07: no property caught it until stable-leadership stopped excusing a conflict only the process's own writes can have caused)",
		property:   spec.StableLeadership,
		run:        serverRun(lease.MistakeUnknownRenewalForgotten, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's reply",
	},
	{
		name: "redis~own-renewal-extends", base: "redis",
		mistake:    "a renewal whose conflict shows the leader's own earlier renewal (its reply lost) counts the local deadline from this failed attempt's start, not from its last acknowledged write's (a probe's mutant, 2026-12-05: no property caught it in 220,000 runs; a pause just after the conflict gave two leaders in 18 of 30 scripted runs)",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeOwnRenewalExtends, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's reply",
	},
	{
		name: "redis~own-renewal-by-epoch", base: "redis",
		mistake:    "after a renewal's conflict, a record of the leader's PID and its term's epoch is taken for its own earlier renewal whatever its nonce (the reference before this fix, 2026-12-05)",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(lease.MistakeOwnRenewalByEpoch, nil),
		exploreWhy: "no exploration draws a loss of the server's data, nor shared PIDs",
		confirm:    &confirmation{faults: "lose,stop,samepid", runs: 20000},
		missed:     "it needs a loss of the server's data and two processes of one PID, faults a search draws only when named (-faults lose,samepid)",
	},
	{
		// The same mistake on a server, whose records can vanish or be
		// replaced before the term's deadline (a server's expiry on its
		// own clock, a loss): the kill is quick.
		name: "redis~no-cancel-lost", base: "redis",
		mistake:    "a renewal that finds another's record steps down (its role, the log line, OnStoppedLeading) but leaves the user's context live; the deadline's timer, disarmed as the term ends, never ends it",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeNoCancelLost, nil),
		exploreWhy: "it needs the server's record to go before the term's deadline (a step of the server's wall clock, a loss), which no documented bound has",
	},
	// A probe's mutants (helper-101, 2026-12-07): an engineer's edits of
	// the reference, each searched with 20,000 runs of the default
	// command (and of -faults all,lose on the servers).
	{
		name: "reference~seen-before-read", base: "reference",
		mistake:    "a watcher reads its clock for a version before its read, not after: a renewal written while the read was in flight (a pause inside it) is timed from before it existed, and taken over that much early",
		property:   spec.ExclusiveLeadership,
		run:        referenceRun(lease.MistakeSeenBeforeRead),
		exploreWhy: "it needs a watcher paused inside its read, across the leader's renewal, for long enough that the early takeover beats the leader's deadline: not tried within the documented bounds",
	},
	{
		name: "reference~deadline-from-prev-renewal", base: "reference",
		mistake:    "a renewal's local deadline is counted from the previous renewal's start, not its own: every term is a renew interval shorter than the store backs, and a renewal or two failing end it early",
		property:   spec.StableLeadership,
		run:        referenceRun(lease.MistakeDeadlineFromPrevRenewal),
		exploreWhy: "it shows where renewals fail for a while, which explore's one fault per kind seldom makes: not tried within the documented bounds",
	},
	{
		name: "reference~release-first-record", base: "reference",
		mistake:    "a SIGTERMed leader releases its term's first record, not the one its last renewal wrote: the compare-and-set conflicts, the record read after it is not its own, and the lease is left to expire",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeReleaseFirstRecord),
		exploreWhy: "it needs a SIGTERM after a renewal: not tried within the documented bounds",
	},
	{
		name: "reference~own-skips-wait", base: "reference",
		mistake:    "a watcher takes its own last record back at once even inside a back-off after a failed write, or a wait for a lost or dropped lease: on a full disk it retries its takeover without a pause",
		property:   spec.NoBusyLoop,
		run:        referenceRun(lease.MistakeOwnSkipsHold),
		exploreWhy: "no exploration has a stretch fault or checks system-call rates",
	},
	{
		name: "reference~wait-deadline", base: "reference",
		mistake:    "a watcher waits the renew deadline for a record to change, not the lease (the two durations confused): it takes over as the leader's deadline passes on its own clock, which drift and the leader's late start put after the takeover",
		property:   spec.ExclusiveLeadership,
		run:        referenceRun(lease.MistakeWaitDeadline),
		exploreWhy: "not tried within the documented bounds",
	},
	{
		name: "redis~stopped-before-cancel", base: "redis",
		mistake:    "a leader whose renewal found its record gone or replaced calls OnStoppedLeading before it cancels the term's context: a record a clock step dropped ends a term whose context is live, and the user is told it stopped while its context says it leads",
		property:   spec.StoppedCallback,
		run:        serverRun(lease.MistakeStoppedBeforeCancel, nil),
		exploreWhy: "the documented exploration bounds run the file variants, whose conflicts come after the deadline's timer has ended the context",
	},
	{
		name: "redis~release-rereads", base: "redis",
		mistake:    "a release compares against a fresh read, not the record the term wrote (a delete of whatever is there): a leader paused between its read and its release deletes its successor's record, and a third process leads beside it",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(0, func(_ lease.Proc, s lease.Store, _ lease.Config) lease.Store { return releaseRereads{s} }),
		exploreWhy: "the documented exploration bounds run the file variants",
	},
	{
		name: "redis~hint-on-vanishing", base: "redis",
		mistake:    "a release notice is trusted on a store whose records vanish: woken by a notice it takes for a release, a watcher creates without reading, over a record the server dropped early (a wall-clock step) while its holder led (the reference before a probe's fix of 2026-12-05, spec.TestStaleReleaseNoticeDoesNotSkipTheWait: two leaders then); since creates name the record they replace (2026-12-07) the create holds over it for a lease from then, not from when it was seen: no leader for up to a lease more (that script's runs pass with it)",
		property:   spec.NoWedge,
		run:        serverRun(lease.MistakeHintOnVanishing, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's notices or wall-clock expiry",
		confirm:    &confirmation{faults: "term,stop,jump,notice", sched: "mixed", runs: 3000},
		missed:     "it needs a notice duplicated or lost, a release and a wall-clock step that drops the next record in one window, and a watcher that creates on the stale notice: held in 20,000 runs of -faults all and of -faults all,lose on redis and sql (helper-101)",
	},
	{
		name: "redis~unknown-write-forgotten", base: "redis",
		mistake:    "a create or takeover whose reply was lost (it took effect) is not remembered by its nonce: the watcher waits its own record out as another's, nobody leading for a lease, a fresh deployment's first lease or a failover doubled (the reference before c53a9a3, found by helper-101)",
		property:   spec.StableLeadership,
		run:        serverRun(lease.MistakeUnknownWriteForgotten, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's reply",
		confirm:    &confirmation{faults: "all", sched: "mixed", runs: 20000, probe: waitsOutOwnRecord, probeName: "own record waited out"},
		missed:     "no property judges a process that waits out a record its own write made, whose reply was lost: stable-leadership judges terms cut short, no-wedge and failover-bound excuse a lease after a failed store call (spec.TestLostWriteReplyTakenBack pins the fix)",
	},
	// helper-105's probe (2026-12-07): a check-then-act, found late until
	// faults aimed after "any" call counted readings of the clock.
	{
		name: "reference~renew-rereads", base: "reference",
		mistake:  "a leader reads the record before each renewal and renews whatever it finds: paused between its deadline check and that read, it renews another's live record as its own and leads beside its holder",
		property: spec.ExclusiveLeadership,
		run:      referenceRun(lease.MistakeRenewRereads),
		explore:  "procs 2, pauses 1",
	},
	// Found by errors in bursts (2026-12-07, last evening): the
	// reference before it, on both kinds of store.
	{
		name: "redis~seen-release-once", base: "redis",
		mistake:    "a SIGTERM to a process that stepped down releases the record it last saw, its own, once: the conflict with its own later renewal, whose reply was lost (the conflict's read failed, and it stepped down), ends it, and its successors wait out the lease",
		property:   spec.FailoverBound,
		run:        serverRun(lease.MistakeSeenReleaseOnce, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's reply",
		confirm:    &confirmation{faults: "kill,term,stop,fserr,emfile", sched: "mixed", runs: 60000},
		missed:     "it needs a renewal whose reply is lost, the conflict's read after it failing too, and a SIGTERM to that process in the few seconds between its stepping down and its next read: the default command's swarms draw the three together too rarely for its 10,000 runs (random alone found it at run 1,745 once)",
	},
	{
		name: "reference~seen-release-once", base: "reference",
		mistake:    "a SIGTERM to a process that stepped down releases the record it last saw, its own, once: the conflict with its own later renewal of unknown outcome (its listing failed, then the conflict's read), ends it, and its successors wait out the lease",
		property:   spec.FailoverBound,
		run:        referenceRun(lease.MistakeSeenReleaseOnce),
		exploreWhy: "it needs three injected errors on one process; the documented bounds inject one",
		confirm:    &confirmation{faults: "kill,term,stop,fserr,emfile", sched: "mixed", runs: 60000},
		missed:     "it needs a renewal whose listing fails after its link, the conflict's read after it failing too, and a SIGTERM to that process before its term's deadline: three faults of one process, which errors in bursts bring together once in tens of thousands of runs (lease.TestRunReleasesOwnRenewalAfterSteppingDown and ...TakesBack... pin the fix)",
	},
}

// waitsOutOwnRecord is a probe for redis~unknown-write-forgotten: a
// process whose create or takeover failed with an unknown outcome, and
// which then, not leading in between, took over a record of its own PID
// as another's a second or more later: it waited it out ("Lease held by
// P unchanged"). (Per process, not per PID: a process restarted after a
// power loss, with its PID, rightly waits out its predecessor's record.
// A second: a takeover that failed and is tried again at once waited
// nothing.)
func waitsOutOwnRecord(tr *trace.Trace) string {
	failedAt := make([]int64, len(tr.Procs)) // the first failure of unknown outcome since the process last led (0: none)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 {
			continue
		}
		l := tr.Format(i)
		switch {
		case strings.Contains(l, "store create = unknown ") || strings.Contains(l, "store takeover = unknown "):
			if failedAt[e.Proc] == 0 {
				failedAt[e.Proc] = e.T
			}
		case strings.Contains(l, "started leading"):
			failedAt[e.Proc] = 0
		case failedAt[e.Proc] != 0 && e.T-failedAt[e.Proc] >= int64(time.Second) && !tr.Run.SharedPIDs:
			if m := ownWaited.FindStringSubmatch(l); m != nil && m[1] == strconv.Itoa(tr.Procs[e.Proc].PID) {
				return "after a write of unknown outcome, waited out its own record: " + l
			}
		}
	}
	return ""
}

var ownWaited = regexp.MustCompile(`Lease held by (\d+) unchanged`)
