package lease_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// The mutant catalogue: realistic mistakes planted in the reference, flock
// and server variants, each registered as a variant of its own (from this
// test binary only: `leaselab variants` never lists them), which the
// checker's default command must find. A mutant's name is base~mistake.
//
// Mistakes live where a developer would make them: in the algorithm
// (lease.Reference, lease.FlockElection: an unexported hook that only
// export_test.go can switch on), in a store (lease.VersionedFile,
// lease.EpochFile, or a wrapper around the server's client), in the
// algorithm's use of its store (a wrapper passed to the variant's Run), or
// in its config.

var (
	mutantTable = flag.Bool("mutant-table", false, "TestMutantsKilled: print the mutant catalogue as the README's markdown table")
	mutantRate  = flag.Int("mutant-rate", 0, "TestMutantsKilled: only count, for each mutant, the runs of the default command's first N (-keep-going) that break its property: its rate, where a first kill's run number is one draw")
	mutantLong  = flag.Bool("mutant-long", false, "TestMutantsKilled: search random and PCT alone, and the confirmations, up to 20,000 runs each, not 2,000")
)

// maxMutantRuns is the most runs a search of the table takes (-mutant-long).
const maxMutantRuns = 20_000

// defaultRuns is check's default -runs, the most the default command may
// take to kill a mutant (issue 15: at most 20,000).
const defaultRuns = 10_000

// exploreLimit caps the schedules an exploration at documented bounds may
// take to find a mutant, so that the test stays short; the first violation
// of every mutant within bounds comes far earlier.
const exploreLimit = 20_000

// A mutant is one planted mistake.
type mutant struct {
	name     string // base~mistake
	base     string // the variant it mutates
	mistake  string // the mistake, in one line
	property string // the property expected to catch it
	newStore func(p lease.Proc, path string) lease.Store
	run      func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error
	// explore names the documented exploration bounds (README,
	// "Exhaustive exploration") that cover the mistake's faults; "" when
	// none does, or the explorer cannot see it (why is in exploreWhy).
	explore    string
	exploreWhy string
	// confirm is a targeted search that finds the mistake on this branch:
	// the proof that it is a real bug while the default command cannot.
	confirm *confirmation
	// harmless, if set, argues that the mistake is no bug at the default
	// config: the test then requires the default command to find nothing.
	harmless string
	// missed, if set, says why the default command misses a real bug: a
	// finding about the checker, not a wish. The test then requires the
	// confirmation to find it and the default command not to (so that
	// the day it does, the entry is promoted to a plain kill).
	missed string
}

// confirmation is a search other than the default command's.
type confirmation struct {
	faults   string
	maxDrift int64        // ppm; 0: check's default
	sched    string       // "": random
	lease    lease.Config // zero: the default intervals
	// probe, if set, judges each run instead of spec.Check: for a
	// property this branch's checker lacks. It says what it found, or "".
	probe     func(tr *trace.Trace) string
	probeName string // what it checks, for the table
	runs      int    // 0: 2,000
}

// exploreBound is an exploration within documented bounds: the budgets
// it runs, a subset of a bound the README documents (every schedule it
// runs is one the documented exploration runs, so what it finds that one
// finds), which is named in within.
type exploreBound struct {
	run    spec.ExploreOptions
	within string
}

