package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// StoppedCallback is the property that the user's OnStoppedLeading keeps
// lease.Run's word, as the user's code sees it: it is called once for
// every OnStartedLeading (never twice, never without one, and before the
// next OnStartedLeading), only once every leader context the user was
// given is done, and, on a graceful shutdown, before the lease is
// released (the user stops its work there, and the release hands over at
// once). A term whose context ended while its process lives on is told
// before the process has begun three store calls since (it finishes what
// was in flight, and may read once to learn why it lost; then it watches,
// or tries to lead, and must have called it), and before the process
// exits of its own code (a SIGTERM's graceful exit); and in time: within
// Slack and HandoverCalls of the run's longest calls of its process's
// running (alive, unpaused, not stalled) time since the context ended (a
// probe's mutant, a renew loop that slept past its deadline, called it
// up to 5 s late, after its successor's OnStartedLeading, with no store
// call between: the count of calls never came). Not before every other
// process's OnStartedLeading: the context is what must end first
// (exclusive-leadership); a leader and its successor resumed at one
// instant (a stall's end) race, and the callback may lose by a few
// steps (a search found the correct reference's 324 us behind). A process that
// dies leading is owed nothing. And a term, once over, stays over: as each
// new term begins, every earlier context of the process is still done,
// its Term not Valid, its epoch unchanged (EvTermRevived). Not judged on recorded traces: the real
// processes do not report their callbacks.
const StoppedCallback = "stopped-callback"

// CheckStoppedCallback reports the first breach of StoppedCallback.
func CheckStoppedCallback(tr *trace.Trace) *Violation {
	if tr.Recorded {
		return nil
	}
	type term struct {
		open   bool  // an OnStartedLeading not yet followed by OnStoppedLeading
		from   int   // its EvStarted
		doneAt int64 // when its context was seen done (-1: not yet)
		calls  int   // store calls begun since
		told   int   // the SIGTERM handler's run while its context was live, plus one
	}
	terms := make([]term, len(tr.Procs))
	for i := range terms {
		terms[i].doneAt = -1
	}
	fail := func(i int, e *trace.Event, format string, a ...any) *Violation {
		pid := tr.Procs[e.Proc].PID
		return &Violation{Property: StoppedCallback, At: time.Duration(e.T), PIDs: []int{pid}, Events: []int{terms[e.Proc].from, i},
			Detail: "process " + tr.ProcName(int(e.Proc)) + ": " + fmt.Sprintf(format, a...)}
	}
	bound := int64(Slack) + HandoverCalls*int64(tr.Run.CallMax)
	var run [][]span // when each process ran (made when first asked)
	ran := func(p int, from, to int64) int64 {
		if run == nil {
			run = running(tr)
		}
		return coveredBy(run[p], from, to)
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 {
			continue
		}
		t := &terms[e.Proc]
		if t.told > 0 && t.open && t.doneAt < 0 && isCall(e) {
			h := &tr.Events[t.told-1]
			return fail(i, e, "its SIGTERM handler ran at %s, and its leader context was still live at its next system call (%s at %s): the user must stop when the process is told to, not when the elector gets round to it (a store call that hangs keeps it acting up to the deadline)",
				trace.Secs(h.T), callName(e), trace.Secs(e.T))
		}
		switch {
		case e.Kind == trace.EvTermRevived && e.StillLive():
			return fail(i, e, "its leader context #%d, seen done before, looked live again as a new term began (its Term now says epoch %d): an action of the old term, delayed, would pass its check and act in the new one", e.Context(), e.Epoch())
		case e.Kind == trace.EvTermRevived:
			return fail(i, e, "its leader context #%d, seen done before, now carries epoch %d as a new term began: an action of the old term, delayed, would be fenced with the new term's epoch, which the fenced resource accepts", e.Context(), e.Epoch())
		case e.Kind == trace.EvSignal && e.Op != trace.OpSigaction && t.open && t.doneAt < 0:
			t.told = i + 1
		case e.Kind == trace.EvStarted:
			if t.open {
				return fail(i, e, "OnStartedLeading called again, and OnStoppedLeading not since the last (a user who starts work in one and stops it in the other runs two)")
			}
			*t = term{open: true, from: i, doneAt: -1}
		case e.Kind == trace.EvStopped && e.DiedLeading():
			*t = term{doneAt: -1}
		case e.Kind == trace.EvStopped && t.open && e.A < 0 && e.Context() == tr.Events[t.from].Context():
			// (The simulator's mark of a context done before the user's
			// OnStartedLeading returned to look at it: a lapsed deadline, a
			// SIGTERM already taken. A probe's mutants of the reference
			// without either guard passed every property.)
			return fail(i, e, "OnStartedLeading called with a context already done: a user that acts there before looking at its context acts on a lease that may be someone else's")
		case e.Kind == trace.EvStopped && t.open:
			t.doneAt = e.T
		case e.Kind == trace.EvStoppedCallback:
			switch {
			case !t.open:
				return fail(i, e, "OnStoppedLeading called with no term open (no OnStartedLeading since the last)")
			case e.StillLive():
				return fail(i, e, "OnStoppedLeading called while a leader context it had been given was still live: the user stops its work while its context says it leads")
			case t.doneAt >= 0 && ran(int(e.Proc), t.doneAt, e.T) > bound:
				return fail(i, e, "its leader context ended at %s, and OnStoppedLeading came at %s, after %v of its running time (bound %v)",
					trace.Secs(t.doneAt), trace.Secs(e.T), time.Duration(ran(int(e.Proc), t.doneAt, e.T)), time.Duration(bound))
			}
			*t = term{doneAt: -1}
		case e.Kind == trace.EvExit && e.ExitCode() >= 0 && t.open:
			return fail(i, e, "exited (status %d) with its term open: OnStoppedLeading was never called", e.ExitCode())
		case e.Kind == trace.EvStoreCall && e.Store == trace.StoreRelease && t.open:
			return fail(i, e, "released the lease before OnStoppedLeading (the work it stops may still act while another process takes over)")
		case e.Kind == trace.EvStoreCall && t.open && t.doneAt >= 0:
			if t.calls++; t.calls >= 3 {
				return fail(i, e, "its leader context ended at %s, and it has begun %d store calls since, never having called OnStoppedLeading", trace.Secs(t.doneAt), t.calls)
			}
		}
	}
	for p := range terms {
		if t := &terms[p]; t.open && t.doneAt >= 0 && ran(p, t.doneAt, int64(tr.End)) > bound {
			return &Violation{Property: StoppedCallback, At: tr.End, PIDs: []int{tr.Procs[p].PID}, Events: []int{t.from},
				Detail: fmt.Sprintf("process %s: its leader context ended at %s, and OnStoppedLeading had not come by the run's end, %v of its running time later (bound %v)",
					tr.ProcName(p), trace.Secs(t.doneAt), time.Duration(ran(p, t.doneAt, int64(tr.End))), time.Duration(bound))}
		}
	}
	return nil
}

// running returns, for each process, when it was alive and running: not
// paused (SIGSTOP) and not in a machine-wide stall.
func running(tr *trace.Trace) [][]span {
	out := unpaused(tr)
	for _, st := range tr.Stretches() {
		if st.Proc < 0 && st.Kind == trace.Stall {
			for p := range out {
				out[p] = cut(out[p], st.From, st.To)
			}
		}
	}
	return out
}

// coveredBy is how much of [from, to) spans cover.
func coveredBy(spans []span, from, to int64) int64 {
	n := int64(0)
	for _, s := range spans {
		if a, b := max(s.from, from), min(s.to, to); b > a {
			n += b - a
		}
	}
	return n
}
