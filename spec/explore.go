package spec

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// ExploreOptions bound a systematic exploration.
type ExploreOptions struct {
	Variant string
	Procs   int
	// Budgets per run: SIGKILLs, SIGTERMs, pauses and injected ENOSPCs,
	// each at any scheduling point of any process.
	Crashes, Terms, Pauses, FSErrors int
	// Jumps steps the machine's wall clock by the lease, forward, at any
	// scheduling point (per run).
	Jumps int
	// Powers is the number of power losses per run, each at any
	// scheduling point: every process dies, the disk keeps what was
	// durable (every prefix of the metadata journal, and up to
	// TornFilesPerPowerLoss files written since their last fsync with
	// each other fate: see sim.Explore), and PowerRestart later every
	// process starts again on it.
	Powers int
	// Drifts is the number of processes whose clocks run at a rate off by
	// the drift bound the variant is configured for
	// (lease.Config.DriftBound: 1% by default), either way: each process,
	// while the budget lasts, is a choice of no drift, slow or fast.
	Drifts int
	// Preemptions bounds deviations from the default schedule.
	Preemptions int
	// DPOR orders same-instant steps by dynamic partial-order reduction
	// (explore_dpor.go) instead of the delay bound: every order of
	// dependent steps is run once, whatever Preemptions says, on one
	// core.
	DPOR bool
	// Merge cuts a run that reaches a state already searched from with
	// at least as much budget left, its steps reordered (explore_merge.go):
	// the delay-bounded search, on one core, without its equivalent
	// schedules. Not with DPOR.
	Merge bool
	// mergeEvery remembers the state at every pick, not only at the
	// first of each instant (sim.Explore.NodeEvery): more cuts, and much
	// more memory (the tests, whose toys run in one instant).
	mergeEvery bool
	// everyKill offers a process's SIGKILL after its quiet steps too
	// (sim.Explore.EveryKill): the reduced search as it was without that
	// rule, for the tests.
	everyKill bool
	// everyRace makes a reduced search take every race of every run,
	// those of the steps it replays too (TestDPORRacesSinceBranch's
	// yardstick).
	everyRace bool
	// Horizon is the simulated time of each run (default three leases).
	Horizon time.Duration
	// Skews are the wall-clock offsets a process may start with (default
	// none).
	Skews []time.Duration
	// Limit stops the search after this many schedules (0: no limit).
	Limit int
	// Workers is how many schedules are run at once when there is no
	// Limit (0: GOMAXPROCS; a Limit runs one at a time, the first Limit
	// schedules in depth-first order). The result is the same whatever
	// it is.
	Workers int
	// Properties to check (nil: all).
	Properties []string
	// Match, if set, keeps only violations it accepts (a catalogued bug).
	Match func(*trace.Trace, *Violation) bool
}

// PowerRestart is how long after a power loss the machine is up again
// and every process starts again.
const PowerRestart = time.Second

// TornFilesPerPowerLoss is how many files written since their last fsync
// a power loss may give a fate other than their new data, in an
// exploration: one is what a reader of the latest version or of a lock
// file can tell.
const TornFilesPerPowerLoss = 1

// PauseLengths are the representative pause lengths for a config: shorter
// than the renew interval, between renew and lease, and twice the lease
// (longer than the lease plus a watch, the random search's longest).
func PauseLengths(c lease.Config) []time.Duration {
	return []time.Duration{c.RenewInterval / 3, (c.RenewInterval + c.LeaseDuration) / 2, 2 * c.LeaseDuration}
}

// DriftRates are the clock rates, in parts per million, a drifting
// process may have in an exploration: slow and fast by the drift bound c
// is configured for.
func DriftRates(c lease.Config) []int64 {
	return []int64{-sim.DriftBoundOf(c), sim.DriftBoundOf(c)}
}

// ExploreViolation is the shortest counterexample found for a property.
type ExploreViolation struct {
	Violation
	Steps     int          // scheduling steps before the violation
	Decisions []sim.Choice // replays it (sim.Decisions)
	Trace     *trace.Trace
}

// ExploreResult is an exploration's outcome.
type ExploreResult struct {
	Schedules  int
	Complete   bool // every schedule within the bounds was run
	Violations []ExploreViolation
	Wall       time.Duration
	DPOR       DPORStats  // with ExploreOptions.DPOR
	Merge      MergeStats // with ExploreOptions.Merge
}

// dfs is a Chooser that replays a prefix of choices, then takes the first
// alternative at every new choice point, and records them all.
type dfs struct {
	prefix []int
	log    []sim.Choice
	ask    func(i int) // if set, told of each choice i before it is made
}

func (d *dfs) Choose(n int) int {
	if d.ask != nil {
		d.ask(len(d.log))
	}
	v := 0
	if i := len(d.log); i < len(d.prefix) {
		v = d.prefix[i]
	}
	d.log = append(d.log, sim.Choice{N: n, V: v})
	return v
}

