package lease_test

import (
	"errors"
	"io/fs"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// portMutants are the mistakes of a port: the algorithm rewritten in the
// manner of another library or by a developer's habit (client-go's
// callbacks, a wall clock for timing, epochs computed by the client,
// Redis's KEEPTTL, a client library that retries, drift allowed for the
// wrong way, an unchecked write). helper-107's probe of the checker
// (2026-12-07) wrote them; two were missed by every property but an
// overlap of leaders that needs several faults at their worst at once,
// and are killed since by honest-role's takeover rule (spec/takeovers.go).
var portMutants = []mutant{
	{
		name: "reference~watcher-wall-clock", base: "reference",
		mistake:    "a watcher times the version it reads on the wall clock, not the monotonic one: a step forward makes a live lease look expired",
		property:   spec.HonestRole, // (the takeover rule, at run 2: a step forward, under samepid, of a watcher of the leader's PID; exclusive-leadership too, where the wall clock steps forward; a step back makes it spin first: no-busy-loop)
		exploreWhy: "no documented bound steps the wall clock",
		run:        referenceRun(lease.MistakeWatcherWallClock),
	},
	{
		name: "redis~watcher-wall-clock", base: "redis",
		mistake:    "as reference~watcher-wall-clock, over Redis",
		property:   spec.NoBusyLoop, // (as reference~watcher-wall-clock)
		exploreWhy: "the documented exploration bounds run the file variants",
		run:        serverRun(lease.MistakeWatcherWallClock, nil),
	},
	{
		name: "reference~drift-one-side", base: "reference",
		mistake:  "the local deadline is lease x (1-rho) less the slack: the drift of the leader's clock is allowed for, the watcher's not (8.86 s of 9 s at 1%, against 8.77 s)",
		property: spec.HonestRole, // (its deadline past the checker's bound on the leader's clock; exclusive-leadership where a watcher takes over that late)
		explore:  "procs 2, drifts 2, pauses 1",
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			rho := float64(cfg.DriftBound()) / 1e6
			cfg.RenewDeadline = time.Duration(float64(cfg.LeaseDuration)*(1-rho)) - 50*time.Millisecond
			return lease.RunReferenceWith(0, false)(p, s, path, cfg)
		},
	},
	{
		name: "reference~started-elector-ctx", base: "reference",
		mistake:  "OnStartedLeading is given the elector's context (the Term in it), not the term's: it ends at a shutdown only",
		property: spec.HonestRole,
		explore:  "procs 2, pauses 1",
		run:      referenceRun(lease.MistakeStartedElectorCtx),
	},
	{
		name: "reference~started-async", base: "reference",
		mistake:  "OnStartedLeading runs in an activity of its own (client-go's go OnStartedLeading(ctx)): it may run after the term ended, after OnStoppedLeading",
		property: spec.StoppedCallback,
		explore:  "procs 2, terms 1, preemptions 1",
		run:      referenceRun(lease.MistakeStartedAsync),
	},
	{
		name: "reference~epoch-from-seen", base: "reference",
		mistake:    "a create's fencing epoch is one above the highest this process has read, computed by the client, not the store's",
		property:   spec.Fencing,
		exploreWhy: "not found by procs 2, crashes 1 (270 schedules): it needs a process that never read the live record to create over a released or expired one",
		run:        referenceRun(lease.MistakeEpochFromSeen),
	},
	{
		name: "redis~epoch-from-seen", base: "redis",
		mistake:    "as reference~epoch-from-seen, over Redis (a release deletes the key: a process that never read a live record guesses 1)",
		property:   spec.StableLeadership, // (fencing too: 479 runs in 20,000)
		exploreWhy: "the documented exploration bounds run the file variants",
		run:        serverRun(lease.MistakeEpochFromSeen, nil),
	},
	{
		name: "reference~stopped-on-exit", base: "reference",
		mistake:  "a process whose context ends while it does not lead calls OnStoppedLeading as it exits (client-go's deferred call)",
		property: spec.StoppedCallback,
		explore:  "procs 2, terms 1, preemptions 1",
		run:      referenceRun(lease.MistakeStoppedOnExit),
	},
	{
		name: "redis~renew-keeps-ttl", base: "redis",
		mistake:    "a renewal keeps the key's expiry from the term's first write (Redis KEEPTTL; an etcd Put under the old lease without KeepAlive): the server expires a live leader's key a lease after its acquisition",
		property:   spec.ExclusiveLeadership,
		exploreWhy: "the documented exploration bounds run the file variants",
		run:        serverRun(0, keepTTL),
	},
	{
		name: "reference~watcher-drift-sign", base: "reference",
		mistake:  "a watcher allows for drift the wrong way: it waits lease x (1-rho) (8.91 s of 9 s), as if its own clock might run slow",
		property: spec.HonestRole, // (honest-role's takeover rule; exclusive-leadership only where the leader lives to its deadline: 3 runs in 20,000 before the rule)
		explore:  "procs 2, drifts 2, pauses 1",
		run:      referenceRun(lease.MistakeWatcherDriftSign),
	},
	{
		name: "redis~watcher-drift-sign", base: "redis",
		mistake:    "as reference~watcher-drift-sign, over Redis",
		property:   spec.HonestRole, // (honest-role's takeover rule; no overlap in 40,000 runs before it)
		exploreWhy: "the documented exploration bounds run the file variants",
		run:        serverRun(lease.MistakeWatcherDriftSign, nil),
	},
	{
		name: "reference~epoch-from-prev", base: "reference",
		mistake:    "a term's epoch is the previous record's plus one, without the boot's base and the version as its floor: a record torn by a power loss (read as held by no one known, epoch 0) is followed by epoch 1",
		property:   spec.Fencing,
		exploreWhy: "procs 2, powers 1 does not find it in 20,000 schedules: it needs a takeover after a torn record",
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeEpochFromPrev)
		},
	},
	{
		name: "reference~renew-sleep-ignores-term", base: "reference",
		mistake:  "the leader's sleep between renewals does not end with its context: the user stops at the SIGTERM, but the release waits for the next renewal's time (up to 3 s)",
		property: spec.StoppedCallback,
		explore:  "procs 2, terms 1, preemptions 1",
		run:      referenceRun(lease.MistakeRenewSleepIgnoresTerm),
	},
	{
		name: "reference~write-error-ignored", base: "reference",
		mistake:    "the record's write(2) is not checked: a failed write's empty or short temporary file is linked as the version",
		property:   spec.HonestRole, // (the takeover rule: an unreadable version its writer's acknowledged write made is judged by that writer's lease; exclusive-leadership 2 runs in 20,000)
		exploreWhy: "it needs processes of different leases, which no documented bound has",
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeWriteErrorIgnored)
		},
	},
	{
		name: "redis~client-retries", base: "redis",
		mistake:    "the client library retries a write that failed with an error once, and answers the retry's outcome (go-redis's MaxRetries): a write whose reply was lost is answered as a lost race or a conflict",
		property:   spec.StableLeadership,
		exploreWhy: "the documented exploration bounds run the file variants",
		run:        serverRun(0, clientRetries),
	},
}

