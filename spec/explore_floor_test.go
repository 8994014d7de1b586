package spec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
)

// firstChoice is the Chooser of the default schedule: always the first
// alternative.
type firstChoice struct{}

func (firstChoice) Choose(int) int { return 0 }

// deviating takes the first alternative, and with probability p a
// uniformly drawn one: schedules whose faults and reorderings fall
// anywhere in the run, not mostly in its first instant.
type deviating struct {
	r *rand.Rand
	p float64
}

func (d deviating) Choose(n int) int {
	if n <= 1 || d.r.Float64() >= d.p {
		return 0
	}
	return d.r.IntN(n)
}

// BenchmarkTraceFloor measures a floor under the time of any complete
// search of issue 19's two exploration bounds in this simulator (flock, 2
// processes, 1 SIGKILL, 1 pause, 27 s; reference, 3 processes, the same
// faults): the distinct traces that some schedules of the bound reach
// (World.KillFingerprint, up to a kill's place among quiet steps, as
// TestDPORSound compares them), times the cost of the cheapest run of
// the bound (the default schedule without a fault: no explorer, no
// recording, the fast path on; the fastest of 30 batches, so that a
// loaded machine does not raise it).
//
// Why it is a floor: a sound search reaches every trace a schedule of
// the bound reaches (what TestDPORSound holds the reduction to), and here
// each one's end by its own run from the start. A state is named only by
// the run that reached it, up to the order of independent steps: the
// lease code runs as Go coroutines, whose memory can be neither compared
// nor copied, so no search can tell that two histories left the
// processes in one state, nor resume a run from the middle of another.
// Two runs whose traces differ are two runs.
//
// The traces are found by a capped reduced search (flock's, which finds
// about 0.9 new ones a schedule) or by random schedules that deviate at
// a choice with probability one half (reference's, about one a run);
// both are deterministic. Minutes: run with -benchtime 1x (with -short,
// as CI runs every benchmark once, a few thousand runs).
func BenchmarkTraceFloor(b *testing.B) {
	for _, c := range []struct {
		name   string
		o      ExploreOptions
		dfs    int     // schedules of the capped reduced search
		random int     // random schedules
		p      float64 // their deviation probability
	}{
		{"flock", ExploreOptions{Variant: "flock", Procs: 2, Crashes: 1, Pauses: 1, DPOR: true}, 2_000_000, 0, 0},
		{"reference", ExploreOptions{Variant: "reference", Procs: 3, Crashes: 1, Pauses: 1, DPOR: true}, 0, 900_000, 0.5},
	} {
		b.Run(c.name, func(b *testing.B) {
			if testing.Short() {
				c.dfs, c.random = min(c.dfs, 2000), min(c.random, 500)
			}
			for b.Loop() {
				fps := map[uint64]bool{}
				if c.dfs > 0 {
					if _, err := exploreDPORWith(c.o, c.dfs, nil, func(w *sim.World) { fps[w.KillFingerprint()] = true }); err != nil {
						b.Fatal(err)
					}
				}
				r := rand.New(rand.NewPCG(19, 1))
				for range c.random {
					cfg, err := ExploreConfig(c.o, deviating{r, c.p})
					if err != nil {
						b.Fatal(err)
					}
					fps[runFingerprint(b, cfg)] = true
				}
				run := cheapestRun(b, c.o)
				b.ReportMetric(float64(len(fps)), "traces")
				b.ReportMetric(run.Seconds()*1e3, "ms/run")
				b.ReportMetric(float64(len(fps))*run.Seconds(), "floor-s")
			}
		})
	}
}

func runFingerprint(b *testing.B, cfg sim.Config) uint64 {
	w, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	w.Run()
	fp := w.KillFingerprint()
	w.Release()
	return fp
}

// cheapestRun is the time of the bound's default schedule without its
// faults, run as check runs it (no explorer): the fastest of 30 batches.
func cheapestRun(b *testing.B, o ExploreOptions) time.Duration {
	o.Crashes, o.Pauses, o.DPOR = 0, 0, false
	best := time.Duration(1<<63 - 1)
	const batch = 50
	for range 30 {
		start := time.Now()
		for range batch {
			cfg, err := ExploreConfig(o, firstChoice{})
			if err != nil {
				b.Fatal(err)
			}
			cfg.Explore = nil
			w, err := sim.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			w.Run()
			w.Release()
		}
		best = min(best, time.Since(start)/batch)
	}
	return best
}
