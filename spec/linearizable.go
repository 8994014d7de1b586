package spec

import (
	"github.com/leaselab/leaselab/trace"
	"time"

	"github.com/leaselab/leaselab/model"
)

// LinearizeTimeout is a backstop to porcupine's search on one run's
// history, far past the time its step budget takes (model.StepBudget:
// under a second here, a few on a loaded machine), which bounds it as a
// count so that the verdict is a function of the run. A timeout is
// reported, never taken as a pass.
var LinearizeTimeout = 2 * time.Minute

// CheckLinearizable checks the run's Store history against the lease
// register model (package model): model.Check, with its Witness and
// porcupine.
func CheckLinearizable(tr *trace.Trace) *Violation {
	v := decideLinearizable(tr)
	v.settle()
	return v
}

// decideLinearizable is CheckLinearizable with the violation's details
// (the culprit, its time and process: porcupine's verbose check) left for
// settle: a search settles only the violations it keeps (model.Decide).
func decideLinearizable(tr *trace.Trace) *Violation {
	r, ok := model.Holds(tr, LinearizeTimeout)
	if ok {
		return nil
	}
	end := tr.End
	return &Violation{Property: LinearizableStore, At: end, release: r.Release, settler: func(v *Violation) {
		r := r.Resolve()
		v.Detail, v.HTML = r.Err().Error(), r.WriteHTML
		if op, ok := r.Culprit(); ok {
			v.At = time.Duration(min(op.Return, int64(end)))
			if w, ok := op.Metadata.(model.Who); ok {
				v.PIDs = []int{w.PID}
			}
		}
	}}
}
