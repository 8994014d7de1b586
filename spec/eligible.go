package spec

import (
	"time"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// span is a half-open interval of true time.
type span struct{ from, to int64 }

// eligible returns, for each process, when it was alive and not paused:
// the times at which it could have become leader.
func eligible(tr *trace.Trace) [][]span {
	out := unpaused(tr)
	// A process out of descriptors (an EMFile stretch) can open nothing:
	// it cannot become leader until the stretch ends, but the others can.
	// Nothing tells it that the stretch is over: it learns at its next
	// try, which a process whose reads fail makes within a watch interval.
	// Nor can it observe the lease meanwhile if reading it needs a
	// descriptor (the reference lists the lock's directory): it owes a
	// leader from a watch interval (its own) after the stretch's end.
	for _, st := range tr.Stretches() {
		if st.Proc >= 0 {
			out[st.Proc] = cut(out[st.Proc], st.From, st.To+int64(emfileLag(tr, int(st.Proc))))
		}
	}
	return out
}

// longestWatch is the longest watch interval of the run's processes, in
// true time on a clock as slow as its drift bound allows (slowWait): the
// longest back-off after a failed call.
func longestWatch(tr *trace.Trace) time.Duration {
	w := slowWait(tr.Run.Lease.WatchInterval, sim.DriftBoundOf(tr.Run.Lease))
	for _, p := range tr.Procs {
		if p.Lease.WatchInterval != 0 {
			w = max(w, slowWait(p.Lease.WatchInterval, sim.DriftBoundOf(p.Lease)))
		}
	}
	return w
}

// emfileLag is how long after its EMFile stretch ends process p may go
// on unaware of it: its watch interval, within which a process whose
// reads fail tries again, in true time on a clock as slow as its drift
// bound allows (slowWait).
func emfileLag(tr *trace.Trace, p int) time.Duration {
	l := tr.Procs[p].Lease
	if l.WatchInterval == 0 {
		l = tr.Run.Lease
	}
	return slowWait(l.WatchInterval, sim.DriftBoundOf(l))
}

// cut removes [from, to) from spans.
func cut(spans []span, from, to int64) []span {
	var out []span
	for _, s := range spans {
		if s.from < from {
			out = append(out, span{s.from, min(s.to, from)})
		}
		if s.to > to {
			out = append(out, span{max(s.from, to), s.to})
		}
	}
	return out
}

// unpaused returns, for each process, when it was alive and not stopped
// by a SIGSTOP of its own.
func unpaused(tr *trace.Trace) [][]span {
	out := make([][]span, len(tr.Procs))
	end := int64(tr.End)
	from := make([]int64, len(tr.Procs))
	on := make([]bool, len(tr.Procs))
	dead := make([]bool, len(tr.Procs))
	for i, p := range tr.Procs {
		from[i], on[i] = int64(p.Start), true
	}
	stop := func(p int, t int64) {
		if on[p] {
			if t > from[p] {
				out[p] = append(out[p], span{from[p], t})
			}
			on[p] = false
		}
	}
	for _, e := range tr.Events {
		if e.Proc < 0 {
			continue
		}
		p := int(e.Proc)
		switch {
		case e.Kind == trace.EvExit:
			stop(p, e.T)
			dead[p] = true
		case e.Kind == trace.EvFault && e.FaultKind().IsPause() && !e.Missed():
			stop(p, e.T)
		case e.Kind == trace.EvFault && e.FaultKind() == trace.Cont && !dead[p] && !on[p]:
			// A process continued before it started runs from its start.
			from[p], on[p] = max(e.T, int64(tr.Procs[p].Start)), true
		}
	}
	for p := range out {
		if on[p] && !dead[p] {
			stop(p, end)
		}
	}
	return out
}