// The explorations, each within bounds the README documents (under
// "Exhaustive exploration" for the reference; "The flock variant" for
// flock's).
var exploreBounds = map[string]exploreBound{
	"procs 2, pauses 1":                           {spec.ExploreOptions{Procs: 2, Pauses: 1}, "procs 2, crashes 1, pauses 1"},
	"procs 2, terms 1, preemptions 1":             {spec.ExploreOptions{Procs: 2, Terms: 1, Preemptions: 1}, "procs 2, terms 1, preemptions 1"},
	"procs 2, crashes 1":                          {spec.ExploreOptions{Procs: 2, Crashes: 1}, "procs 2, crashes 1, pauses 1"},
	"procs 3, preemptions 2":                      {spec.ExploreOptions{Procs: 3, Preemptions: 2}, "procs 3, preemptions 2"},
	"procs 2, powers 1":                           {spec.ExploreOptions{Procs: 2, Powers: 1}, "procs 2, powers 1"},
	"procs 2, drifts 2, pauses 1":                 {spec.ExploreOptions{Procs: 2, Drifts: 2, Pauses: 1}, "procs 2, drifts 2, pauses 1"},
	"procs 2, crashes 1, preemptions 1":           {spec.ExploreOptions{Procs: 2, Crashes: 1, Preemptions: 1}, "procs 2, crashes 1, pauses 1, preemptions 1 (flock's)"},
	"procs 2, crashes 1, pauses 1, preemptions 1": {spec.ExploreOptions{Procs: 2, Crashes: 1, Pauses: 1, Preemptions: 1}, "procs 2, crashes 1, pauses 1, preemptions 1 (flock's)"},
	"procs 3, crashes 1, terms 1, fserrs 1":       {spec.ExploreOptions{Procs: 3, Crashes: 1, Terms: 1, FSErrors: 1}, "procs 3, crashes 1, terms 1, fserrs 1 (flock's)"},
	"procs 2, crashes 1, fserrs 1":                {spec.ExploreOptions{Procs: 2, Crashes: 1, FSErrors: 1}, "procs 2, crashes 1, fserrs 1"},
}

// referenceRun is the reference's Run with mistake m (its config checked).
func referenceRun(m lease.Mistake) func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
	return lease.RunReferenceWith(m, true)
}

// serverRun is a server variant's Run (polling) with mistake m, over the
// store as wrap makes it (nil: as it is).
func serverRun(m lease.Mistake, wrap func(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store) func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
	return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		if wrap != nil {
			s = wrap(p, s, cfg)
		}
		return lease.RunReferenceWith(m, true)(p, s, path, cfg)
	}
}

// wrapRun runs base over the store as wrap makes it.
func wrapRun(base func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error, wrap func(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store) func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
	return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		return base(p, wrap(p, s, cfg), path, cfg)
	}
}

// serverStore is the server variant's store, as wrap makes it.
func serverStore(kind string, wrap func(p lease.Proc, s lease.Store) lease.Store) func(p lease.Proc, path string) lease.Store {
	return func(p lease.Proc, path string) lease.Store {
		v, err := lease.LookupVariant(kind)
		if err != nil {
			panic(err)
		}
		return wrap(p, v.NewStore(p, path))
	}
}

// lifeless is a server store whose records name no incarnation of the
// server's data (Record.Incarnation 0): a deployment whose data an
// earlier leaselab wrote, whose stores kept none. There a loss shows only
// by versions and nonces, the defences the mutants run over it remove,
// which an incarnation made redundant where the stores keep one.
type lifeless struct{ lease.Store }

func noLife(r lease.Record, err error) (lease.Record, error) {
	r.Incarnation = 0
	return r, err
}

func (s lifeless) Read() (lease.Record, error) { return noLife(s.Store.Read()) }
func (s lifeless) Create(h int64, ttl time.Duration) (lease.Record, error) {
	return noLife(s.Store.Create(h, ttl))
}
func (s lifeless) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return noLife(s.Store.Renew(cur, ttl))
}
func (s lifeless) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	return noLife(s.Store.Takeover(stale, h, ttl))
}
func (s lifeless) Unwrap() lease.Store { return s.Store }

// withoutLife is serverRun's wrap for lifeless.
func withoutLife(_ lease.Proc, s lease.Store, _ lease.Config) lease.Store { return lifeless{s} }

// ttlStore sends every write's TTL through f: a client's unit or rounding
// mistake.
type ttlStore struct {
	lease.Store
	f func(time.Duration) time.Duration
}

func (s ttlStore) Create(h int64, ttl time.Duration) (lease.Record, error) {
	return s.Store.Create(h, s.f(ttl))
}
func (s ttlStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return s.Store.Renew(cur, s.f(ttl))
}
func (s ttlStore) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	return s.Store.Takeover(stale, h, s.f(ttl))
}

// overwritingCreate: a create that finds a record takes it over (a put
// with no compare on the key's absence).
type overwritingCreate struct{ lease.Store }

func (s overwritingCreate) Create(h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Create(h, ttl)
	if errors.Is(err, fs.ErrExist) {
		if cur, rerr := s.Store.Read(); rerr == nil {
			return s.Store.Takeover(cur, h, ttl)
		}
	}
	return rec, err
}

