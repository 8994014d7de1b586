package spec

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
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
		})
	}
}

// The bounded proofs: the reference, two processes, every crash point for
// one SIGKILL and every start and length of one pause, over three leases;
// and three processes with every schedule of up to two deviations.
func TestExploreReference(t *testing.T) {
	cases := []ExploreOptions{
		{Variant: "reference", Procs: 2, Crashes: 1, Pauses: 1},
		{Variant: "reference", Procs: 3, Preemptions: 2},
	}
	if !*long {
		cases = cases[1:] // the crash-and-pause proof takes ~20 s: -long
	}
	for _, o := range cases {
		r, err := Explore(o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Complete || len(r.Violations) > 0 {
			t.Errorf("%+v: complete %v, %d violations (first: %v)", o, r.Complete, len(r.Violations), r.Violations)
		}
		t.Logf("%d procs, %d crash, %d pause, %d deviations: %d schedules, complete, no violation, %v",
			o.Procs, o.Crashes, o.Pauses, o.Preemptions, r.Schedules, r.Wall.Round(time.Millisecond))
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
