package sim

import (
	"bytes"
	"fmt"
	"github.com/leaselab/leaselab/trace"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var _ Scheduler = (*PCT)(nil)

// pctScript is a fixed sequence of candidate sets, as the world would offer
// them: two or more distinct activities ordered by process then activity,
// with activities appearing over time.
func pctScript(n int) [][]Candidate {
	rng := rand.New(rand.NewPCG(42, 7))
	var out [][]Candidate
	for i := 0; i < n; i++ {
		acts := 1 + i/10 // activities per process appear as the run goes on
		var all []Candidate
		for p := 0; p < 4; p++ {
			for a := 0; a < min(acts, 3); a++ {
				all = append(all, Candidate{Proc: p, Act: a})
			}
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		set := slices.Clone(all[:2+rng.IntN(len(all)-1)])
		slices.SortFunc(set, func(x, y Candidate) int {
			if x.Proc != y.Proc {
				return x.Proc - y.Proc
			}
			return x.Act - y.Act
		})
		out = append(out, set)
	}
	return out
}

func pctPicks(p *PCT, script [][]Candidate) []Candidate {
	var out []Candidate
	for _, set := range script {
		k := p.Pick(set)
		if k < 0 || k >= len(set) {
			panic(fmt.Sprintf("Pick returned %d for %d candidates", k, len(set)))
		}
		out = append(out, set[k])
	}
	return out
}

func TestPCTDeterministic(t *testing.T) {
	script := pctScript(200)
	distinct := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		a := pctPicks(NewPCT(seed, 3, 200), script)
		b := pctPicks(NewPCT(seed, 3, 200), script)
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d: two PCTs with the same seed picked differently", seed)
		}
		distinct[fmt.Sprint(a)] = true
	}
	if len(distinct) < 2 {
		t.Errorf("20 seeds gave %d distinct pick sequences; want several", len(distinct))
	}
}

// With depth 1 there are no change points: every pick is the candidate of
// highest priority, and the relative order of two activities never changes
// once both are seen.
func TestPCTPicksHighestPriority(t *testing.T) {
	script := pctScript(200)
	for seed := uint64(0); seed < 20; seed++ {
		p := NewPCT(seed, 1, 10)
		beat := map[[2]Candidate]bool{}
		for n, set := range script {
			k := p.Pick(set)
			cp, ok := p.priority(set[k])
			if !ok {
				t.Fatalf("seed %d pick %d: chosen %v has no priority", seed, n, set[k])
			}
			for i, c := range set {
				pr, ok := p.priority(c)
				if !ok {
					t.Fatalf("seed %d pick %d: candidate %v has no priority", seed, n, c)
				}
				if i == k {
					continue
				}
				if pr >= cp {
					t.Fatalf("seed %d pick %d: chose %v (priority %d) over %v (priority %d)", seed, n, set[k], cp, c, pr)
				}
				if beat[[2]Candidate{c, set[k]}] {
					t.Fatalf("seed %d pick %d: %v beat %v, which had beaten it before", seed, n, set[k], c)
				}
				beat[[2]Candidate{set[k], c}] = true
			}
		}
	}
}

// With depth 2 and steps 1 the only change point is the first pick: the
// activity it chooses is demoted, so the next pick between the same two
// chooses the other, and keeps doing so.
func TestPCTChangePointDemotes(t *testing.T) {
	a, b := Candidate{Proc: 0, Act: 0}, Candidate{Proc: 1, Act: 0}
	set := []Candidate{a, b}
	firsts := map[Candidate]int{}
	for seed := uint64(0); seed < 40; seed++ {
		p := NewPCT(seed, 2, 1)
		first := set[p.Pick(set)]
		firsts[first]++
		if pr, _ := p.priority(first); pr != 1 {
			t.Fatalf("seed %d: demoted activity has priority %d, want depth-1 = 1", seed, pr)
		}
		for i := 0; i < 3; i++ {
			if next := set[p.Pick(set)]; next == first {
				t.Fatalf("seed %d pick %d: chose %v again after it was demoted", seed, i+2, next)
			}
		}
	}
	if firsts[a] == 0 || firsts[b] == 0 {
		t.Errorf("first picks over 40 seeds: %v; want both activities to win sometimes", firsts)
	}
}

// Every change point demotes the activity chosen at that pick to depth-i.
func TestPCTChangePoints(t *testing.T) {
	script := pctScript(60)
	for seed := uint64(0); seed < 30; seed++ {
		const depth, steps = 4, 60
		p := NewPCT(seed, depth, steps)
		if len(p.changes) != depth-1 {
			t.Fatalf("seed %d: %d change points, want %d", seed, len(p.changes), depth-1)
		}
		at := map[int]int{}
		for _, c := range p.changes {
			if c.step < 1 || c.step > steps {
				t.Fatalf("seed %d: change point %d outside [1, %d]", seed, c.step, steps)
			}
			if _, dup := at[c.step]; dup {
				t.Fatalf("seed %d: change points coincide at %d", seed, c.step)
			}
			at[c.step] = c.prio
		}
		for n, set := range script {
			chosen := set[p.Pick(set)]
			if want, ok := at[n+1]; ok {
				if pr, _ := p.priority(chosen); pr != want {
					t.Fatalf("seed %d: after change point at pick %d, %v has priority %d, want %d", seed, n+1, chosen, pr, want)
				}
			}
		}
	}
}