// releaseRereads: a release compares against a fresh read, not the record
// the term last wrote (a client that "refreshes" before it deletes).
type releaseRereads struct{ lease.Store }

func (s releaseRereads) Release(cur lease.Record) error {
	if rec, err := s.Store.Read(); err == nil {
		cur = rec
	}
	return s.Store.Release(cur)
}

func (s releaseRereads) Unwrap() lease.Store { return s.Store }

// takeoverRereads: the algorithm reads the record again just before its
// takeover and compares against that read (check, then act).
func takeoverRereads(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store {
	return rereadTakeover{s}
}

type rereadTakeover struct{ lease.Store }

func (s rereadTakeover) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	if cur, err := s.Store.Read(); err == nil {
		stale = cur
	}
	return s.Store.Takeover(stale, h, ttl)
}

// earlyStart: the algorithm tells its user it leads, with the epoch it is
// about to write, before the acquiring write (Create or Takeover) returns,
// and cancels that context once the write has returned (after a success
// the algorithm hands over a context of its own, as it always does).
func earlyStart(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store {
	return &early{Store: s, p: p, started: cfg.Callbacks.OnStartedLeading, stopped: cfg.Callbacks.OnStoppedLeading}
}

type early struct {
	lease.Store
	p       lease.Proc
	started func(context.Context)
	stopped func() // told when the early term is cancelled, as a leader's end
	highest int64  // the highest epoch read
}

func (s *early) Read() (lease.Record, error) {
	rec, err := s.Store.Read()
	if err == nil {
		s.highest = max(s.highest, rec.Epoch)
	}
	return rec, err
}

func (s *early) start(epoch int64) context.CancelFunc {
	ctx, cancel := lease.TermContext(s.p, epoch)
	s.p.Role(lease.RoleLeader)
	s.p.Lead(epoch, lease.Forever)
	if s.started != nil {
		s.started(ctx)
	}
	return func() {
		cancel()
		s.p.Role(lease.RoleWatcher) // the algorithm reports leading again if the write succeeded
		if s.stopped != nil {
			s.stopped()
		}
	}
}

func (s *early) Create(h int64, ttl time.Duration) (lease.Record, error) {
	defer s.start(s.highest + 1)()
	return s.Store.Create(h, ttl)
}

func (s *early) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	defer s.start(max(stale.Epoch, s.highest) + 1)()
	return s.Store.Takeover(stale, h, ttl)
}

// ignoreWriteError: the flock election leads even when writing its epoch
// record failed, with the record it meant to write.
func ignoreWriteError(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store {
	return writeErrorIgnored{s}
}

type writeErrorIgnored struct{ lease.Store }

func (s writeErrorIgnored) Create(h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Create(h, ttl)
	if lease.FailedStep(err) == "write" {
		return lease.Record{Holder: h, Epoch: 1, Version: 1}, nil
	}
	return rec, err
}

func (s writeErrorIgnored) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Takeover(stale, h, ttl)
	if lease.FailedStep(err) == "write" {
		return lease.Record{Holder: h, Epoch: stale.Epoch + 1, Version: stale.Epoch + 1}, nil
	}
	return rec, err
}

// readOnce: the flock election's record is the one read once, before it
// first contended for the lock.
func readOnce(p lease.Proc, s lease.Store, cfg lease.Config) lease.Store {
	return &firstRead{Store: s}
}

type firstRead struct {
	lease.Store
	done bool
	rec  lease.Record
	err  error
}

func (s *firstRead) Read() (lease.Record, error) {
	if !s.done {
		s.rec, s.err = s.Store.Read()
		s.done = s.err == nil || errors.Is(s.err, fs.ErrNotExist)
	}
	return s.rec, s.err
}

// Create and Takeover make what they wrote the record the process knows:
// a leader's look at its path finds its own record, as the mistake's
// process would believe (it is the next claim's epoch that is stale).
func (s *firstRead) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	return s.wrote(s.Store.Create(holder, ttl))
}

func (s *firstRead) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	return s.wrote(s.Store.Takeover(stale, holder, ttl))
}

func (s *firstRead) wrote(rec lease.Record, err error) (lease.Record, error) {
	if err == nil {
		s.rec, s.err, s.done = rec, nil, true
	}
	return rec, err
}

