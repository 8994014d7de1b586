package spec

import "github.com/leaselab/leaselab/sim"

// pauseRep is the first pause of a process run from a tie: its candidate,
// the tie's other candidates run before it (done), and whether a run of
// its branch went on past the tie's instant.
type pauseRep struct {
	proc, v int
	done    uint64
	escaped bool
}

// pauseDoomed reports whether the pause v at tie nd, of another length
// than a pause of its process run from the tie before, would reach only
// runs cut short at the tie's instant: the first one run (dporNode.reps)
// did, and from the same sleep set but for the pauses of the process.
// Within its instant a pause's length shows nowhere but in its own event
// (the process resumes at a later instant; while it is paused none of its
// pauses is a candidate), so the run of either length takes the same
// steps, meets the same sleepers, and reports the same races, at every
// choice of its branch, down to where each is cut short. Skipping it
// loses no race: the first length's runs added them already. Skipped, it
// is recorded as the tie's step of v (dporNode.first), the first
// length's: it sleeps in later branches, as run it would.
// Registers v as its process's first pause run when there is none.
func pauseDoomed(nd *dporNode, v int) bool {
	c := nd.cands[v]
	if c.Act > sim.CandPause {
		return false
	}
	var pauses uint64 // the process's pauses
	for k, x := range nd.cands {
		if x.Proc == c.Proc && x.Act <= sim.CandPause {
			pauses |= 1 << k
		}
	}
	for _, rp := range nd.reps {
		if rp.proc != c.Proc {
			continue
		}
		if rp.escaped || nd.firstSet&(1<<rp.v) == 0 || rp.done&^pauses != nd.done&^pauses {
			return false
		}
		nd.setFirst(v, nd.first[rp.v])
		return true
	}
	nd.reps = append(nd.reps, pauseRep{proc: c.Proc, v: v, done: nd.done &^ (1 << v)})
	return false
}
