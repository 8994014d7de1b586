package lease_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// The mutant catalogue's entries; mutants_test.go is the harness that
// registers and hunts them.

// mutants is the catalogue, in the README table's order: the reference's
// entries here, flock's in mutants_flock_test.go, the servers' in
// mutants_servers_test.go, a port's mistakes in mutants_ports_test.go.
var mutants = slices.Concat(referenceMutants, flockMutants, serverMutants, portMutants, storeMutants, clockMutants)

var referenceMutants = []mutant{
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
		property: spec.HonestRole, // (exclusive-leadership too; honest-role's takeover rule judges the takeover itself since helper-107: the record unread, its write acknowledged, by its writer's lease)
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
		property:   spec.HonestRole, // (exclusive-leadership too; the takeover rule judges a takeover by the lease of the process the store acknowledged the record to, since helper-109: where one PID's processes had different leases (a rolling change's restart), the shortest let it pass)
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
