package spec

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Search is a random search over setups, schedules and faults.
type Search struct {
	Setup sim.SetupOptions
	Runs  int
	// Seed derives every run's seed (RunSeed).
	Seed uint64
	// KeepGoing searches all Runs instead of stopping at the first run
	// with a violation.
	KeepGoing bool
	// Properties to check (nil: all).
	Properties []string
	// Smallest keeps, for each property, only the smallest violating run
	// found: fewest processes, then fewest faults, then earliest violation.
	// With KeepGoing it searches all Runs for it.
	Smallest bool
	// Keep is how many violating runs to keep per property, the first
	// found (0: DefaultKeep). Report.Counts counts them all.
	Keep int
	// Workers is how many runs are simulated at once (0: GOMAXPROCS).
	// The report is the same whatever it is: runs are independent, each
	// a pure function of its seed, and are judged in their order.
	Workers int
	// DropTraces keeps, of every violating run kept but the first
	// (Report.Found[0]), only what a report prints of it (Setup, Excerpt,
	// the violation with its HTML) and releases its trace: a spinning
	// run's trace is a hundred megabytes, and a search keeps up to Keep
	// runs for each property.
	DropTraces bool
}

// Found is a violation found by a search, with what replays it.
type Found struct {
	Violation
	Run     int        // index of the run in the search
	RunSeed uint64     // its seed: RandomSetup(Setup, RunSeed) is its setup
	Replay  string     // the command line that replays it
	Config  sim.Config // its setup
	// Trace is the run's trace; nil with Search.DropTraces but for the
	// first run found.
	Trace *trace.Trace
	// Setup is the trace's account of the run's setup (trace.Setup), and
	// Excerpt its lines from two watch intervals and a renew interval
	// before the violation to a millisecond after it.
	Setup   string
	Excerpt []string
	// Verdicts are every property's verdict on the run, from its one
	// Check.
	Verdicts []Verdict
}

// Report is a search's outcome.
type Report struct {
	Variant string
	Runs    int // runs done
	Found   []Found
	// Counts is how many runs violated each property.
	Counts map[string]int
	// NotApplicable says, for each property that did not apply to some
	// run (fencing without epochs, a store without a history), why.
	NotApplicable map[string]string
	// Coverage is what the runs done exercised.
	Coverage Coverage
	Elapsed  time.Duration
	// firstSum is the hash of run 0's trace (traceSum), for Replays to
	// compare a second simulation of it with when no violating run's
	// trace is kept.
	firstSum []byte
}

// RunSeed is the seed of run i of a search seeded with seed (splitmix64).
func RunSeed(seed uint64, i int) uint64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// DefaultKeep is how many violating runs a search keeps per property
// unless told otherwise.
const DefaultKeep = 3