// registerMutants registers every mutant as a variant: its base with the
// mistake planted.
var registerMutants = sync.OnceValue(func() error {
	for _, m := range mutants {
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

// baseBroken are the properties a base variant is documented to break
// under -faults all (README, "The flock variant": a process paused while
// it holds the lock wedges everyone, no-wedge); a mutant of it is killed
// by a violation of another property, as `-props` with the rest checks.
var baseBroken = map[string][]string{"flock": {spec.NoWedge}}

// checkProps are the properties a search of a mutant of base checks.
func checkProps(base string) []string {
	var out []string
	for _, p := range spec.Properties {
		if !slices.Contains(baseBroken[base], p) {
			out = append(out, p)
		}
	}
	return out
}

// checkOptions are the options `leaselab check -variant variant -faults
// faults -scheduler scheduler` builds (cmd/leaselab/check.go,
// setupFlags.options), every other flag at its default unless c says
// otherwise.
func checkOptions(variant, faults, scheduler string, c *confirmation) (sim.SetupOptions, error) {
	kinds, err := sim.ParseFaults(faults)
	if err != nil {
		return sim.SetupOptions{}, err
	}
	o := sim.SetupOptions{Variant: variant, Faults: kinds, Lease: lease.DefaultConfig(), Scheduler: scheduler} // MaxDriftPPM 0: check's default, the drift bound
	if c != nil && c.maxDrift != 0 {
		o.MaxDriftPPM = c.maxDrift
	}
	if c != nil && c.lease.LeaseDuration != 0 {
		o.Lease = c.lease
	}
	return o, o.Normalize()
}

// hunt is one search's outcome.
type hunt struct {
	ran     bool
	runs    int // runs done: the violating run's number when found
	found   bool
	props   []string // the properties the first violating run breaks
	elapsed time.Duration
	replay  string
	detail  string
	cmd     string // the check command it ran
}

func (h hunt) String() string {
	switch {
	case !h.ran:
		return "not run"
	case !h.found:
		return fmt.Sprintf("not found in %d runs (%s)", h.runs, h.elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("run %d, %s: %s", h.runs, h.elapsed.Round(time.Millisecond), strings.Join(h.props, ", "))
}

// search runs check's search: seed 1, stopping at the first violating
// run.
func search(o sim.SetupOptions, props []string, runs int) (hunt, error) {
	rep, err := spec.Search{Setup: o, Runs: runs, Seed: 1, Properties: props}.Run(nil)
	if err != nil {
		return hunt{}, err
	}
	h := hunt{ran: true, runs: rep.Runs, elapsed: rep.Elapsed,
		cmd: fmt.Sprintf("leaselab check %s -runs %d", spec.SetupFlags(o), runs)}
	if len(props) < len(spec.Properties) {
		h.cmd += " -props " + strings.Join(props, ",")
	}
	for _, f := range rep.Found {
		h.found = true
		h.props = append(h.props, f.Property)
		if h.replay == "" {
			h.replay, h.detail = f.Replay, f.Violation.String()
		}
		f.Trace.Release()
	}
	return h, nil
}

// probeSearch runs check's runs (seed 1) and judges each with probe.
func probeSearch(o sim.SetupOptions, runs int, probe func(*trace.Trace) string, name string) (hunt, error) {
	start := time.Now()
	h := hunt{ran: true, cmd: fmt.Sprintf("the runs of leaselab check %s -runs %d, judged by %s", spec.SetupFlags(o), runs, name)}
	for i := range runs {
		seed := spec.RunSeed(1, i)
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			return h, err
		}
		h.runs = i + 1
		msg := probe(tr)
		tr.Release()
		if msg != "" {
			h.found, h.props, h.detail, h.replay = true, []string{name}, msg, spec.ReplayCommand(o, seed)
			break
		}
	}
	h.elapsed = time.Since(start)
	return h, nil
}

// exploreHunt is an exploration's outcome.
type exploreHunt struct {
	ran       bool
	bounds    string
	schedules int // schedules run
	first     int // the schedule that first violated a property (0: none)
	props     []string
	steps     int
	complete  bool
	elapsed   time.Duration
}

func (e exploreHunt) String() string {
	switch {
	case !e.ran:
		return "not run"
	case e.first == 0:
		s := fmt.Sprintf("not found in %d schedules", e.schedules)
		if e.complete {
			s += " (complete)"
		}
		return s
	}
	return fmt.Sprintf("schedule %d, %s: %s (%d steps)", e.first, e.elapsed.Round(time.Millisecond), strings.Join(e.props, ", "), e.steps)
}

// explore explores the mutant within bounds, depth first, stopping soon
// after the first violation: the search is deterministic, so it runs the
// first 300 schedules, then the first 3,000, then exploreLimit, until one
// of them finds a violation (or the space is complete).
func explore(name, bounds string) (exploreHunt, error) {
	b, ok := exploreBounds[bounds]
	if !ok {
		return exploreHunt{}, fmt.Errorf("no exploration bounds %q", bounds)
	}
	var e exploreHunt
	for _, limit := range []int{300, 3000, exploreLimit} {
		o := b.run
		o.Variant, o.Limit = name, limit
		first := 0
		start := time.Now()
		var at time.Duration
		res, err := spec.Explore(o, func(n, found int) {
			if found > 0 && first == 0 {
				first, at = n, time.Since(start)
			}
		})
		if err != nil {
			return exploreHunt{}, err
		}
		e = exploreHunt{ran: true, bounds: bounds, schedules: res.Schedules, first: first, complete: res.Complete, elapsed: at}
		for _, v := range res.Violations {
			e.props = append(e.props, v.Property)
			if e.steps == 0 || v.Steps < e.steps {
				e.steps = v.Steps
			}
			v.Trace.Release()
		}
		if first > 0 || res.Complete {
			break
		}
	}
	return e, nil
}

// mutantResult is what the test measured of one mutant.
type mutantResult struct {
	def, random, pct, confirm hunt // def: the default command (mixed)
	explore                   exploreHunt
	// rate, for the table, counts the runs of the default command's
	// first 20,000 that break the property, when its first kill came
	// after run 1,000: how lucky that run number was.
	rate, rateOf int
}

// TestMutantsKilled checks the catalogue: the default command (`leaselab
// check -variant M -faults all`: the mixed scheduler, seed 1, its default
// 10,000 runs) must find every mutant that is not argued harmless,
// breaking the property expected; explore at its documented bounds must
// find those within them (at most exploreLimit schedules); a harmless
// mutant must hold in the default command's runs. It also measures the
// random and PCT schedulers alone. -mutant-table prints the README's
// table.
func TestMutantsKilled(t *testing.T) {
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	results := map[string]*mutantResult{}
	pctRuns := 2000
	if *mutantLong {
		pctRuns = maxMutantRuns
	}
	// The command's collector setting (cmd/leaselab: GOGC 400), so that
	// a search here runs as fast as check does.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	t.Run("catalogue", func(t *testing.T) {
		for _, m := range mutants {
			res := &mutantResult{}
			mu.Lock()
			results[m.name] = res
			mu.Unlock()
			t.Run(m.name, func(t *testing.T) {
				// For the table, one mutant at a time, each search on
				// every core as check runs it: the times are a lone
				// command's.
				if !*mutantTable {
					t.Parallel()
				}
				testMutant(t, m, res, pctRuns)
			})
		}
	})
	if *mutantTable {
		printMutantTable(os.Stdout, results)
	}
}

func testMutant(t *testing.T, m mutant, res *mutantResult, pctRuns int) {
	if *mutantRate > 0 {
		o, err := checkOptions(m.name, "all", "mixed", nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := spec.Search{Setup: o, Runs: *mutantRate, Seed: 1, KeepGoing: true, Properties: []string{m.property}, Keep: 1}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Found {
			f.Trace.Release()
		}
		t.Logf("rate: %s in %d of %d runs", m.property, rep.Counts[m.property], rep.Runs)
		return
	}
	if m.confirm != nil {
		sched := m.confirm.sched
		if sched == "" {
			sched = "random"
		}
		o, err := checkOptions(m.name, m.confirm.faults, sched, m.confirm)
		if err != nil {
			t.Fatal(err)
		}
		runs := 2000
		if m.confirm.runs != 0 {
			runs = m.confirm.runs
		}
		if *mutantLong || m.harmless != "" {
			runs = maxMutantRuns
		}
		var h hunt
		if m.confirm.probe != nil {
			h, err = probeSearch(o, runs, m.confirm.probe, m.confirm.probeName)
		} else {
			h, err = search(o, checkProps(m.base), runs)
		}
		if err != nil {
			t.Fatal(err)
		}
		res.confirm = h
		if h.found && m.confirm.probe == nil && !slices.Contains(h.props, m.property) {
			t.Errorf("the confirmation (%s) finds %s, not %s: %s\n\treplay: %s", h.cmd, strings.Join(h.props, ", "), m.property, h.detail, h.replay)
		} else if h.found {
			t.Logf("confirmed: %s: %s\n\treplay: %s", h, h.detail, h.replay)
		} else if m.explore == "" || testing.Short() {
			t.Errorf("the confirmation (%s) finds nothing: is it a real bug?", h.cmd)
		}
	}
	if m.explore != "" && !testing.Short() {
		e, err := explore(m.name, m.explore)
		if err != nil {
			t.Fatal(err)
		}
		res.explore = e
		switch {
		case e.first == 0:
			t.Errorf("explore (%s) does not find it in %d schedules", m.explore, e.schedules)
		case !slices.Contains(e.props, m.property):
			t.Errorf("explore (%s) finds %s, not %s", m.explore, strings.Join(e.props, ", "), m.property)
		default:
			t.Logf("explore (%s): %s", m.explore, e)
		}
	}
	o, err := checkOptions(m.name, "all", "mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.missed != "" {
		h, err := search(o, checkProps(m.base), defaultRuns)
		if err != nil {
			t.Fatal(err)
		}
		res.def = h
		if h.found {
			t.Errorf("marked missed, but the default command now finds it (%s): make it a plain kill\n\treplay: %s", h, h.replay)
		}
		return
	}
	if m.harmless != "" {
		h, err := search(o, checkProps(m.base), defaultRuns)
		if err != nil {
			t.Fatal(err)
		}
		res.def = h
		if h.found {
			t.Errorf("argued harmless, but the default command finds %s: %s\n\treplay: %s", strings.Join(h.props, ", "), h.detail, h.replay)
		}
		return
	}
	h, err := search(o, checkProps(m.base), defaultRuns)
	if err != nil {
		t.Fatal(err)
	}
	res.def = h
	if *mutantTable && h.runs > 1000 {
		rep, err := spec.Search{Setup: o, Runs: maxMutantRuns, Seed: 1, KeepGoing: true, Properties: []string{m.property}, Keep: 1}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Found {
			f.Trace.Release()
		}
		res.rate, res.rateOf = rep.Counts[m.property], rep.Runs
	}
	switch {
	case !h.found:
		t.Errorf("the default command does not find it in %d runs (%s)", h.runs, h.cmd)
	case !slices.Contains(h.props, m.property):
		t.Errorf("found at run %d, but breaking %s, not %s: %s\n\treplay: %s", h.runs, strings.Join(h.props, ", "), m.property, h.detail, h.replay)
	default:
		t.Logf("killed: %s: %s\n\treplay: %s", h, h.detail, h.replay)
	}
	if testing.Short() {
		return
	}
	// Each scheduler alone, for the table: what mixing them buys.
	for _, sc := range []struct {
		name string
		res  *hunt
	}{{"random", &res.random}, {"pct", &res.pct}} {
		so, err := checkOptions(m.name, "all", sc.name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *sc.res, err = search(so, checkProps(m.base), pctRuns); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s alone: %s", sc.name, *sc.res)
	}
}

// printMutantTable prints the catalogue as a markdown table.
func printMutantTable(w *os.File, results map[string]*mutantResult) {
	fmt.Fprintln(w, "| mutant | mistake | caught by | default command (mixed) | random alone | PCT alone | explore | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	names := make([]string, 0, len(mutants))
	byName := map[string]mutant{}
	for _, m := range mutants {
		names = append(names, m.name)
		byName[m.name] = m
	}
	for _, n := range names {
		m, r := byName[n], results[n]
		if r == nil {
			continue
		}
		random, pct := r.random.String(), r.pct.String()
		ex := "outside its bounds"
		if m.explore != "" {
			ex = m.explore
			if b := exploreBounds[m.explore]; b.within != m.explore {
				ex += " (within " + b.within + ")"
			}
			ex += ": " + r.explore.String()
		} else if m.exploreWhy != "" {
			ex = "outside its bounds: " + m.exploreWhy
		}
		verdict := "killed"
		switch {
		case m.harmless != "":
			verdict = "harmless: " + m.harmless
			if r.confirm.found {
				verdict += fmt.Sprintf(" (confirmed with -faults %s: %s)", m.confirm.faults, r.confirm)
			}
		case m.missed != "":
			verdict = "MISSED by the default command: " + m.missed
			if r.confirm.found {
				verdict += fmt.Sprintf("; found with -faults %s: %s", m.confirm.faults, r.confirm)
			}
		case !r.def.found:
			verdict = "NOT KILLED"
		}
		def := r.def.String()
		if r.rateOf > 0 {
			def += fmt.Sprintf(" (%s in %d of the first %d runs)", m.property, r.rate, r.rateOf)
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", m.name, m.mistake, m.property, def, random, pct, ex, verdict)
	}
}

var mutantReplay = flag.String("mutant-replay", "", "TestMutantReplay: a replay line TestMutantsKilled printed (`leaselab replay -variant M ... -seed S -expect H`): replay that run of a mutant and print its trace and verdicts")

// TestMutantReplay replays one run of a mutant, as `leaselab replay` does
// for a registered variant (the mutants are registered in this test binary
// only): go test ./lease -run TestMutantReplay -v -mutant-replay 'LINE'.
func TestMutantReplay(t *testing.T) {
	if *mutantReplay == "" {
		t.Skip("no -mutant-replay line")
	}
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(*mutantReplay)
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // "leaselab replay"
	}
	fset := flag.NewFlagSet("replay", flag.ContinueOnError)
	variant := fset.String("variant", "", "")
	procs := fset.Int("procs", 0, "")
	faults := fset.String("faults", "all", "")
	scheduler := fset.String("scheduler", "random", "")
	maxDrift := fset.Float64("max-drift", -1, "")
	seed := fset.Uint64("seed", 0, "")
	expect := fset.String("expect", "", "")
	lc := lease.DefaultConfig()
	fset.DurationVar(&lc.LeaseDuration, "lease", lc.LeaseDuration, "")
	fset.DurationVar(&lc.RenewInterval, "renew", lc.RenewInterval, "")
	fset.DurationVar(&lc.WatchInterval, "watch", lc.WatchInterval, "")
	fset.DurationVar(&lc.RenewDeadline, "renew-deadline", 0, "")
	driftBound := fset.Float64("drift-bound", 0, "")
	if err := fset.Parse(args); err != nil {
		t.Fatal(err)
	}
	lc.DriftBoundPPM = int64(*driftBound*1e6 + 0.5)
	kinds, err := sim.ParseFaults(*faults)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.SetupOptions{Variant: *variant, Procs: *procs, Faults: kinds, MaxDriftPPM: max(0, int64(*maxDrift*1e6+0.5)), Lease: lc, Scheduler: *scheduler}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	if h := spec.SetupHash(o, *seed); *expect != "" && h != *expect {
		t.Fatalf("setup mismatch: the flags give setup %s, the line expects %s", h, *expect)
	}
	cfg := sim.RandomSetup(o, *seed)
	t.Logf("setup: %s", cfg.String())
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tr.WriteTrace(&b)
	t.Logf("trace:\n%s", b.String())
	for _, v := range spec.Check(tr) {
		if v.Violation != nil {
			t.Logf("VIOLATION %s", v.Violation)
		}
	}
}

// The wrappers' Unwrap: the store they wrap, whose notices (a server's:
// lease.StoreNotifier) the reference finds through them, as it would
// through a user's own wrapper.
func (s ttlStore) Unwrap() lease.Store          { return s.Store }
func (s overwritingCreate) Unwrap() lease.Store { return s.Store }
func (s rereadTakeover) Unwrap() lease.Store    { return s.Store }
func (s *early) Unwrap() lease.Store            { return s.Store }
func (s writeErrorIgnored) Unwrap() lease.Store { return s.Store }
func (s *firstRead) Unwrap() lease.Store        { return s.Store }
