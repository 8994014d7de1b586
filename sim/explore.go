package sim

import (
	"github.com/leaselab/leaselab/trace"
	"syscall"
	"time"
)

// Explore turns a run into one branch of a systematic search (package
// spec's Explore): before every step the Chooser is asked whether the
// process about to step is killed, signalled, paused, or has its system
// call fail, while budgets last, and every tie is ordered by a
// delay-bounded scheduler. The fast path is off, so every scheduling point
// is a choice point.
type Explore struct {
	Chooser Chooser
	// Budgets: how many of each a run may inject.
	Crashes, Terms, Pauses, FSErrors, Jumps int
	// PauseLengths are the lengths a pause may take.
	PauseLengths []time.Duration
	// JumpSizes are the steps the machine's wall clock may take.
	JumpSizes []time.Duration
	// Preemptions bounds deviations from the default schedule, which runs
	// the activity that ran last while it can, then the lowest-numbered
	// ready one (delay bounding: a preemption, or any other reordering of
	// same-instant steps, costs one).
	Preemptions int
}

// exploreState is a run's use of its Explore budgets.
type exploreState struct {
	crashes, terms, pauses, fserrs, jumps, deviations int
	last                                              *activity
}

// exploreStep offers the faults at the step activity a is about to take.
// It reports whether a still takes its step.
func (w *World) exploreStep(a *activity) bool {
	e, s := w.cfg.Explore, &w.ex
	p := a.p
	if s.crashes < e.Crashes && e.Chooser.Choose(2) == 1 {
		s.crashes++
		w.fire(Fault{Kind: trace.Kill, Proc: p.idx, At: time.Duration(w.now)}, nil)
		return false
	}
	if s.terms < e.Terms && e.Chooser.Choose(2) == 1 {
		s.terms++
		w.fire(Fault{Kind: trace.Term, Proc: p.idx, At: time.Duration(w.now)}, nil)
		if p.dead {
			return false
		}
	}
	if s.pauses < e.Pauses && len(e.PauseLengths) > 0 {
		if k := e.Chooser.Choose(1 + len(e.PauseLengths)); k > 0 {
			s.pauses++
			w.fire(Fault{Kind: trace.Stop, Proc: p.idx, At: time.Duration(w.now), Dur: e.PauseLengths[k-1]}, nil)
			p.parked = append(p.parked, a)
			return false
		}
	}
	if s.jumps < e.Jumps && len(e.JumpSizes) > 0 {
		if k := e.Chooser.Choose(1 + len(e.JumpSizes)); k > 0 {
			s.jumps++
			w.fire(Fault{Kind: trace.Jump, At: time.Duration(w.now), Delta: e.JumpSizes[k-1]}, nil)
		}
	}
	if s.fserrs < e.FSErrors && a.pendingSyscall && e.Chooser.Choose(2) == 1 {
		s.fserrs++
		a.inject = syscall.ENOSPC
	}
	return true
}

// delayBounded is Explore's scheduler.
type delayBounded struct{ w *World }

func (d delayBounded) Pick(cands []Candidate) int {
	w := d.w
	def := 0
	if l := w.ex.last; l != nil {
		for i, c := range cands {
			if c.Proc == l.p.idx && c.Act == l.id {
				def = i
			}
		}
	}
	if w.ex.deviations >= w.cfg.Explore.Preemptions {
		return def
	}
	k := w.cfg.Explore.Chooser.Choose(len(cands))
	if k != def {
		w.ex.deviations++
	}
	return k
}
