package spec

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// slowToExplore are the catalogued bugs whose exploration takes more than
// a second or two; they run with -long.
var slowToExplore = map[string]bool{"term-before-handler": true, "term-resurrects": true, "term-wedges": true,
	"paused-leader": true, "paused-creator": true}

// readmeSteps reads the README's bug table: the fewest steps it states
// for each bug (its last column).
func readmeSteps(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z-]+)`: .* \\| (\\d+)[^|]*\\|$")
	steps := map[string]int{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			steps[m[1]], _ = strconv.Atoi(m[2])
		}
	}
	return steps
}

// Exhaustive exploration finds every catalogued bug it can inject the
// fault of, with as few steps as the README's bug table says, and its
// shortest counterexample replays.
func TestExploreFindsCatalogue(t *testing.T) {
	want := readmeSteps(t)
	for _, b := range Bugs {
		o, ok := b.ExploreOptions()
		if !ok {
			continue
		}
		t.Run(b.ID, func(t *testing.T) {
			if slowToExplore[b.ID] && !*long {
				t.Skip("slow; run with -long")
			}
			r, err := Explore(o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Violations) == 0 {
				t.Fatalf("not found in %d schedules (complete: %v)", r.Schedules, r.Complete)
			}
			v := r.Violations[0]
			t.Logf("%d steps, %d schedules (complete: %v) in %v", v.Steps, r.Schedules, r.Complete, r.Wall.Round(time.Millisecond))
			if n, ok := want[b.ID]; !ok || n != v.Steps {
				t.Errorf("%d steps; the README's bug table says %d (%v)", v.Steps, n, ok)
			}
			checkReplays(t, o, v)
		})
	}
}

// checkReplays fails t unless v's decisions, run with o's bounds, give
// v's trace again.
func checkReplays(t *testing.T, o ExploreOptions, v ExploreViolation) {
	t.Helper()
	d := &sim.Decisions{List: v.Decisions}
	cfg, err := ExploreConfig(o, d)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sim.Run(cfg)
	if err != nil || d.Err() != nil {
		t.Fatal(err, d.Err())
	}
	var x, y bytes.Buffer
	tr.WriteTrace(&x)
	v.Trace.WriteTrace(&y)
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("the counterexample does not replay from its decisions")
	}
}

// registerOnce registers a variant a test defines, unless an earlier run
// of the test (-count) did.
func registerOnce(t *testing.T, v lease.Variant) {
	t.Helper()
	if _, err := lease.LookupVariant(v.Name); err == nil {
		return
	}
	if err := lease.Register(v); err != nil {
		t.Fatal(err)
	}
}

// exploreFinds explores o with the bound that set sets at 0 and at 1: the
// first must find nothing (complete), the second a violation of property,
// which it returns after checking that it replays.
func exploreFinds(t *testing.T, o ExploreOptions, set func(*ExploreOptions, int), property string) ExploreViolation {
	t.Helper()
	o.Properties = []string{property}
	set(&o, 0)
	r, err := Explore(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete || len(r.Violations) > 0 {
		t.Fatalf("%s without the bound: complete %v, violations %v", o.Variant, r.Complete, r.Violations)
	}
	set(&o, 1)
	r, err = Explore(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Violations) == 0 {
		t.Fatalf("%s: no %s violation in %d schedules (complete: %v)", o.Variant, property, r.Schedules, r.Complete)
	}
	v := r.Violations[0]
	t.Logf("%s: %s in %d steps, %d schedules in %v: %s", o.Variant, property, v.Steps, r.Schedules,
		r.Wall.Round(time.Millisecond), v.Detail)
	checkReplays(t, o, v)
	return v
}

// A power loss, then the machine's restart, within -powers 1: the seed's
// lock file, created and written but never synced, comes back empty and
// nobody leads again; the reference without the fsyncs that make its
// epochs durable loses the name of the version that started a term, and
// after the restart a process leads with that epoch again. Without the
// power loss the same explorations find nothing.
func TestExplorePowerLoss(t *testing.T) {
	ref, err := lease.LookupVariant("reference")
	if err != nil {
		t.Fatal(err)
	}
	nosync := ref
	nosync.Name = "explore-nodirsync"
	nosync.Summary = "the reference without the directory fsync after a link that starts a term, and without boot records (a test of explore -powers)"
	nosync.NewStore = func(p lease.Proc, path string) lease.Store {
		return &lease.VersionedFile{FS: p, Path: path, PID: int64(p.PID()), NoDirSync: true}
	}
	registerOnce(t, nosync)
	powers := func(o *ExploreOptions, k int) { o.Powers = k }

	o := ExploreOptions{Variant: "seed", Procs: 2}
	v := exploreFinds(t, o, powers, NoWedge)
	if !hasFault(v.Trace, trace.Power) || !lockEmpty(v.Trace) {
		t.Errorf("seed: the wedge is not an empty lock file after a power loss:\n%s", v.Trace.Setup())
	}
	// Five seconds: the first term, a renewal, and the restart's term.
	o = ExploreOptions{Variant: nosync.Name, Procs: 2, Horizon: 5 * time.Second}
	v = exploreFinds(t, o, powers, Fencing)
	if !hasFault(v.Trace, trace.Power) || !strings.Contains(v.Detail, "epoch 1") {
		t.Errorf("%s: not an epoch reused after a power loss: %s", nosync.Name, v.Detail)
	}
	// The reference itself, over the same bounds: every power loss, every
	// surviving prefix of the journal, every fate of one unsynced file.
	o = ExploreOptions{Variant: "reference", Procs: 2, Powers: 1, Horizon: 5 * time.Second}
	if r, err := Explore(o, nil); err != nil || !r.Complete || len(r.Violations) > 0 {
		t.Errorf("reference, one power loss: %v, complete %v, violations %v", err, r.Complete, r.Violations)
	}
}

// Clock drift within the drift bound, -drifts 1: a variant whose local
// deadline has no drift factor (the reference with a deadline of the whole
// lease, as the safe deadline for 1 ppm of drift is) leads past a watcher's
// takeover when its clock runs slow by 1% or the watcher's fast, while a
// pause keeps it from renewing; without drift nothing breaks. The
// reference holds with both processes drifting.
func TestExploreDrift(t *testing.T) {
	ref, err := lease.LookupVariant("reference")
	if err != nil {
		t.Fatal(err)
	}
	nodrift := ref
	nodrift.Name = "explore-nodriftdeadline"
	nodrift.Summary = "the reference whose local deadline is the whole lease, with no margin for drift (a test of explore -drifts)"
	nodrift.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		cfg.DriftBoundPPM = 1
		cfg.RenewDeadline = cfg.SafeDeadline() - 1 // 8.999 s of a 9 s lease
		r, err := lease.NewReference(p, s, path, cfg)
		if err != nil {
			return err
		}
		r.Run()
		return nil
	}
	registerOnce(t, nodrift)

	// Twelve seconds: the first term and a takeover after a pause.
	o := ExploreOptions{Variant: nodrift.Name, Procs: 2, Pauses: 1, Horizon: 12 * time.Second}
	v := exploreFinds(t, o, func(o *ExploreOptions, k int) { o.Drifts = k }, ExclusiveLeadership)
	if !strings.Contains(v.Trace.Setup(), "drift=") {
		t.Errorf("%s: the violating run has no drift: %s", nodrift.Name, v.Trace.Setup())
	}
	o = ExploreOptions{Variant: "reference", Procs: 2, Pauses: 1, Drifts: 2, Horizon: 12 * time.Second}
	if r, err := Explore(o, nil); err != nil || !r.Complete || len(r.Violations) > 0 {
		t.Errorf("reference, both clocks drifting: %v, complete %v, violations %v", err, r.Complete, r.Violations)
	}
}

// The bounded proofs: the reference, two processes, every crash point for
// one SIGKILL and every start and length of one pause, over three leases;
// three processes with every schedule of up to two deviations; with -long
// also every power loss (and every outcome of it the explorer enumerates)
// and restart, and both clocks off by the drift bound with one pause.
func TestExploreReference(t *testing.T) {
	cases := []struct {
		o    ExploreOptions
		long bool // takes more than a few seconds
	}{
		{ExploreOptions{Variant: "reference", Procs: 2, Crashes: 1, Pauses: 1}, true},
		{ExploreOptions{Variant: "reference", Procs: 3, Preemptions: 2}, false},
		// Every call of either process may fail once (EIO or ENOSPC), with
		// every crash point: failover stays within lease + margin when a
		// watcher's first read fails (issue 16, item 3).
		{ExploreOptions{Variant: "reference", Procs: 2, Crashes: 1, FSErrors: 1}, false},
		{ExploreOptions{Variant: "reference", Procs: 2, Powers: 1}, true},
		{ExploreOptions{Variant: "reference", Procs: 2, Drifts: 2, Pauses: 1}, true},
	}
	for _, c := range cases {
		if c.long && !*long {
			continue
		}
		o := c.o
		r, err := Explore(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Complete || len(r.Violations) > 0 {
			t.Errorf("%+v: complete %v, %d violations (first: %v)", o, r.Complete, len(r.Violations), r.Violations)
		}
		t.Logf("%d procs, %d crash, %d pause, %d power, %d drifting, %d I/O error, %d deviations: %d schedules, complete, no violation, %v",
			o.Procs, o.Crashes, o.Pauses, o.Powers, o.Drifts, o.FSErrors, o.Preemptions, r.Schedules, r.Wall.Round(time.Millisecond))
	}
}

// BenchmarkExplore reports schedules per second of a bounded exploration.
func BenchmarkExplore(b *testing.B) {
	o := ExploreOptions{Variant: "reference", Procs: 2, Crashes: 1, Limit: 2000}
	n := 0
	for b.Loop() {
		r, err := Explore(o, nil)
		if err != nil {
			b.Fatal(err)
		}
		n += r.Schedules
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "schedules/s")
}

// An exploration cut into subtrees for several workers finds what one
// worker finds: the same schedules counted, completeness, and per
// property the same violation (steps, decisions, detail), the first in
// depth-first order of those with the fewest steps.
func TestExploreWorkersSameResult(t *testing.T) {
	for _, o := range []ExploreOptions{
		{Variant: "seed", Procs: 2, Crashes: 1},
		{Variant: "seed-rename", Procs: 2, Pauses: 1, Horizon: 12 * time.Second},
		{Variant: "reference", Procs: 2, Crashes: 1, Horizon: 12 * time.Second},
	} {
		var rs []ExploreResult
		for _, w := range []int{1, 3} {
			o.Workers = w
			r, err := Explore(o, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		a, b := rs[0], rs[1]
		if a.Schedules != b.Schedules || a.Complete != b.Complete || len(a.Violations) != len(b.Violations) {
			t.Fatalf("%+v: one worker: %d schedules, complete %v, %d violations; three: %d, %v, %d", o, a.Schedules, a.Complete, len(a.Violations), b.Schedules, b.Complete, len(b.Violations))
		}
		if o.Variant != "reference" && len(a.Violations) == 0 {
			t.Errorf("%s: no violation: the comparison is vacuous", o.Variant)
		}
		for i := range a.Violations {
			x, y := a.Violations[i], b.Violations[i]
			if x.Property != y.Property || x.Steps != y.Steps || x.Detail != y.Detail || !reflect.DeepEqual(x.Decisions, y.Decisions) {
				t.Errorf("%s: violation %d: %s in %d steps (%s) vs %s in %d steps (%s)", o.Variant, i, x.Property, x.Steps, x.Detail, y.Property, y.Steps, y.Detail)
			}
		}
		t.Logf("%s: %d schedules, %d violations", o.Variant, a.Schedules, len(a.Violations))
	}
}
