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
// exits of its own code (a SIGTERM's graceful exit). A process that
// dies leading is owed nothing. Not judged on recorded traces: the real
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
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 {
			continue
		}
		t := &terms[e.Proc]
		switch {
		case e.Kind == trace.EvStarted:
			if t.open {
				return fail(i, e, "OnStartedLeading called again, and OnStoppedLeading not since the last (a user who starts work in one and stops it in the other runs two)")
			}
			*t = term{open: true, from: i, doneAt: -1}
		case e.Kind == trace.EvStopped && e.DiedLeading():
			*t = term{doneAt: -1}
		case e.Kind == trace.EvStopped && t.open:
			t.doneAt = e.T
		case e.Kind == trace.EvStoppedCallback:
			switch {
			case !t.open:
				return fail(i, e, "OnStoppedLeading called with no term open (no OnStartedLeading since the last)")
			case e.StillLive():
				return fail(i, e, "OnStoppedLeading called while a leader context it had been given was still live: the user stops its work while its context says it leads")
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
	return nil
}
