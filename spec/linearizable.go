package spec

import (
	"github.com/leaselab/leaselab/trace"
	"time"

	"github.com/leaselab/leaselab/model"
)

// LinearizeTimeout bounds porcupine's search on one run's history. A run
// has a few hundred store operations on one register; the check takes
// microseconds to milliseconds. A timeout is reported, never taken as a
// pass.
var LinearizeTimeout = 10 * time.Second

// CheckLinearizable checks the run's Store history against the lease
// register model (package model): model.Check, with its Witness and
// porcupine.
func CheckLinearizable(tr *trace.Trace) *Violation {
	r := model.Check(tr, LinearizeTimeout)
	if r.Linearizable {
		return nil
	}
	v := &Violation{Property: LinearizableStore, At: tr.End, Detail: r.Err().Error(), HTML: r.WriteHTML}
	if op, ok := r.Culprit(); ok {
		v.At = time.Duration(min(op.Return, int64(tr.End)))
		if w, ok := op.Metadata.(model.Who); ok {
			v.PIDs = []int{w.PID}
		}
	}
	return v
}
