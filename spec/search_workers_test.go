package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

var registerSpinner = sync.OnceFunc(func() {
	registerWrapped("seed", "test~spin", "a process that never sleeps: every run is as long as the simulator lets it be",
		func(runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				for {
					p.Stat(path)
				}
			}
		})
})

// The runs simulated ahead of a slow search hold at most aheadEvents, and
// what the chunk the search takes next needs: a spinning variant's runs
// are thousands of times a normal run's, and a window of them held
// gigabytes.
func TestRunnerBoundsTheEventsAhead(t *testing.T) {
	registerSpinner()
	defer func(n int) { aheadEvents = n }(aheadEvents)
	aheadEvents = 1000
	o := sim.SetupOptions{Variant: "test~spin", Procs: 1, Horizon: 2 * time.Second}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	const workers = 2
	s := Search{Setup: o, Runs: 12 * chunkRuns, Seed: 1, Workers: workers}
	r := s.runner()
	defer r.stop()
	most, worst := 0, 0
	for i := range s.Runs {
		time.Sleep(200 * time.Microsecond) // a slow reader: the workers run ahead as far as they may
		res := r.next(i)
		if res.err != nil {
			t.Fatal(res.err)
		}
		// What is ahead of the chunk being taken: its own runs not yet
		// taken count in r.ahead until each is (it was simulated as the
		// chunk taken next, whatever the bound), and are left out.
		pending := 0
		for _, rr := range r.cur {
			if rr.tr != nil {
				pending += len(rr.tr.Events)
			}
		}
		r.mu.Lock()
		ahead := r.ahead - pending
		r.mu.Unlock()
		most, worst = max(most, len(res.tr.Events)), max(worst, ahead)
		res.tr.Release()
	}
	if most < 10*aheadEvents {
		t.Fatalf("a spinning run made only %d events", most)
	}
	// Each worker may have started one run past the bound, and the chunk
	// taken next is simulated whatever the bound. (The chunk being taken
	// was counted too until 2026-12-06, which on one core exceeded the
	// bound two times in three: 216,301 events against 201,000.)
	if bound := aheadEvents + (workers+chunkRuns)*most; worst > bound {
		t.Errorf("%d events were ahead of the search, more than the bound of %d (runs of up to %d events)", worst, bound, most)
	}
}

// DropTraces keeps what a report prints of every violating run and the
// trace of the first only; the report is otherwise the one a search that
// keeps every trace makes, -smallest too.
func TestSearchDropTraces(t *testing.T) {
	for _, smallest := range []bool{false, true} {
		s := Search{Setup: sim.SetupOptions{Variant: "seed", Faults: killStop()}, Runs: 150, Seed: 3, KeepGoing: true, Smallest: smallest, Keep: 4}
		all, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		s.DropTraces = true
		dropped, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Found) < 2 || len(all.Found) != len(dropped.Found) {
			t.Fatalf("smallest=%v: %d and %d violating runs kept; want the same, at least two", smallest, len(all.Found), len(dropped.Found))
		}
		for i, f := range dropped.Found {
			a := all.Found[i]
			if f.RunSeed != a.RunSeed || f.Property != a.Property || f.Replay != a.Replay || f.Setup != a.Trace.Setup() || f.Setup != a.Setup || !reflect.DeepEqual(f.Excerpt, a.Excerpt) || len(f.Excerpt) == 0 {
				t.Errorf("smallest=%v: found %d differs: %s run %d, %d excerpt lines; kept with its trace: %s run %d, %d lines", smallest, i, f.Property, f.Run, len(f.Excerpt), a.Property, a.Run, len(a.Excerpt))
			}
			if (f.Trace != nil) != (i == 0 || f.Run == dropped.Found[0].Run) {
				t.Errorf("smallest=%v: found %d (run %d) has a trace: %v; only the first run found keeps its trace", smallest, i, f.Run, f.Trace != nil)
			}
		}
		if tr := dropped.Found[0].Trace; tr == nil || tr.Events == nil {
			t.Errorf("smallest=%v: the first run found lost its trace", smallest)
		}
	}
}

