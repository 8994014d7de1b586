package spec

import (
	"bytes"
	"sort"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
)

// findRuns is the budget the catalogue tests give each bug: a few seconds
// of search at the slowest, well under a second for most.
const findRuns = 20000

// Every catalogued bug must still be found by the checker's search, and
// the run that shows it must replay to the same trace.
func TestBugCatalogue(t *testing.T) {
	for _, b := range Bugs {
		t.Run(b.ID, func(t *testing.T) {
			f, n, ok := b.Find(1, "random", findRuns)
			if !ok {
				t.Fatalf("%s (%s, faults %s) not found in %d runs", b.ID, b.Variant, b.Faults, findRuns)
			}
			t.Logf("found after %d runs: %s\n  replay: %s", n, f.Violation.String(), f.Replay)
			o := b.Search(1, "random", 1).Setup
			if err := o.Normalize(); err != nil {
				t.Fatal(err)
			}
			again, err := sim.Run(sim.RandomSetup(o, f.RunSeed))
			if err != nil {
				t.Fatal(err)
			}
			var x, y bytes.Buffer
			f.Trace.WriteTrace(&x)
			again.WriteTrace(&y)
			if !bytes.Equal(x.Bytes(), y.Bytes()) {
				t.Fatal("the run does not replay from its seed")
			}
		})
	}
}

// BenchmarkCheckRuns reports runs per second of leaselab check on the seed
// variant with every fault kind (an op is one run: setup, simulation and
// every property, porcupine included).
func BenchmarkCheckRuns(b *testing.B) {
	o := sim.SetupOptions{Variant: "seed", Faults: sim.FaultKinds}
	if err := o.Normalize(); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		tr, err := sim.Run(sim.RandomSetup(o, RunSeed(1, i)))
		if err != nil {
			b.Fatal(err)
		}
		Check(tr)
		tr.Release()
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkTimeToFind measures, for every catalogued bug and both
// schedulers, the median over 10 search seeds of the time until the
// checker first finds it (target: under a second each). Run with
// -benchtime 1x: one op is the whole measurement.
func BenchmarkTimeToFind(b *testing.B) {
	for _, bug := range Bugs {
		for _, sched := range []string{"random", "pct"} {
			b.Run(bug.ID+"/"+sched, func(b *testing.B) {
				for b.Loop() {
					var ds []time.Duration
					var runs []int
					for seed := uint64(1); seed <= 10; seed++ {
						start := time.Now()
						_, n, ok := bug.Find(seed, sched, findRuns)
						if !ok {
							b.Fatalf("seed %d: not found in %d runs", seed, findRuns)
						}
						ds = append(ds, time.Since(start))
						runs = append(runs, n)
					}
					sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
					sort.Ints(runs)
					b.ReportMetric(ds[4].Seconds()/2+ds[5].Seconds()/2, "median-s")
					b.ReportMetric(float64(runs[4]+runs[5])/2, "median-runs")
				}
			})
		}
	}
}
