package spec

import "github.com/leaselab/leaselab/sim"

// Merging equivalent states (ExploreOptions.Merge). The delay-bounded
// search runs, among its schedules, many that differ from one already
// run only in the order of independent steps; from the state such a
// reordering reaches, it then searches again everything it searched from
// there before. With Merge each run names its state before the first
// pick of every instant (sim.Node: the steps so far as a partial order,
// the faults used, the parked activities), and a run that reaches a
// state already searched from, with the same activity last run (the
// delay bound's default) and no more deviations left than that search
// had, is cut there.
//
// Why a cut loses nothing. The search is depth first, and a state's name
// includes its steps, so no state is named twice on one path: the
// earlier visit's subtree has been searched in full (less its own cuts,
// each covered the same way by a still earlier one). From one state,
// with one last activity, the choices and their outcomes are the same
// (the next steps, the faults each may have, the default order), and a
// search with as many deviations left runs every continuation one with
// fewer would. (A state reached with another activity last is searched
// again: a continuation costs no more than one deviation more from there
// only until a step runs, and a fault or a paused process's step runs
// none, so no fixed allowance covers it.) What it relies on is the
// dependency relation (package sim's por.go), as the reduction does:
// TestMergeSound holds the merged search to the full one on bounds small
// enough to run both, traces and violations.
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

// merger is a merged search's memory: for each state and activity that
// ran last, the most deviations left with which a search from it ran.
type merger struct {
	seen map[[2]uint64]int16
}

// MaxMergeDeviations is the largest delay bound a merged search takes
// (what a remembered state's record holds).
const MaxMergeDeviations = 1000

// newMerger returns an empty memory (2 bytes a state beside its 16-byte
// name: a search remembers millions).
func newMerger() *merger { return &merger{seen: map[[2]uint64]int16{}} }

// key folds the activity that ran last into the state's name.
func key(n sim.Node) [2]uint64 {
	k := n.State
	k[0] ^= (uint64(uint16(n.Last.Proc))<<16 | uint64(uint16(n.Last.Act))) * 0x9e3779b97f4a7c15
	return k
}

// onNode is the hook for the run whose choices d makes: it remembers the
// states past d's prefix (those before it are the current path's, run
// already) and cuts the run at one searched from with enough budget.
func (m *merger) onNode(d *dfs) func(sim.Node) bool {
	return func(n sim.Node) bool {
		if len(d.log) < len(d.prefix) {
			return false // replaying the path to the new choice
		}
		k := key(n)
		left, ok := m.seen[k]
		if ok && int(left) >= n.Left {
			return true
		}
		m.seen[k] = int16(n.Left)
		return false
	}
}
