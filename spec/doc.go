// Package spec says what "correct" means for a lease algorithm, as
// predicates over a run's trace (package trace), and searches for runs
// that break them: at random, exhaustively within bounds, and for each
// known bug of the post's program.
//
//   - The properties, by name ([Properties], [ParseProperties]):
//     [ExclusiveLeadership] ([CheckExclusive]: no two processes lead at
//     once, as their users' code saw its leader context: trace's
//     Leadership, not what the algorithm reports, ordered by step where
//     times tie: Interval.Overlaps), [Fencing] ([CheckFencing]: epochs strictly increase from
//     term to term and no epoch is accepted from two processes),
//     [NoWedge] ([CheckNoWedge]: no live, running process goes longer
//     than a bound with no leader and no fault), [FailoverBound]
//     ([CheckFailover]: a SIGKILL or SIGTERM of the leader is followed by
//     a new leader within a bound, and a leader told to stop leaves no
//     record of its live term behind after a single failed attempt) and
//     [LinearizableStore]
//     ([CheckLinearizable]: the store's history is linearizable against
//     the lease register of package model, with porcupine, within
//     [LinearizeTimeout]), [HonestRole] ([CheckHonestRole]: the
//     algorithm reports leading whenever its user's context is live),
//     [StableLeadership] ([CheckStableLeadership]: in quiet, once settled,
//     someone leads and no leader steps down) and [NoBusyLoop]
//     ([CheckNoBusyLoop]: no process makes more than [BusyBound] system
//     calls, nor [FailBound] failed ones, in a simulated second while
//     nothing changes, nor wakes on its own clock more often than its
//     timers allow: [WakeBase], [WakeRate], [ActWakeRate],
//     [RetryWakeBound]).
//   - [Check] evaluates every property on a run and returns a [Verdict]
//     for each: whether it applies to the variant, and the first
//     [Violation] (when, which processes, which events, what happened).
//   - The liveness bounds: [Bounds], computed by [BoundsFor] from the
//     variant's claims and the lease configuration; [Slack] absorbs the
//     simulator's system-call latency and timer lateness, [RealSlack] a
//     real machine's on a recorded trace.
//   - Random search: a [Search] runs seeded random setups of the
//     simulator ([RunSeed] derives each run's seed) and returns a
//     [Report] of what it [Found], each with the command that replays it
//     ([ReplayCommand], [SetupFlags], [SetupHash]), keeping
//     [DefaultKeep] violating runs per property unless told otherwise.
//   - Exhaustive exploration: [Explore] runs every schedule within the
//     bounds of [ExploreOptions] (processes, SIGKILLs, SIGTERMs, pauses of
//     the [PauseLengths], I/O errors, clock jumps and skews, preemptions),
//     depth first, built by [ExploreConfig], and keeps the shortest
//     counterexample of each property ([ExploreResult],
//     [ExploreViolation]); [EstimateSchedules] estimates how many
//     schedules the bounds allow. ExploreOptions.DPOR orders steps by
//     dynamic partial-order reduction instead of the delay bound
//     ([DPORStats]); ExploreOptions.Merge keeps the bound and cuts a run
//     at a state already searched from ([MergeStats]).
//   - The bug catalogue: [Bugs] lists every known way the seed variants
//     break, each a [Bug] with the search that finds it ([Bug.Search],
//     [Bug.Find], [Bug.ExploreOptions]) and a matcher that recognises it in
//     a violating trace by the events that make it up; [LookupBug] finds
//     one by ID. It is what the README's bug table lists and the
//     time-to-find benchmark measures.
//
// The package's tests hold the claims the README makes of the checker:
// random runs of the reference with every fault kind break nothing, and
// those of the flock variant only no-wedge, through a pause; every
// catalogued bug is still found, by search and by exploration (in as few
// steps as the README's table says); and lease.pml, an independent
// Promela model of the seed and reference protocols, agrees under spin.
// Package [github.com/leaselab/leaselab/spec/storetest] is the contract
// every lease.Store runs against a real server.
package spec
