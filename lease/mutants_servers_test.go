package lease_test

import (
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// serverMutants are the catalogue's entries for the server variants (the
// reference over each server's model); mutants_catalogue_test.go holds the
// file variants' and the probes that some entries use.
var serverMutants = []mutant{
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
		property:   spec.HonestRole,                              // (exclusive-leadership too, where a leader lives to its deadline; honest-role's takeover rule judges every takeover since helper-107)
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
		property:   spec.HonestRole, // (exclusive-leadership too, where a leader lives to its deadline; honest-role's takeover rule judges every takeover since helper-107)
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
		property:   spec.HonestRole, // (exclusive-leadership too, where a leader lives to its deadline; honest-role's takeover rule judges every takeover since helper-107)
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
