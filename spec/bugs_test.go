package spec

import (
	"bytes"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
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
// variant with every fault kind, the runs `leaselab check -variant seed
// -faults all -seed 1` makes, one after another (an op is one run: setup,
// simulation and every property, porcupine included), judged as a search
// judges them: linearizable-store's details are worked out only for the
// runs it keeps (decide; spec.Check works them out for every run).
func BenchmarkCheckRuns(b *testing.B) {
	o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		b.Fatal(err)
	}
	// The command's runs, as its replay lines name them: nothing else is
	// a fair comparison (-faults all draws machine faults, which cost more).
	if f := SetupFlags(o); f != "-variant seed -procs 0 -faults all -scheduler mixed" {
		b.Fatalf("the benchmark's setup is %q, not the command's", f)
	}
	i := 0
	for b.Loop() {
		tr, err := sim.Run(sim.RandomSetup(o, RunSeed(1, i)))
		if err != nil {
			b.Fatal(err)
		}
		releaseAll(decide(tr)) // (as a search does with the runs it does not keep)
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

// alsoShows lists the runs that catalogue searches find first and that
// show another catalogued bug besides their own, as [run's bug, other
// bug]: such a run is no evidence that the other bug's matcher can fail.
// None does now; empty-after-create's matcher used to accept a watcher
// killed after an O_EXCL create that failed with EEXIST (it had created
// nothing), and so took a renewal's wedge for its own.
var alsoShows = map[[2]string]bool{}

// otherViolations names, for a bug that no other catalogued bug shares a
// property with, catalogued runs that violate its property another way:
// the first runs of the naive-race, takeover-race and term-resurrects
// searches break linearizable-store with a create, a takeover and a read
// that return a record the register cannot explain, not with a read of an
// empty lock file.
var otherViolations = map[string][]string{"truncated-read": {"naive-race", "takeover-race", "term-resurrects"}}

// scripted are runs that show one catalogued bug while a fault fires that
// another bug's search injects: a matcher that only asks whether such a
// fault fired would take them for its own.
var scripted = []struct {
	bug, what string
	cfg       sim.Config
}{
	{"empty-after-renew", "the leader is killed after its first renewal's open(O_TRUNC); the watcher is paused for 2 s meanwhile",
		sim.Config{Variant: "seed", Procs: []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}}, Horizon: 48 * time.Second,
			Faults: []sim.Fault{{Kind: trace.Kill, Proc: 0, After: "open-trunc", Nth: 2}, {Kind: trace.Stop, Proc: 1, At: 5 * time.Second, Dur: 2 * time.Second}}}},
	{"clock-skew", "a watcher whose wall clock is 20 s ahead, paused for 1 s first, takes over the live lease",
		sim.Config{Variant: "seed", Procs: []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second, Skew: 20 * time.Second}}, Horizon: 27 * time.Second,
			Faults: []sim.Fault{{Kind: trace.Stop, Proc: 1, At: 1500 * time.Millisecond, Dur: time.Second}}}},
	{"term-resurrects", "the leader's SIGTERM lands in its first renewal, which recreates the lock file the handler removed; a watcher died of a SIGTERM before it installed its handler",
		sim.Config{Variant: "seed", Procs: []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}, {PID: 103, Start: time.Second}}, Horizon: 27 * time.Second,
			Faults: []sim.Fault{{Kind: trace.Term, Proc: 0, After: "read", Nth: 1}, {Kind: trace.Term, Proc: 2, After: "log", Nth: 1}}}},
}