// A search decides linearizable-store without its details (porcupine's
// culprit) and works them out only for the runs it keeps: what it keeps
// must be what Check says of the same run, for every property, with
// -smallest (which compares the violations' times) and without; and it
// must count as many violations as Check finds.
func TestSearchSettlesWhatItKeeps(t *testing.T) {
	for _, c := range []struct {
		smallest bool
		props    []string
	}{{false, nil}, {true, nil}, {true, []string{LinearizableStore}}} {
		smallest := c.smallest
		o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		s := Search{Setup: o, Runs: 120, Seed: 3, KeepGoing: true, Smallest: smallest, Workers: 2, Properties: c.props}
		rep, err := s.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		type best struct {
			run int
			cfg sim.Config
			at  time.Duration
		}
		smallestRun := map[string]best{} // what -smallest must keep, by Check
		byTime := -1                     // the last run kept as linearizable-store's smallest for its time alone
		for i := range s.Runs {
			cfg := sim.RandomSetup(o, RunSeed(s.Seed, i))
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range Check(tr) {
				if v.Violation == nil || c.props != nil && !slices.Contains(c.props, v.Property) {
					continue
				}
				counts[v.Property]++
				b, ok := smallestRun[v.Property]
				size := compareSize(cfg, b.cfg)
				if ok && size == 0 && v.Violation.At < b.at && v.Property == LinearizableStore {
					byTime = i
				}
				if !ok || size < 0 || size == 0 && v.Violation.At < b.at {
					smallestRun[v.Property] = best{i, cfg, v.Violation.At}
				}
			}
			tr.Release()
		}
		if !reflect.DeepEqual(counts, rep.Counts) {
			t.Fatalf("smallest=%v: the search counted %v, Check %v", smallest, rep.Counts, counts)
		}
		if byTime < 0 || smallestRun[LinearizableStore].run != byTime {
			t.Fatal("no run is the smallest linearizable-store counterexample by its time alone: -smallest's use of the details is not tested")
		}
		if smallest {
			for _, f := range rep.Found {
				if want := smallestRun[f.Property].run; f.Run != want {
					t.Errorf("-smallest kept run %d for %s, Check's smallest is run %d", f.Run, f.Property, want)
				}
			}
		}
		if counts[LinearizableStore] == 0 {
			t.Fatal("no linearizable-store violation in the runs: the test shows nothing")
		}
		pages, otherPages := 0, 0
		for _, f := range rep.Found {
			tr, err := sim.Run(f.Config)
			if err != nil {
				t.Fatal(err)
			}
			want := Check(tr)
			if len(want) != len(f.Verdicts) {
				t.Fatalf("run %d: %d verdicts kept, Check gives %d", f.Run, len(f.Verdicts), len(want))
			}
			for j, w := range want {
				g := f.Verdicts[j]
				if (w.Violation == nil) != (g.Violation == nil) {
					t.Fatalf("run %d, %s: kept %v, Check %v", f.Run, w.Property, g.Violation, w.Violation)
				}
				if w.Violation == nil {
					continue
				}
				if g.Violation.settler != nil || g.Violation.String() != w.Violation.String() || !reflect.DeepEqual(g.Violation.PIDs, w.Violation.PIDs) {
					t.Errorf("run %d, %s: kept %q %v, Check %q %v", f.Run, w.Property, g.Violation, g.Violation.PIDs, w.Violation, w.Violation.PIDs)
				}
			}
			if f.Property == LinearizableStore && (f.Detail == "" || f.HTML == nil) {
				t.Errorf("run %d: linearizable-store kept without its details", f.Run)
			}
			// The page of each kept run's linearizable-store violation (whatever
			// property the run was kept for: a Found keeps all its verdicts)
			// is drawn from the history the search decided on, after the
			// search went on to decide other runs' (whose memory is reused:
			// model.Holds): it must be this run's.
			for j, w := range want {
				if w.Property != LinearizableStore || w.Violation == nil {
					continue
				}
				dir := t.TempDir()
				got, exp := filepath.Join(dir, "got.html"), filepath.Join(dir, "want.html")
				if err := f.Verdicts[j].Violation.HTML(got); err != nil {
					t.Fatal(err)
				}
				if err := w.Violation.HTML(exp); err != nil {
					t.Fatal(err)
				}
				a, _ := os.ReadFile(got)
				b, _ := os.ReadFile(exp)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("run %d (kept for %s): its linearizable-store page (%d bytes) is not Check's (%d bytes)", f.Run, f.Property, len(a), len(b))
				}
				pages++
				if f.Property != LinearizableStore {
					otherPages++
				}
			}
			tr.Release()
		}
		if pages == 0 || otherPages == 0 && c.props == nil {
			t.Fatalf("smallest=%v: %d pages compared, %d of runs kept for another property: the test shows too little", smallest, pages, otherPages)
		}
	}
}
