package spec

import (
	"fmt"
	"github.com/leaselab/leaselab/trace"
	"time"
)

func checkFencingIf(applicable bool, tr *trace.Trace, iv []trace.Interval) *Violation {
	if !applicable {
		return nil
	}
	return CheckFencing(tr, iv)
}

// CheckFencing checks the epochs of a variant that has them. Each leader's
// workload acted, while it believed it led, on a resource that rejects
// epochs lower than the highest it accepted (the simulator's fenced
// resource). Fencing holds when epochs strictly increase from one
// leadership term to the next, in the order of iv (Trace.Leadership: by
// start, in step order), and no two processes ever had actions accepted
// under the same epoch: then no stale leader's action is ever accepted
// after a newer one's.
func CheckFencing(tr *trace.Trace, iv []trace.Interval) *Violation {
	// Each leadership interval's epoch is that of the term the user's
	// OnStartedLeading was given (the EvStarted that opened it, not
	// another at the same instant: a context handed over already done is
	// no term); on a recorded trace, whose leadership is reported, the
	// first Lead event inside it.
	epochs := make([]int64, len(iv))
	for k, x := range iv {
		epochs[k] = -1
		if x.Start < len(tr.Events) {
			if e := &tr.Events[x.Start]; e.Kind == trace.EvStarted && int(e.Proc) == x.Proc && e.T == x.From {
				epochs[k] = e.Epoch()
				continue
			}
		}
		// Intervals made otherwise: the first EvStarted at their start.
		for _, e := range tr.Events {
			if !tr.Recorded && e.Kind == trace.EvStarted && int(e.Proc) == x.Proc && e.T == x.From ||
				tr.Recorded && e.Kind == trace.EvLead && int(e.Proc) == x.Proc && e.T >= x.From && e.T <= x.To {
				epochs[k] = e.Epoch()
				break
			}
		}
	}
	for k := 1; k < len(iv); k++ {
		a, b := iv[k-1], iv[k]
		ea, eb := epochs[k-1], epochs[k]
		// (A term of one process after another of its own with the same
		// epoch is a violation too: once a term has ended, an action of
		// it still under way must be refused by the fenced resource, which
		// it is not if the next term has its epoch. An exemption for "a
		// renewal after a deadline resuming its own epoch" let a mutant of
		// the reference that renewed a lapsed term pass: a probe.)
		if ea < 0 || eb < 0 || eb > ea {
			continue
		}
		return &Violation{Property: Fencing, At: time.Duration(b.From),
			PIDs: []int{tr.Procs[a.Proc].PID, tr.Procs[b.Proc].PID},
			Detail: fmt.Sprintf("process %s led with epoch %d after process %s led with epoch %d: epochs must strictly increase",
				tr.ProcName(b.Proc), eb, tr.ProcName(a.Proc), ea)}
	}
	owner := map[int64]int{}
	for i, e := range tr.Events {
		if e.Kind != trace.EvFence || !e.Accepted() {
			continue
		}
		if p, ok := owner[e.Epoch()]; ok && p != int(e.Proc) {
			return &Violation{Property: Fencing, At: time.Duration(e.T),
				PIDs: []int{tr.Procs[p].PID, tr.Procs[e.Proc].PID}, Events: []int{i},
				Detail: fmt.Sprintf("the resource accepted epoch %d from process %s and from process %s: an epoch was reused",
					e.Epoch(), tr.ProcName(p), tr.ProcName(int(e.Proc)))}
		}
		owner[e.Epoch()] = int(e.Proc)
	}
	return nil
}