// clientRetries: a client that retries each write once after an error.
func clientRetries(_ lease.Proc, s lease.Store, _ lease.Config) lease.Store {
	return retrying{s}
}

type retrying struct{ lease.Store }

func retryable(err error) bool {
	return err != nil && !errors.Is(err, lease.ErrConflict) && !errors.Is(err, fs.ErrExist)
}

func (s retrying) Create(h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Create(h, ttl)
	if retryable(err) {
		rec, err = s.Store.Create(h, ttl)
	}
	return rec, err
}

func (s retrying) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Renew(cur, ttl)
	if retryable(err) {
		rec, err = s.Store.Renew(cur, ttl)
	}
	return rec, err
}

func (s retrying) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Takeover(stale, h, ttl)
	if retryable(err) {
		rec, err = s.Store.Takeover(stale, h, ttl)
	}
	return rec, err
}

func (s retrying) Unwrap() lease.Store { return s.Store }

// keepTTL: each renewal sends the TTL left of the term's first write, as
// a client that keeps the key's expiry does.
func keepTTL(p lease.Proc, s lease.Store, _ lease.Config) lease.Store {
	return &keptTTL{Store: s, p: p}
}

type keptTTL struct {
	lease.Store
	p     lease.Proc
	since time.Duration // when the term's first write was sent
}

func (s *keptTTL) Create(h int64, ttl time.Duration) (lease.Record, error) {
	s.since = s.p.Mono()
	return s.Store.Create(h, ttl)
}

func (s *keptTTL) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	s.since = s.p.Mono()
	return s.Store.Takeover(stale, h, ttl)
}

func (s *keptTTL) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	left := max(ttl-(s.p.Mono()-s.since), time.Millisecond)
	return s.Store.Renew(cur, left)
}

func (s *keptTTL) Unwrap() lease.Store { return s.Store }