// Run runs the search. progress, if set, is called after each run.
func (s Search) Run(progress func(done, found int)) (rep Report, err error) {
	if err := s.Setup.Normalize(); err != nil {
		return Report{}, err
	}
	if s.Runs <= 0 {
		return Report{}, fmt.Errorf("-runs %d: want at least 1", s.Runs)
	}
	want := map[string]bool{}
	for _, p := range s.Properties {
		want[p] = true
	}
	keep := s.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	rep = Report{Variant: s.Setup.Variant, Counts: map[string]int{}, NotApplicable: map[string]string{}}
	start := time.Now()
	runs := s.runner()
	defer runs.stop()
	var cov coverage
	defer func() { rep.Coverage = cov.result() }()
	for i := 0; i < s.Runs; i++ {
		r := runs.next(i)
		if r.err != nil {
			return rep, r.err
		}
		seed, cfg, tr, verdicts := r.seed, r.cfg, r.tr, r.verdicts
		rep.Runs++
		cov.add(cfg, tr)
		if i == 0 {
			rep.firstSum = traceSum(tr) // (Replays: one run simulated again, not two)
		}
		kept, bad := false, false
		for _, v := range verdicts {
			if !v.Applicable && rep.NotApplicable[v.Property] == "" {
				rep.NotApplicable[v.Property] = v.Reason
			}
			if v.Violation == nil || len(want) > 0 && !want[v.Property] {
				continue
			}
			bad = true
			rep.Counts[v.Property]++
			// (The replay line, a hash of the setup, is made for the runs
			// kept: a search with thousands of violating runs spent 3.5%
			// of its time on lines it dropped.)
			// The details of a violation decided without them (porcupine's
			// culprit: decideLinearizable) are worked out only for a run
			// kept, or compared by its time.
			found := func() Found {
				settleAll(verdicts) // (a Found carries every verdict of its run)
				return Found{Violation: *v.Violation, Run: i, RunSeed: seed, Config: cfg, Trace: tr, Verdicts: verdicts}
			}
			switch k := indexOf(rep.Found, v.Property); {
			case s.Smallest && k >= 0:
				c := compareSize(cfg, rep.Found[k].Config)
				if c == 0 {
					v.Violation.settle()
					c = cmp.Compare(v.Violation.At, rep.Found[k].At)
				}
				if c < 0 {
					rep.Found[k] = s.digest(found())
					kept = true
				}
			case s.Smallest || rep.Counts[v.Property] <= keep:
				rep.Found = append(rep.Found, s.digest(found()))
				kept = true
			}
		}
		if !kept {
			releaseAll(verdicts) // (a Found keeps its run's verdicts, even when its trace is dropped)
		}
		if kept && s.DropTraces {
			first := rep.Found[0].Trace // (-smallest may have replaced the first run)
			for j := range rep.Found {
				if rep.Found[j].Trace != first {
					rep.Found[j].Trace = nil
				}
			}
			kept = first == tr
		}
		if !kept {
			tr.Release()
		}
		if progress != nil {
			progress(rep.Runs, len(rep.Found))
		}
		if bad && !s.KeepGoing {
			break
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// digest completes a violating run kept: what replays it and what a
// report prints of it.
func (s *Search) digest(f Found) Found {
	f.Replay = ReplayCommand(s.Setup, f.RunSeed)
	f.Setup = f.Trace.Setup()
	l := s.Setup.Lease
	f.Excerpt = f.Trace.Excerpt(f.At-2*l.WatchInterval-l.RenewInterval, f.At+time.Millisecond)
	return f
}

func indexOf(fs []Found, prop string) int {
	for i, f := range fs {
		if f.Property == prop {
			return i
		}
	}
	return -1
}

// compareSize orders two runs' setups for -smallest: fewer processes,
// then fewer faults, first (0: as small; the earlier violation is then
// the smaller).
func compareSize(a, b sim.Config) int {
	if c := cmp.Compare(len(a.Procs), len(b.Procs)); c != 0 {
		return c
	}
	return cmp.Compare(len(a.Faults), len(b.Faults))
}

// SetupFlags prints the flags that, with a seed, determine a run's setup.
func SetupFlags(o sim.SetupOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-variant %s -procs %d -faults %s -scheduler %s", o.Variant, o.Procs, sim.FaultNames(o.Faults), o.Scheduler)
	if o.MaxDriftPPM != sim.DriftBoundOf(o.Lease) {
		fmt.Fprintf(&b, " -max-drift %s", strconv.FormatFloat(float64(o.MaxDriftPPM)/1e6, 'g', -1, 64))
	}
	if d := lease.DefaultConfig(); o.Lease.LeaseDuration != d.LeaseDuration || o.Lease.RenewInterval != d.RenewInterval || o.Lease.WatchInterval != d.WatchInterval {
		fmt.Fprintf(&b, " -lease %v -renew %v -watch %v", o.Lease.LeaseDuration, o.Lease.RenewInterval, o.Lease.WatchInterval)
	}
	if o.Lease.RenewDeadline != 0 {
		fmt.Fprintf(&b, " -renew-deadline %v", o.Lease.RenewDeadline)
	}
	if o.Lease.DriftBoundPPM != 0 {
		fmt.Fprintf(&b, " -drift-bound %s", strconv.FormatFloat(float64(o.Lease.DriftBoundPPM)/1e6, 'g', -1, 64))
	}
	if o.Horizon != 0 {
		fmt.Fprintf(&b, " -horizon %v", o.Horizon)
	}
	return b.String()
}

// SetupHash fingerprints the setup a seed gives under o, so that a replay
// can tell when its flags do not reproduce the run it was printed for.
func SetupHash(o sim.SetupOptions, seed uint64) string {
	h := fnv.New64a()
	h.Write([]byte(o.Scheduler + " " + sim.RandomSetup(o, seed).String()))
	return fmt.Sprintf("%016x", h.Sum64())[:10]
}

// ReplayCommand is the command line that replays run seed of a search.
func ReplayCommand(o sim.SetupOptions, seed uint64) string {
	return fmt.Sprintf("leaselab replay %s -seed %d -expect %s", SetupFlags(o), seed, SetupHash(o, seed))
}
