package spec

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// boundedOutcomes are what a delay-bounded search reached: each
// schedule's trace up to the reordering of independent steps, and, per
// property violated, the fewest steps to a violation.
type boundedOutcomes struct {
	traces    map[uint64]bool
	violated  map[string]int
	schedules int
}

func (b *boundedOutcomes) add(w *sim.World) {
	b.schedules++
	b.traces[w.Fingerprint()] = true
	tr := w.Trace()
	for _, v := range Check(tr) {
		if v.Violation == nil {
			continue
		}
		steps := stepsUntil(tr, v.Violation.At)
		if s, ok := b.violated[v.Property]; !ok || steps < s {
			b.violated[v.Property] = steps
		}
	}
}

// unmergedSearch runs every schedule within o's bounds, as Explore does
// without Merge, recording each one's steps for its fingerprint.
func unmergedSearch(t *testing.T, o ExploreOptions) boundedOutcomes {
	t.Helper()
	out := boundedOutcomes{traces: map[uint64]bool{}, violated: map[string]int{}}
	if !runEvery(t, o, 300000, func(cfg *sim.Config) {
		cfg.Explore.OnNode = func(sim.Node) bool { return false } // steps recorded, nothing cut
	}, out.add) {
		t.Fatalf("the search of %+v passed %d schedules: too big for this test", o, out.schedules)
	}
	return out
}

func mergedSearch(t *testing.T, o ExploreOptions, every bool) (boundedOutcomes, ExploreResult) {
	t.Helper()
	out := boundedOutcomes{traces: map[uint64]bool{}, violated: map[string]int{}}
	o.Merge, o.mergeEvery = true, every
	res, err := exploreSubtreeWith(o, nil, 0, nil, nil, out.add)
	if err != nil {
		t.Fatal(err)
	}
	return out, res
}

