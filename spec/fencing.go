package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/sim"
)

func checkFencingIf(applicable bool, tr *sim.Trace, iv []sim.Interval) *Violation {
	if !applicable {
		return nil
	}
	return CheckFencing(tr, iv)
}

// CheckFencing checks the epochs of a variant that has them. Each leader's
// workload acted, while it believed it led, on a resource that rejects
// epochs lower than the highest it accepted (the simulator's fenced
// resource). Fencing holds when epochs strictly increase from one
// leadership term to the next, and no two processes ever had actions
// accepted under the same epoch: then no stale leader's action is ever
// accepted after a newer one's.
func CheckFencing(tr *sim.Trace, iv []sim.Interval) *Violation {
	// The epoch each term started with: the first Lead event of the term.
	type term struct {
		proc  int
		from  int64
		epoch int64
		ev    int
	}
	var terms []term
	leading := make([]bool, len(tr.Procs))
	for i, e := range tr.Events {
		if e.Proc < 0 {
			continue
		}
		p := int(e.Proc)
		switch {
		case e.Kind == sim.EvRole:
			leading[p] = e.Role == 2 // lease.RoleLeader
			if leading[p] {
				terms = append(terms, term{proc: p, from: e.T, epoch: -1, ev: i})
			}
		case e.Kind == sim.EvLead && leading[p]:
			for k := len(terms) - 1; k >= 0; k-- {
				if terms[k].proc == p {
					if terms[k].epoch < 0 {
						terms[k].epoch = e.N
					}
					break
				}
			}
		}
	}
	for k := 1; k < len(terms); k++ {
		a, b := terms[k-1], terms[k]
		if a.epoch >= 0 && b.epoch >= 0 && b.epoch <= a.epoch {
			return &Violation{Property: Fencing, At: time.Duration(b.from),
				PIDs: []int{tr.Procs[a.proc].PID, tr.Procs[b.proc].PID}, Events: []int{a.ev, b.ev},
				Detail: fmt.Sprintf("process %d led with epoch %d after process %d led with epoch %d: epochs must strictly increase",
					tr.Procs[b.proc].PID, b.epoch, tr.Procs[a.proc].PID, a.epoch)}
		}
	}
	owner := map[int64]int{}
	for i, e := range tr.Events {
		if e.Kind != sim.EvFence || e.A != 1 {
			continue
		}
		if p, ok := owner[e.N]; ok && p != int(e.Proc) {
			return &Violation{Property: Fencing, At: time.Duration(e.T),
				PIDs: []int{tr.Procs[p].PID, tr.Procs[e.Proc].PID}, Events: []int{i},
				Detail: fmt.Sprintf("the resource accepted epoch %d from process %d and from process %d: an epoch was reused",
					e.N, tr.Procs[p].PID, tr.Procs[e.Proc].PID)}
		}
		owner[e.N] = int(e.Proc)
	}
	return nil
}
