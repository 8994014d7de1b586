package spec

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Coverage is what a search's runs exercised, read from each run's trace
// and the simulator's record of its faults, not from the algorithm's
// reports: how many leader terms the users' code was handed, in how many
// runs another process than the first leader was handed one, and for each
// fault kind in how many runs it was drawn and in how many one of its
// faults took effect. A search that says "no violation" has shown it for
// what it exercised; a kind drawn in many runs that never took effect was
// not searched at all (TestEveryFaultKindTakesEffect).
type Coverage struct {
	Runs int
	// Terms counts the leader contexts handed to the users' code
	// (OnStartedLeading: trace.EvStarted).
	Terms int
	// Changed counts the runs in which a process was handed a leader
	// context after another process had been.
	Changed int
	// Kinds are the fault kinds drawn, in trace.FaultKind's order.
	Kinds []KindCoverage
}

// KindCoverage is how often one fault kind was drawn and took effect.
type KindCoverage struct {
	Kind trace.FaultKind
	// Drawn counts the runs whose setup has a fault of the kind (for
	// nobootid and samepid, which are setups rather than events: a
	// machine or process without a boot id, processes sharing a PID).
	Drawn int
	// Fired counts the runs in which one of them took effect (sim.Fired;
	// every run that drew a setup kind).
	Fired int
	// NoLeader counts the runs in which one aimed at the leader came
	// while no process led, and so had no effect (sim.NoLeader).
	NoLeader int
}

// coverage accumulates a Coverage run by run, without allocating.
type coverage struct {
	runs, terms, changed   int
	drawn, fired, noLeader [64]int
}

// add counts one run.
func (c *coverage) add(cfg sim.Config, tr *trace.Trace) {
	c.runs++
	first := -1
	changed := false
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvStarted {
			c.terms++
			if first < 0 {
				first = int(e.Proc)
			} else if int(e.Proc) != first {
				changed = true
			}
		}
	}
	if changed {
		c.changed++
	}
	var drawn, fired, noLeader uint64
	faults, fates := sim.Fates(tr)
	for i, f := range faults {
		if f.Kind >= 64 {
			continue
		}
		bit := uint64(1) << f.Kind
		drawn |= bit
		if i < len(fates) {
			switch fates[i] {
			case sim.Fired:
				fired |= bit
			case sim.NoLeader:
				noLeader |= bit
			}
		}
	}
	if noBootID(cfg) {
		drawn |= 1 << trace.NoBootID
		fired |= 1 << trace.NoBootID
	}
	if samePID(cfg) {
		drawn |= 1 << trace.SamePID
		fired |= 1 << trace.SamePID
	}
	for m := drawn; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		c.drawn[k]++
		if fired&(1<<k) != 0 {
			c.fired[k]++
		}
		if noLeader&(1<<k) != 0 {
			c.noLeader[k]++
		}
	}
}

func noBootID(cfg sim.Config) bool {
	if cfg.NoBootID {
		return true
	}
	for _, p := range cfg.Procs {
		if p.NoBootID {
			return true
		}
	}
	return false
}

func samePID(cfg sim.Config) bool {
	for i, p := range cfg.Procs {
		for _, q := range cfg.Procs[:i] {
			if p.PID == q.PID {
				return true
			}
		}
	}
	return false
}

// result is the Coverage counted so far.
func (c *coverage) result() Coverage {
	out := Coverage{Runs: c.runs, Terms: c.terms, Changed: c.changed}
	for k := range c.drawn {
		if c.drawn[k] > 0 {
			out.Kinds = append(out.Kinds, KindCoverage{Kind: trace.FaultKind(k), Drawn: c.drawn[k], Fired: c.fired[k], NoLeader: c.noLeader[k]})
		}
	}
	return out
}

// Unexercised returns the kinds drawn in at least min runs of which none
// took effect: faults the search asked for and did not inflict.
func (c Coverage) Unexercised(min int) []trace.FaultKind {
	var out []trace.FaultKind
	for _, k := range c.Kinds {
		if k.Fired == 0 && k.Drawn >= min {
			out = append(out, k.Kind)
		}
	}
	return out
}

// String is the coverage on one line: "31442 leader terms, a change of
// leader in 6020 of 10000 runs; faults in effect (runs in effect/drawn):
// kill 2301/2400, ...".
func (c Coverage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d leader terms, a change of leader in %d of %d runs", c.Terms, c.Changed, c.Runs)
	if len(c.Kinds) > 0 {
		b.WriteString("; faults in effect (runs in effect/drawn):")
		for i, k := range c.Kinds {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s %d/%d", k.Kind, k.Fired, k.Drawn)
			if k.NoLeader > 0 {
				fmt.Fprintf(&b, " (%d no leader)", k.NoLeader)
			}
		}
	}
	return b.String()
}

// Kind returns the coverage of kind k (zero if it was never drawn).
func (c Coverage) Kind(k trace.FaultKind) KindCoverage {
	if i := slices.IndexFunc(c.Kinds, func(x KindCoverage) bool { return x.Kind == k }); i >= 0 {
		return c.Kinds[i]
	}
	return KindCoverage{Kind: k}
}