// ExploreConfig builds the run whose choices c makes: every process starts
// at the same instant with its skew drawn from o.Skews, system calls take
// no time, timers fire on time, so that every step of concurrent
// processes is a choice of order.
func ExploreConfig(o ExploreOptions, c sim.Chooser) (sim.Config, error) {
	v, err := lease.LookupVariant(o.Variant)
	if err != nil {
		return sim.Config{}, err
	}
	lc := lease.DefaultConfig()
	cfg := sim.Config{Variant: v.Name, Lease: lc, Horizon: o.Horizon}
	if cfg.Horizon == 0 {
		cfg.Horizon = 3 * lc.LeaseDuration
	}
	drifts := 0
	for i := range o.Procs {
		ps := sim.ProcSpec{PID: 100 * (i + 1)}
		if len(o.Skews) > 1 {
			ps.Skew = o.Skews[c.Choose(len(o.Skews))]
		}
		if drifts < o.Drifts {
			if k := c.Choose(3); k > 0 {
				drifts++
				ps.DriftPPM = DriftRates(lc)[k-1]
			}
		}
		cfg.Procs = append(cfg.Procs, ps)
	}
	cfg.Chooser = c
	cfg.Explore = &sim.Explore{Chooser: c, Crashes: o.Crashes, Terms: o.Terms, Pauses: o.Pauses, FSErrors: o.FSErrors,
		PauseLengths: PauseLengths(lc), Preemptions: o.Preemptions,
		Jumps: o.Jumps, JumpSizes: []time.Duration{lc.LeaseDuration},
		Powers: o.Powers, PowerRestart: PowerRestart, TornFiles: TornFilesPerPowerLoss, DPOR: o.DPOR, EveryKill: o.everyKill}
	return cfg, nil
}

// Explore runs every schedule within the bounds, depth first: each run
// replays a prefix of choices and takes the first alternative after it;
// the next run changes the last choice that has an alternative left. It
// keeps, per property, the violation with the fewest steps (the first
// found, in depth-first order, of those with that many).
// progress, if set, is called after each schedule with the schedules run
// and the properties violated so far.
//
// Without a Limit, Workers goroutines share the tree (explore_split.go):
// a worker that finds the others idle gives them the alternatives left
// at the shallowest choice of its path, and the pieces are merged in
// depth-first order, so the result is the sequential one.
func Explore(o ExploreOptions, progress func(schedules, violations int)) (ExploreResult, error) {
	if o.Procs < 1 {
		return ExploreResult{}, fmt.Errorf("-procs %d: want at least 1", o.Procs)
	}
	start := time.Now()
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var res ExploreResult
	var err error
	if o.DPOR && o.Merge {
		return ExploreResult{}, fmt.Errorf("explore: DPOR and Merge: choose one")
	}
	if o.Merge && o.Preemptions > MaxMergeDeviations {
		return ExploreResult{}, fmt.Errorf("explore: Merge takes at most %d deviations (Preemptions %d)", MaxMergeDeviations, o.Preemptions)
	}
	if o.DPOR {
		res, err = exploreDPOR(o, o.Limit, progress)
	} else if o.Limit > 0 || workers == 1 || o.Merge {
		res, err = exploreSubtree(o, nil, o.Limit, progress, nil)
	} else {
		res, err = exploreShared(o, workers, progress)
	}
	res.Wall = time.Since(start)
	return res, err
}

// exploreSubtree explores, depth first, every schedule whose choices
// begin with root (at most limit of them, if limit is positive). If sh is
// set, it gives sh the alternatives left at the shallowest choice of its
// path whenever sh is hungry, and leaves them.
func exploreSubtree(o ExploreOptions, root []int, limit int, progress func(schedules, violations int), sh *shared) (ExploreResult, error) {
	return exploreSubtreeWith(o, root, limit, progress, sh, nil)
}