// Every matcher can fail: it accepts the run its own search finds, and
// rejects the runs other catalogued bugs' searches find that violate the
// same property another way, the scripted runs of another bug that do,
// and a run of its variant that violates nothing (judged as if it broke
// the property at its end, between its first two processes).
func TestBugMatchersCanFail(t *testing.T) {
	found := map[string]Found{}
	for _, b := range Bugs {
		f, _, ok := b.Find(1, "random", findRuns)
		if !ok {
			t.Fatalf("%s not found in %d runs", b.ID, findRuns)
		}
		found[b.ID] = f
	}
	clean := map[string]*trace.Trace{}
	for _, b := range Bugs {
		if clean[b.Variant] == nil {
			clean[b.Variant] = cleanRun(t, b.Variant)
		}
	}
	for _, b := range Bugs {
		t.Run(b.ID, func(t *testing.T) {
			own := found[b.ID]
			if !b.Match(own.Trace, &own.Violation) {
				t.Errorf("rejects its own search's run: %v", &own.Violation)
			}
			others := 0
			for _, o := range Bugs {
				if o.ID == b.ID || o.Property != b.Property || alsoShows[[2]string{o.ID, b.ID}] {
					continue
				}
				f := found[o.ID]
				others++
				if b.Match(f.Trace, &f.Violation) {
					t.Errorf("accepts the %s search's run: %v", o.ID, &f.Violation)
				}
			}
			for _, id := range otherViolations[b.ID] {
				f := found[id]
				v := violationOf(f.Trace, b.Property)
				if v == nil {
					t.Fatalf("the %s search's run does not violate %s", id, b.Property)
				}
				others++
				if b.Match(f.Trace, v) {
					t.Errorf("accepts the %s search's run's %v", id, v)
				}
			}
			for _, sc := range scripted {
				o, _ := LookupBug(sc.bug)
				if o.Property != b.Property {
					continue
				}
				cfg := sc.cfg
				cfg.Lease = lease.DefaultConfig()
				tr, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				v := violationOf(tr, b.Property)
				if v == nil || !o.Match(tr, v) {
					t.Fatalf("%s: want a violation of %s that %s accepts, got %v", sc.what, b.Property, o.ID, v)
				}
				if o.ID == b.ID {
					continue
				}
				others++
				if b.Match(tr, v) {
					t.Errorf("accepts a run of %s (%s): %v", o.ID, sc.what, v)
				}
			}
			if others == 0 {
				t.Errorf("no run of another bug violates %s", b.Property)
			}
			tr := clean[b.Variant]
			v := &Violation{Property: b.Property, At: tr.End, PIDs: []int{tr.Procs[0].PID, tr.Procs[1].PID}}
			if b.Match(tr, v) {
				t.Errorf("accepts a run of %s without violations", b.Variant)
			}
		})
	}
}

// violationOf returns the run's violation of property p, or nil.
func violationOf(tr *trace.Trace, p string) *Violation {
	for _, v := range Check(tr) {
		if v.Property == p {
			return v.Violation
		}
	}
	return nil
}

// cleanRun returns the first run of a search on variant without faults
// that violates no property.
func cleanRun(t *testing.T, variant string) *trace.Trace {
	t.Helper()
	o := sim.SetupOptions{Variant: variant, Procs: 3}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		tr, err := sim.Run(sim.RandomSetup(o, RunSeed(1, i)))
		if err != nil {
			t.Fatal(err)
		}
		bad := false
		for _, v := range Check(tr) {
			bad = bad || v.Violation != nil
		}
		if !bad {
			return tr
		}
		tr.Release()
	}
	t.Fatalf("no run of %s without faults is free of violations", variant)
	return nil
}

// The README's bug table says, in its post column, what the catalogue
// says the post says of each bug.
func TestCatalogueMatchesREADMEPostColumn(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		cols := strings.Split(l, " | ")
		if len(cols) < 6 || !strings.HasPrefix(cols[0], "| `") {
			continue
		}
		id := strings.TrimPrefix(cols[0], "| `")
		id = id[:strings.IndexByte(id, '`')]
		rows[id] = cols[3]
	}
	for _, bug := range Bugs {
		post, ok := rows[bug.ID]
		if !ok {
			t.Errorf("%s: no row in the README's bug table", bug.ID)
			continue
		}
		var want bool
		switch bug.Post {
		case NotMentioned:
			want = post == "no"
		case Shown:
			want = strings.HasPrefix(post, "yes")
		case InWords:
			want = strings.HasPrefix(post, "in words")
		case CalledSafe:
			want = strings.Contains(post, "calls it safe")
		}
		if !want {
			t.Errorf("%s: the README's post column says %q; the catalogue says %v (%s)", bug.ID, post, bug.Post, bug.PostNote)
		}
	}
}
