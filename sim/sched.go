package sim

import "math/rand/v2"

// Candidate is an activity that may take the next step.
type Candidate struct {
	Proc int // index of the process in Config.Procs
	Act  int // the activity's number within its process, in order of start
}

// Scheduler decides the order of steps that are ready at the same instant.
// Steps at different instants run in time order; which of several steps
// ready at one instant runs first is the scheduler's choice, and so is
// whether any step may be reordered at all. Implementations must be
// deterministic functions of their own state and the candidates offered:
// that is what makes a run a pure function of its seed.
//
// Later schedulers (PCT, exhaustive, replay of a decision list, rapid) plug
// in here.
type Scheduler interface {
	// Pick returns the index in cands of the step to run next. cands has at
	// least two entries, ordered by process, then activity.
	Pick(cands []Candidate) int
}

// Random picks uniformly among the candidates.
type Random struct{ rng *rand.Rand }

// NewRandom returns a uniform random scheduler seeded with seed.
func NewRandom(seed uint64) *Random {
	return &Random{rng: rand.New(rand.NewPCG(seed, randomStream))}
}

// randomStream is the PCG stream of NewRandom.
const randomStream = 0x5ced

// Pick implements Scheduler.
func (r *Random) Pick(cands []Candidate) int { return r.rng.IntN(len(cands)) }