// mergeBounds are the bounds TestMergeSound searches both ways: toys
// built around one rule of the dependency relation each, and the real
// variants' first seconds, with every kind of fault and deviations.
func mergeBounds(t *testing.T) []ExploreOptions {
	registerToys(t)
	registerOnce(t, toyLastCrash("toy-lastcrash"))
	registerOnce(t, toyLastPause("toy-lastpause"))
	ms := 10 * time.Millisecond
	bounds := []ExploreOptions{
		{Variant: "toy-excl", Procs: 3, Preemptions: 3, Horizon: ms},
		{Variant: "toy-excl", Procs: 3, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-racy", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-racy", Procs: 3, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-racy", Procs: 2, Pauses: 1, Terms: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-watch", Procs: 3, Preemptions: 2, Horizon: ms},
		{Variant: "toy-data", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-flockq", Procs: 3, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-files", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-server", Procs: 2, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-exit", Procs: 2, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-exitwait-flock", Procs: 2, Terms: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-exitwait-watch", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-paths-under", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-paths-unclean", Procs: 2, Preemptions: 3, Horizon: ms},
		{Variant: "toy-paths-mvdir", Procs: 2, Crashes: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-failover", Procs: 2, Crashes: 1, FSErrors: 1, Preemptions: 1, Horizon: 300 * time.Millisecond},
		{Variant: "toy-errlead", Procs: 2, Crashes: 1, FSErrors: 1, Preemptions: 2, Horizon: ms},
		// A state reached with another activity last: a fault runs no
		// step, so the default order differs past it (a probe's toys,
		// which a one-deviation allowance lost traces on).
		{Variant: "toy-lastcrash", Procs: 3, Crashes: 1, Preemptions: 1, Horizon: ms},
		{Variant: "toy-lastcrash", Procs: 3, Terms: 1, Preemptions: 2, Horizon: ms},
		{Variant: "toy-lastpause", Procs: 3, Pauses: 1, Preemptions: 1, Horizon: ms},
		{Variant: "toy-exitwait-watch", Procs: 3, Crashes: 1, Pauses: 1, Preemptions: 1, Horizon: ms},
		{Variant: "toy-server", Procs: 3, Crashes: 1, Preemptions: 2, Horizon: ms},
		// The real variants: deviations with every kind of fault, a
		// power loss's outcomes, a clock jump, drift and skew (choices of
		// the setup).
		{Variant: "seed", Procs: 2, Crashes: 1, Preemptions: 1, Horizon: 4 * time.Second},
		{Variant: "seed", Procs: 3, Preemptions: 2, Horizon: time.Second},
		{Variant: "seed-rename", Procs: 2, Pauses: 1, Preemptions: 1, Horizon: 4 * time.Second},
		{Variant: "flock", Procs: 2, Crashes: 1, Pauses: 1, Horizon: 4 * time.Second},
		{Variant: "flock", Procs: 2, Crashes: 1, Preemptions: 1, Horizon: 4 * time.Second},
		{Variant: "flock", Procs: 3, Terms: 1, Preemptions: 1, Horizon: time.Second},
		{Variant: "reference", Procs: 2, Crashes: 1, Preemptions: 1, Horizon: 2 * time.Second},
		{Variant: "reference", Procs: 2, FSErrors: 1, Preemptions: 1, Horizon: 2 * time.Second},
		{Variant: "reference", Procs: 2, Powers: 1, Horizon: 2 * time.Second},
		{Variant: "seed-rename", Procs: 2, Powers: 1, Preemptions: 1, Horizon: time.Second},
		{Variant: "reference", Procs: 2, Jumps: 1, Preemptions: 1, Horizon: 2 * time.Second, Skews: []time.Duration{0, 5 * time.Second}},
		{Variant: "reference", Procs: 2, Drifts: 1, Preemptions: 1, Horizon: 4 * time.Second},
		{Variant: "reference", Procs: 3, Preemptions: 2, Horizon: 4 * time.Second},
	}
	if *long { // faults together (about 2 minutes more)
		bounds = append(bounds,
			ExploreOptions{Variant: "reference", Procs: 2, Crashes: 1, FSErrors: 1, Preemptions: 1, Horizon: 2 * time.Second},
			ExploreOptions{Variant: "reference", Procs: 2, Powers: 1, Preemptions: 1, Horizon: 2 * time.Second},
			ExploreOptions{Variant: "reference", Procs: 2, Jumps: 1, Drifts: 1, Preemptions: 1, Horizon: 4 * time.Second, Skews: []time.Duration{0, 5 * time.Second}})
	}
	if testing.Short() {
		bounds = slices.DeleteFunc(bounds, func(o ExploreOptions) bool { return o.Procs == 3 && o.Preemptions == 2 && o.Horizon > ms })
	}
	return bounds
}

// Merging is sound: on bounds small enough to run every schedule of the
// delay-bounded search, the merged search reaches the same traces (up to
// the order of independent steps) and the same violations, each in as
// few steps, while it cuts runs.
func TestMergeSound(t *testing.T) {
	cutAny := 0
	for _, o := range mergeBounds(t) {
		name := fmt.Sprintf("%s procs %d crashes %d terms %d pauses %d fserrs %d powers %d jumps %d drifts %d preemptions %d",
			o.Variant, o.Procs, o.Crashes, o.Terms, o.Pauses, o.FSErrors, o.Powers, o.Jumps, o.Drifts, o.Preemptions)
		start := time.Now()
		full := unmergedSearch(t, o)
		for _, every := range []bool{false, true} {
			name := fmt.Sprintf("%s (every pick %v)", name, every)
			merged, res := mergedSearch(t, o, every)
			t.Logf("%s: %d schedules, %d traces, violated %v; merged %d schedules + %d cut, %d states, %d traces",
				name, full.schedules, len(full.traces), full.violated, merged.schedules, res.Merge.Cut, res.Merge.States, len(merged.traces))
			if !res.Complete {
				t.Errorf("%s: the merged search did not complete", name)
			}
			if !maps.Equal(full.traces, merged.traces) {
				t.Errorf("%s: the merged search reached %d traces, the full one %d; %d of the full search's missing", name, len(merged.traces), len(full.traces), missing(full.traces, merged.traces))
			}
			if !maps.Equal(full.violated, merged.violated) {
				t.Errorf("%s: violated (fewest steps) %v merged, %v in full", name, merged.violated, full.violated)
			}
			if res.Merge.Cut > 0 {
				cutAny++
			}
			if merged.schedules > full.schedules {
				t.Errorf("%s: the merged search ran %d schedules, the full one %d", name, merged.schedules, full.schedules)
			}
		}
		t.Logf("(%.1f s)", time.Since(start).Seconds())
	}
	if cutAny < 10 {
		t.Errorf("only %d bounds had a run cut: the test shows little", cutAny)
	}
}

// A merged search is a function of its bounds: run twice, and with
// Workers set (which it ignores: one core), the same schedules, cuts,
// states and kept counterexamples.
func TestMergeDeterministic(t *testing.T) {
	o := ExploreOptions{Variant: "seed", Procs: 2, Crashes: 1, Preemptions: 1, Horizon: 4 * time.Second, Merge: true}
	var rs []ExploreResult
	for _, workers := range []int{1, 2} {
		o.Workers = workers
		r, err := Explore(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	a, b := rs[0], rs[1]
	if !a.Complete || a.Schedules != b.Schedules || a.Merge != b.Merge || a.Merge.Cut == 0 || len(a.Violations) == 0 || len(a.Violations) != len(b.Violations) {
		t.Fatalf("two runs: %d/%d schedules, %+v/%+v, %d/%d violations (complete %v)", a.Schedules, b.Schedules, a.Merge, b.Merge, len(a.Violations), len(b.Violations), a.Complete)
	}
	for i := range a.Violations {
		if !slices.Equal(a.Violations[i].Decisions, b.Violations[i].Decisions) {
			t.Errorf("%s: the kept counterexample differs between two runs", a.Violations[i].Property)
		}
	}
}

// toyLastCrash: the second process holds a flock from the start; 1 ms
// in, the others each try it once without waiting and log whether they
// got it, while the holder's only step then is its wake, where a SIGKILL
// or SIGTERM releases the lock.
func toyLastCrash(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		fl := p.(lease.FlockFS)
		if p.PID() == 200 {
			fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
			if err != nil {
				return nil
			}
			fl.Flock(fd, lease.LOCK_EX)
			p.Sleep(time.Millisecond)
			p.Sleep(time.Hour)
			return nil
		}
		p.Sleep(time.Millisecond)
		fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err != nil {
			return nil
		}
		if fl.Flock(fd, lease.LOCK_EX|lease.LOCK_NB) == nil {
			p.Log(lease.MsgStarted, int64(p.PID()), 0)
		}
		p.Sleep(time.Hour)
		return nil
	}
	return v
}

// toyLastPause: every process sleeps 1 ms; then all but the second lead.
func toyLastPause(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		p.Sleep(time.Millisecond)
		if p.PID() != 200 {
			toyLead(p, cfg)
		}
		p.Sleep(time.Hour)
		return nil
	}
	return v
}
