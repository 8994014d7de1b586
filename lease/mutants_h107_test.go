package lease_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// helper-107's probe: mutants outside the catalogue, each searched as
// `leaselab check -variant M -faults F -runs N -keep-going` would search
// it (seed 1, the mixed scheduler): TestH107Mutants/NAME.

var (
	h107Runs   = flag.Int("h107-runs", 20_000, "TestH107Mutants: runs per mutant (-keep-going)")
	h107Faults = flag.String("h107-faults", "all", "TestH107Mutants: -faults")
	h107Seed   = flag.Uint64("h107-seed", 1, "TestH107Mutants: -seed")
	h107Keep   = flag.Bool("h107-keep-going", false, "TestH107Mutants: -keep-going")
	h107Props  = flag.String("h107-props", "", "TestH107Mutants: -props (\"\": every property but its base's documented broken ones)")
	h107Procs  = flag.Int("h107-procs", 0, "TestH107Mutants: -procs")
	h107Drift  = flag.Int64("h107-drift-bound", 0, "TestH107Mutants: the drift bound configured and drawn, in ppm (0: the default's)")
)

var h107Mutants = []mutant{
	{
		name: "reference~watcher-wall-clock", base: "reference",
		mistake:  "a watcher times the version it reads on the wall clock, not the monotonic one: a step forward makes a live lease look expired",
		property: spec.ExclusiveLeadership,
		run:      referenceRun(lease.MistakeWatcherWallClock),
	},
	{
		name: "redis~watcher-wall-clock", base: "redis",
		mistake:  "as reference~watcher-wall-clock, over Redis",
		property: spec.ExclusiveLeadership,
		run:      serverRun(lease.MistakeWatcherWallClock, nil),
	},
	{
		name: "reference~drift-one-side", base: "reference",
		mistake:  "the local deadline is lease x (1-rho) less the slack: the drift of the leader's clock is allowed for, the watcher's not (8.86 s of 9 s at 1%, against 8.77 s)",
		property: spec.ExclusiveLeadership,
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
		run:      referenceRun(lease.MistakeStartedElectorCtx),
	},
	{
		name: "reference~started-async", base: "reference",
		mistake:  "OnStartedLeading runs in an activity of its own (client-go's go OnStartedLeading(ctx)): it may run after the term ended, after OnStoppedLeading",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeStartedAsync),
	},
	{
		name: "reference~epoch-from-seen", base: "reference",
		mistake:  "a create's fencing epoch is one above the highest this process has read, computed by the client, not the store's",
		property: spec.Fencing,
		run:      referenceRun(lease.MistakeEpochFromSeen),
	},
	{
		name: "redis~epoch-from-seen", base: "redis",
		mistake:  "as reference~epoch-from-seen, over Redis (a release deletes the key: a process that never read a live record guesses 1)",
		property: spec.Fencing,
		run:      serverRun(lease.MistakeEpochFromSeen, nil),
	},
	{
		name: "reference~stopped-on-exit", base: "reference",
		mistake:  "a process whose context ends while it does not lead calls OnStoppedLeading as it exits (client-go's deferred call)",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeStoppedOnExit),
	},
	{
		name: "redis~renew-keeps-ttl", base: "redis",
		mistake:  "a renewal keeps the key's expiry from the term's first write (Redis KEEPTTL; an etcd Put under the old lease without KeepAlive): the server expires a live leader's key a lease after its acquisition",
		property: spec.ExclusiveLeadership,
		run:      serverRun(0, keepTTL),
	},
	{
		name: "reference~watcher-drift-sign", base: "reference",
		mistake:  "a watcher allows for drift the wrong way: it waits lease x (1-rho) (8.91 s of 9 s), as if its own clock might run slow",
		property: spec.ExclusiveLeadership,
		run:      referenceRun(lease.MistakeWatcherDriftSign),
	},
	{
		name: "redis~watcher-drift-sign", base: "redis",
		mistake:  "as reference~watcher-drift-sign, over Redis",
		property: spec.ExclusiveLeadership,
		run:      serverRun(lease.MistakeWatcherDriftSign, nil),
	},
	{
		name: "reference~epoch-from-prev", base: "reference",
		mistake:  "a term's epoch is the previous record's plus one, without the boot's base and the version as its floor: a record torn by a power loss (read as held by no one known, epoch 0) is followed by epoch 1",
		property: spec.Fencing,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeEpochFromPrev)
		},
	},
	{
		name: "reference~renew-sleep-ignores-term", base: "reference",
		mistake:  "the leader's sleep between renewals does not end with its context: the user stops at the SIGTERM, but the release waits for the next renewal's time (up to 3 s)",
		property: spec.StoppedCallback,
		run:      referenceRun(lease.MistakeRenewSleepIgnoresTerm),
	},
	{
		name: "reference~write-error-ignored", base: "reference",
		mistake:  "the record's write(2) is not checked: a failed write's empty or short temporary file is linked as the version",
		property: spec.NoWedge,
		newStore: func(p lease.Proc, path string) lease.Store {
			return lease.NewVersionedFileWith(p, path, lease.MistakeWriteErrorIgnored)
		},
	},
	{
		name: "redis~client-retries", base: "redis",
		mistake:  "the client library retries a write that failed with an error once, and answers the retry's outcome (go-redis's MaxRetries): a write whose reply was lost is answered as a lost race or a conflict",
		property: spec.StableLeadership,
		run:      serverRun(0, clientRetries),
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

var registerH107 = sync.OnceValue(func() error {
	if err := registerMutants(); err != nil {
		return err
	}
	for _, m := range h107Mutants {
		v, err := lease.LookupVariant(m.base)
		if err != nil {
			return err
		}
		v.Name, v.Summary = m.name, "mutant of "+m.base+": "+m.mistake
		if m.newStore != nil {
			v.NewStore = m.newStore
		}
		if m.run != nil {
			v.Run = m.run
		}
		if err := lease.Register(v); err != nil {
			return err
		}
	}
	return nil
})

// TestH107Mutants searches each mutant with -keep-going and logs the
// first violating run, the count of runs breaking each property, and the
// first run's replay line.
func TestH107Mutants(t *testing.T) {
	if err := registerH107(); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, m := range h107Mutants {
		t.Run(m.name, func(t *testing.T) {
			o, err := checkOptions(m.name, *h107Faults, "mixed", nil)
			if err != nil {
				t.Fatal(err)
			}
			o.Procs = *h107Procs
			if *h107Drift != 0 {
				o.Lease.DriftBoundPPM, o.MaxDriftPPM = *h107Drift, *h107Drift
			}
			props := checkProps(m.base)
			if *h107Props != "" {
				props = strings.Split(*h107Props, ",")
			}
			rep, err := spec.Search{Setup: o, Runs: *h107Runs, Seed: *h107Seed, KeepGoing: *h107Keep, Properties: props, Keep: 1, DropTraces: true}.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			var broken []string
			for p, n := range rep.Counts {
				if n > 0 {
					broken = append(broken, fmt.Sprintf("%s %d", p, n))
				}
			}
			sort.Strings(broken)
			first := -1
			var firstF spec.Found
			for _, f := range rep.Found {
				if first < 0 || f.Run < first {
					first, firstF = f.Run, f
				}
			}
			t.Logf("%s: %d runs (%s), violating: [%s]", m.name, rep.Runs, rep.Elapsed.Round(time.Second), strings.Join(broken, "; "))
			if first >= 0 {
				t.Logf("first: run %d (1-based %d), %s: %s\n\treplay: %s", first, first+1, firstF.Property, firstF.Violation.String(), firstF.Replay)
			}
			for _, f := range rep.Found {
				if f.Trace != nil {
					f.Trace.Release()
				}
			}
		})
	}
}
