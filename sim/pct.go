package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// PCT is the probabilistic concurrency testing scheduler of Burckhardt,
// Kothari, Musuvathi and Nagarakatte, "A Randomized Scheduler with
// Probabilistic Guarantees of Finding Bugs" (ASPLOS 2010).
//
// Every activity gets a distinct random initial priority, at least depth,
// when it is first offered as a candidate; Pick always runs the candidate of
// highest priority. depth-1 priority change points k_1..k_{depth-1} are drawn
// uniformly and distinctly from [1, steps]; when the k_i-th decision has been
// made, the activity it chose is demoted to priority depth-i, below every
// initial priority. For a program with n activities that makes at most k
// steps, a bug of depth d is then found by one run with probability at least
// 1/(n·k^(d-1)).
//
// Adaptation to this simulator. In the paper the scheduler controls every
// step of every thread, and the change points count steps: after step k_i the
// running thread is demoted. Here steps at different instants always run in
// time order, and the scheduler is consulted only when two or more steps are
// ready at the same instant; everything it can reorder is the order among
// such ties. So a "step" of PCT is one Pick call: change points are drawn
// from [1, steps] with steps an estimate of the number of Pick calls a run
// makes (not of its system calls), and the activity demoted at change point
// i is the one chosen by the k_i-th Pick call. Activities are discovered
// lazily, at the first Pick that offers them; inserting each new one at a
// uniformly random rank among those not yet demoted gives every set of
// activities a uniformly random relative order, as the paper's random
// initial assignment does. An activity never offered in a tie needs no
// priority at all.
//
// A PCT carries state across Pick calls: use a fresh one per run (NewPCT
// with the same arguments reproduces the run).
type PCT struct {
	seed  uint64
	depth int
	steps int
	rng   *rand.Rand

	// ranked holds the activities not yet demoted, by ascending priority;
	// the one at index j has priority depth+j.
	ranked []Candidate
	prio   map[Candidate]int
	// changes are the change points ordered by step; next indexes the
	// first not yet reached.
	changes []change
	next    int
	calls   int // Pick calls made so far
}

// change is one priority change point: after Pick call step, the chosen
// activity gets priority prio.
type change struct{ step, prio int }

// NewPCT returns a PCT scheduler seeded with seed that targets bugs of the
// given depth (at least 1: depth-1 change points) in runs of about steps
// scheduling decisions (at least 1). Out-of-range arguments are clamped.
// If depth-1 exceeds steps, the change points cannot all be distinct and
// some coincide; the last applied (the lowest priority) wins.
func NewPCT(seed uint64, depth int, steps int) *PCT {
	depth = max(depth, 1)
	steps = max(steps, 1)
	p := &PCT{
		seed:  seed,
		depth: depth,
		steps: steps,
		rng:   rand.New(rand.NewPCG(seed, 0x9c7)),
		prio:  make(map[Candidate]int),
	}
	used := make(map[int]bool)
	for i := 1; i < depth; i++ {
		k := 1 + p.rng.IntN(steps)
		for used[k] && len(used) < steps {
			k = 1 + p.rng.IntN(steps)
		}
		used[k] = true
		p.changes = append(p.changes, change{step: k, prio: depth - i})
	}
	// Stable: coinciding points apply in order of i, so the lowest wins.
	slices.SortStableFunc(p.changes, func(a, b change) int { return a.step - b.step })
	return p
}

// Pick implements Scheduler: it returns the candidate of highest priority.
func (p *PCT) Pick(cands []Candidate) int {
	// Admit new activities first: admitting one renumbers others.
	for _, c := range cands {
		if _, ok := p.prio[c]; !ok {
			p.admit(c)
		}
	}
	best := 0
	for i, c := range cands {
		if p.prio[c] > p.prio[cands[best]] {
			best = i
		}
	}
	p.calls++
	for p.next < len(p.changes) && p.changes[p.next].step == p.calls {
		p.demote(cands[best], p.changes[p.next].prio)
		p.next++
	}
	return best
}

// admit gives a newly seen activity a uniformly random rank among the
// activities not yet demoted.
func (p *PCT) admit(c Candidate) {
	j := p.rng.IntN(len(p.ranked) + 1)
	p.ranked = slices.Insert(p.ranked, j, c)
	p.renumber(j)
}

// demote lowers c's priority to pr, below every initial priority.
func (p *PCT) demote(c Candidate, pr int) {
	if j := slices.Index(p.ranked, c); j >= 0 {
		p.ranked = slices.Delete(p.ranked, j, j+1)
		p.renumber(j)
	}
	p.prio[c] = pr
}

// renumber refreshes the priorities of ranked[j:].
func (p *PCT) renumber(j int) {
	for ; j < len(p.ranked); j++ {
		p.prio[p.ranked[j]] = p.depth + j
	}
}

// priority returns c's current priority and whether c has been seen.
func (p *PCT) priority(c Candidate) (int, bool) {
	pr, ok := p.prio[c]
	return pr, ok
}

// String describes the scheduler's parameters.
func (p *PCT) String() string {
	return fmt.Sprintf("pct(seed=%d depth=%d steps=%d)", p.seed, p.depth, p.steps)
}