// Priorities are distinct; initial ones are at least depth, demoted ones
// below it.
func TestPCTPrioritiesDistinct(t *testing.T) {
	script := pctScript(300)
	for seed := uint64(0); seed < 30; seed++ {
		const depth = 5
		p := NewPCT(seed, depth, 100)
		seen := map[Candidate]bool{}
		for n, set := range script {
			p.Pick(set)
			for _, c := range set {
				seen[c] = true
			}
			byPrio := map[int]Candidate{}
			demoted := 0
			for c := range seen {
				pr, ok := p.priority(c)
				if !ok {
					t.Fatalf("seed %d pick %d: %v has no priority", seed, n, c)
				}
				if d, dup := byPrio[pr]; dup {
					t.Fatalf("seed %d pick %d: %v and %v share priority %d", seed, n, c, d, pr)
				}
				byPrio[pr] = c
				if pr < 1 {
					t.Fatalf("seed %d pick %d: %v has priority %d < 1", seed, n, c, pr)
				}
				if pr < depth {
					demoted++
				}
			}
			if demoted > p.next {
				t.Fatalf("seed %d pick %d: %d demoted, but only %d change points passed", seed, n, demoted, p.next)
			}
		}
		if p.next != depth-1 {
			t.Errorf("seed %d: %d of %d change points reached in %d picks of 100 steps", seed, p.next, depth-1, len(script))
		}
	}
}

// New activities take a uniformly random rank: each of three activities
// seen together for the first time wins the first pick about a third of
// the time.
func TestPCTInitialPrioritiesRandom(t *testing.T) {
	set := []Candidate{{0, 0}, {1, 0}, {2, 0}}
	wins := make([]int, len(set))
	for seed := uint64(0); seed < 300; seed++ {
		wins[NewPCT(seed, 1, 1).Pick(set)]++
	}
	for i, w := range wins {
		if w < 60 {
			t.Errorf("candidate %d won %d of 300 first picks; want about 100 (all: %v)", i, w, wins)
		}
	}
}

func TestPCTString(t *testing.T) {
	if got, want := NewPCT(7, 3, 50).String(), "pct(seed=7 depth=3 steps=50)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := NewPCT(7, 0, 0).String(); !strings.Contains(got, "depth=1 steps=1") {
		t.Errorf("clamped String() = %q", got)
	}
}

// countingSched counts the Pick calls of the scheduler it wraps.
type countingSched struct {
	Scheduler
	n int
}

func (c *countingSched) Pick(cands []Candidate) int { c.n++; return c.Scheduler.Pick(cands) }

// pctCfg is a run where steps tie often: three processes all starting at
// 0, system calls of exactly 10 µs, timers never late.
func pctCfg(sched Scheduler) Config {
	return Config{
		Variant: "seed-naive",
		Procs:   []ProcSpec{{PID: 100}, {PID: 200}, {PID: 300}},
		Horizon: 10 * time.Second,
		// The run's own seed is fixed: with constant latency it draws
		// nothing, so all the variation comes from the scheduler.
		Seed:       0,
		SyscallMin: 10 * time.Microsecond, SyscallMax: 10 * time.Microsecond,
		Scheduler: sched,
	}
}

// leadersFirst returns the processes in order of their first leadership.
func leadersFirst(tr *trace.Trace) []int {
	var out []int
	for _, iv := range tr.Leadership() {
		if !slices.Contains(out, iv.Proc) {
			out = append(out, iv.Proc)
		}
	}
	return out
}

func TestPCTRunExploresAndReproduces(t *testing.T) {
	orders := map[string]int{}
	picks := 0
	for seed := uint64(0); seed <= 50; seed++ {
		cs := &countingSched{Scheduler: NewPCT(seed, 3, 50)}
		tr, err := Run(pctCfg(cs))
		if err != nil {
			t.Fatal(err)
		}
		picks += cs.n
		orders[fmt.Sprint(leadersFirst(tr))]++
		var a bytes.Buffer
		if err := tr.WriteTrace(&a); err != nil {
			t.Fatal(err)
		}
		tr2, err := Run(pctCfg(NewPCT(seed, 3, 50)))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := tr2.WriteTrace(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("seed %d: two runs with the same PCT seed wrote different traces", seed)
		}
	}
	t.Logf("leaders-first orders over 51 seeds: %v; %.1f picks per run", orders, float64(picks)/51)
	if picks == 0 {
		t.Fatal("no step ever tied: the setup gives PCT nothing to decide")
	}
	if len(orders) < 2 {
		t.Errorf("PCT gave %d leaders-first order over 51 seeds (%v); want at least 2", len(orders), orders)
	}
}
