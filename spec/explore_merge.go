package spec

import "github.com/leaselab/leaselab/sim"

// Merging equivalent states (ExploreOptions.Merge). The delay-bounded
// search runs, among its schedules, many that differ from one already
// run only in the order of independent steps; from the state such a
// reordering reaches, it then searches again everything it searched from
// there before. With Merge each run names its state before every pick
// (sim.Node: the steps so far as a partial order, the faults used, the
// activity that ran last and the deviations left), and a run that
// reaches a state already searched from is cut there, unless it has more
// budget left than that search had.
//
// Why a cut loses nothing. The search is depth first, and a state's name
// includes how many steps led to it, so no state is named twice on one
// path: the earlier visit's subtree has been searched in full (less its
// own cuts, each covered the same way by a still earlier one). From one
// state, the choices and their outcomes are the same: the next steps,
// the faults each may have (the budgets used are in the name), and the
// default order, which depends on the activity that ran last. A
// continuation costs, from a state where another activity ran last, at
// most one deviation more (its first step; from then on the two agree).
// So a run is cut where the earlier visit had, with the same last
// activity, at least as many deviations left, or, with another, at
// least one more. What it relies on is the dependency relation (package
// sim's por.go), as the reduction does: TestMergeSound holds the merged
// search to the full one on bounds small enough to run both, traces and
// violations.
//
// A violation found by a run the cut would have continued is found by
// the equivalent run from the earlier visit, in as many steps (steps are
// counted by instant, which reordering within an instant keeps), so the
// counterexample kept per property has as few steps as without merging.

// MergeStats counts what a merged exploration did beyond its schedules.
type MergeStats struct {
	Cut    int // runs cut short at a state already searched from (not counted as schedules)
	States int // states named and remembered
}

// merger is a merged search's memory: for each state, the most
// deviations left with which a search from it ran, and the activity that
// ran last then.
type merger struct {
	seen map[[2]uint64]visit
	// every remembers the state at every pick, not only at the first of
	// each instant (sim.Node.First): more cuts, and much more memory
	// (the tests, whose toys run in one instant).
	every bool
}

// MaxMergeDeviations is the largest delay bound a merged search takes
// (what a remembered state's record holds).
const MaxMergeDeviations = 1000

// visit is a remembered state's search: 6 bytes, beside a 16-byte name
// (a search remembers millions).
type visit struct {
	left int16 // (Explore refuses a bound beyond MaxMergeDeviations)
	proc int8
	act  int16
}

func (v visit) lastIs(c sim.Candidate) bool { return int(v.proc) == c.Proc && int(v.act) == c.Act }

func newMerger() *merger { return &merger{seen: map[[2]uint64]visit{}} }

// onNode is the hook for the run whose choices d makes: it remembers the
// states past d's prefix (those before it are the current path's, run
// already) and cuts the run at one searched from with enough budget.
func (m *merger) onNode(d *dfs) func(sim.Node) bool {
	return func(n sim.Node) bool {
		if len(d.log) < len(d.prefix) || !n.First && !m.every {
			return false // replaying the path to the new choice
		}
		v, ok := m.seen[n.State]
		if ok && (int(v.left) >= n.Left+1 || v.lastIs(n.Last) && int(v.left) >= n.Left) {
			return true
		}
		if !ok || n.Left > int(v.left) {
			m.seen[n.State] = visit{left: int16(n.Left), proc: int8(n.Last.Proc), act: int16(n.Last.Act)}
		}
		return false
	}
}