// exploreSubtreeWith is exploreSubtree; each, if set with o.Merge, is
// called with every schedule's world after its run (not with the runs
// cut short).
func exploreSubtreeWith(o ExploreOptions, root []int, limit int, progress func(schedules, violations int), sh *shared, each func(*sim.World)) (res ExploreResult, err error) {
	keep := keeper(o)
	var m *merger
	if o.Merge {
		m = newMerger()
		defer func() { res.Merge.States = len(m.seen) }()
	}
	prefix := slices.Clone(root)
	last := map[int]int{} // depth: the last alternative this piece explores there, once it gave the rest away
	top := func(log []sim.Choice, i int) int {
		if v, ok := last[i]; ok {
			return v
		}
		return log[i].N - 1
	}
	for {
		d := &dfs{prefix: prefix}
		cfg, err := ExploreConfig(o, d)
		if err != nil {
			return res, err
		}
		var tr *trace.Trace
		if m == nil {
			tr, err = sim.Run(cfg)
			if err != nil {
				return res, err
			}
		} else {
			cfg.Explore.OnNode, cfg.Explore.NodeEvery = m.onNode(d), o.mergeEvery
			w, err := sim.New(cfg)
			if err != nil {
				return res, err
			}
			w.Run()
			switch tr = w.Trace(); {
			case w.Stopped():
				res.Merge.Cut++
				tr.Release()
				tr = nil
			case each != nil:
				each(w)
			}
			w.Release() // (its trace is kept, or released above)
		}
		if tr != nil {
			res.Schedules++
			keep(&res, tr, d.log)
		}
		if progress != nil {
			progress(res.Schedules, len(res.Violations))
		}
		if sh != nil && sh.aborted() {
			return res, nil // another worker met an error: the exploration is over
		}
		if sh != nil && sh.hungry() {
			for i := len(root); i < len(d.log); i++ {
				if d.log[i].V < top(d.log, i) {
					var gift [][]int
					for v := d.log[i].V + 1; v <= top(d.log, i); v++ {
						r := make([]int, i+1)
						for j, c := range d.log[:i] {
							r[j] = c.V
						}
						r[i] = v
						gift = append(gift, r)
					}
					last[i] = d.log[i].V
					sh.give(gift)
					break
				}
			}
		}
		// Backtrack to the last choice, below the root, with an
		// alternative left.
		i := len(d.log) - 1
		for i >= len(root) && d.log[i].V >= top(d.log, i) {
			i--
		}
		if i < len(root) {
			res.Complete = true
			break
		}
		if limit > 0 && res.Schedules >= limit {
			break
		}
		prefix = prefix[:0]
		for _, c := range d.log[:i] {
			prefix = append(prefix, c.V)
		}
		prefix = append(prefix, d.log[i].V+1)
	}
	return res, nil
}

// keeper returns the function that keeps, per property, the violation
// of a schedule's trace with the fewest steps (the first found of those
// with that many), and releases a trace it keeps nothing of.
func keeper(o ExploreOptions) func(res *ExploreResult, tr *trace.Trace, log []sim.Choice) {
	want := map[string]bool{}
	for _, p := range o.Properties {
		want[p] = true
	}
	best := map[string]int{}
	return func(res *ExploreResult, tr *trace.Trace, log []sim.Choice) {
		kept := false
		for _, v := range Check(tr) {
			if v.Violation == nil || len(want) > 0 && !want[v.Property] || o.Match != nil && !o.Match(tr, v.Violation) {
				continue
			}
			steps := stepsUntil(tr, v.Violation.At)
			k, seen := best[v.Property]
			if seen && res.Violations[k].Steps <= steps {
				continue
			}
			ev := ExploreViolation{Violation: *v.Violation, Steps: steps, Decisions: append([]sim.Choice(nil), log...), Trace: tr}
			if seen {
				res.Violations[k] = ev // (its old trace is left to the collector: another property's may share it)
			} else {
				best[v.Property] = len(res.Violations)
				res.Violations = append(res.Violations, ev)
			}
			kept = true
		}
		if !kept {
			tr.Release()
		}
	}
}

// stepsUntil counts the scheduling steps (system calls, log lines,
// hand-offs, fenced actions) up to true time t.
func stepsUntil(tr *trace.Trace, t time.Duration) int {
	n := 0
	for _, e := range tr.Events {
		if e.T > int64(t) {
			break
		}
		switch e.Kind {
		case trace.EvSyscall, trace.EvLog, trace.EvSend, trace.EvFence:
			n++
		}
	}
	return n
}

// EstimateSchedules estimates the number of schedules within the bounds
// from one run: with S scheduling points per run and B injections in all,
// about S^B / B! placements, times the alternatives of each. A power
// loss's alternatives are its outcomes (sim.World.PowerLossOutcomes),
// which grow with the run: a third of those at the run's end, the mean of
// a product of two counts that grow linearly.
func EstimateSchedules(o ExploreOptions) (float64, int, error) {
	d := &dfs{}
	cfg, err := ExploreConfig(o, d)
	if err != nil {
		return 0, 0, err
	}
	w, err := sim.New(cfg)
	if err != nil {
		return 0, 0, err
	}
	w.Run()
	tr := w.Trace()
	s := float64(stepsUntil(tr, tr.End))
	power := max(1, w.PowerLossOutcomes(TornFilesPerPowerLoss)/3)
	w.Release()
	tr.Release()
	est := 1.0
	for _, k := range []struct {
		budget int
		alts   float64
	}{{o.Crashes, 1}, {o.Terms, 1}, {o.Pauses, 3}, {o.FSErrors, 1}, {o.Jumps, 1}, {o.Powers, power}, {o.Preemptions, float64(o.Procs)}} {
		for i := 1; i <= k.budget; i++ {
			est *= s * k.alts / float64(i)
		}
	}
	for range o.Procs {
		est *= math.Max(1, float64(len(o.Skews)))
	}
	// Drift: every way to pick at most Drifts processes, each slow or fast.
	drifts, ways := 0.0, 1.0
	for k := 0; k <= min(o.Drifts, o.Procs); k++ {
		drifts += ways
		ways *= float64(o.Procs-k) / float64(k+1) * 2
	}
	est *= drifts
	return est, int(s), nil
}
