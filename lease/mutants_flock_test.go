package lease_test

import (
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// flockMutants are the catalogue's entries for the flock variant.
var flockMutants = []mutant{
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
}
