package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// ErrorsReported is the property that the user's OnError hears of every
// store error it is owed: a store call that failed with an error that
// is none of the Store contract's outcomes for its operation
// (trace.OwedError, the checker's own reading of the contract: an I/O
// error, a write's ENOENT, an unreadable record, a refusing or
// unreachable server) is followed by an OnError call from the activity
// whose call failed, for that operation, with that error (its errno:
// errors.Is must find it), before that activity's next store call and
// before the process exits (a process that dies of a signal first is
// owed nothing); and OnError is called for nothing else: not twice for
// one failure, not for an outcome of the contract. A user who counts
// errors, or, as leaselab run does, exits on a refused write, sees
// each, once. Judged for the variants whose claims say they report
// (lease.Claims.Reports), on simulated runs.
const ErrorsReported = "errors-reported"

// checkErrorsReported reports the first owed error that no OnError
// followed in time, or the first OnError that nothing owed.
func checkErrorsReported(tr *trace.Trace) *Violation {
	type key struct{ proc, act int16 }
	var owed []int // indices of the failed returns not yet reported, in order
	find := func(k key) int {
		for j, i := range owed {
			if e := &tr.Events[i]; e.Proc == k.proc && e.Act == k.act {
				return j
			}
		}
		return -1
	}
	fail := func(i int, why string) *Violation {
		e := &tr.Events[i]
		return &Violation{Property: ErrorsReported, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{i},
			Detail: fmt.Sprintf("process %s's %s failed at %s with an error that is none of the store's outcomes (%s), and its OnError was not called %s",
				tr.ProcName(int(e.Proc)), e.Store, secs(time.Duration(e.T)), e.Errno, why)}
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 {
			continue
		}
		k := key{e.Proc, e.Act}
		switch {
		case e.Kind == trace.EvStore && e.Owed():
			if j := find(k); j >= 0 {
				return fail(owed[j], "before the activity's next store call")
			}
			owed = append(owed, i)
		case e.Kind == trace.EvStoreCall:
			if j := find(k); j >= 0 {
				return fail(owed[j], "before the activity's next store call")
			}
		case e.Kind == trace.EvError:
			j := find(k)
			if j < 0 || tr.Events[owed[j]].Store != e.Store {
				// A report of nothing owed: an error told twice, or an
				// outcome of the contract told as an error (a user who
				// counts, or alerts on, OnError counts it).
				return &Violation{Property: ErrorsReported, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{i},
					Detail: fmt.Sprintf("process %s's OnError was called for a %s error at %s that no failed store call of its activity was owed", tr.ProcName(int(e.Proc)), e.Store, secs(time.Duration(e.T)))}
			}
			if f := &tr.Events[owed[j]]; f.Errno != e.Errno {
				told := "whose errno is " + e.Errno.String()
				if e.Errno == 0 {
					told = "that carries no errno (errors.Is cannot find what the call failed with)"
				}
				// The error told is not the one the call failed with, or
				// has lost it (wrapped with %v: errors.Is no longer finds
				// it, and leaselab run's exit on a refused write, which
				// asks errors.Is(err, fs.ErrPermission), never comes).
				return &Violation{Property: ErrorsReported, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{owed[j], i},
					Detail: fmt.Sprintf("process %s's %s failed at %s with %s, but its OnError was told of an error %s", tr.ProcName(int(e.Proc)), e.Store, secs(time.Duration(f.T)), f.Errno, told)}
			}
			owed = append(owed[:j], owed[j+1:]...)
		case e.Kind == trace.EvExit:
			// A process that died (a signal) is owed nothing more; one
			// that exited reports first (a probe: a release's error on
			// shutdown, never reported, passed while any exit excused
			// it).
			for j := 0; j < len(owed); {
				if tr.Events[owed[j]].Proc != e.Proc {
					j++
					continue
				}
				if e.ExitCode() >= 0 {
					return fail(owed[j], fmt.Sprintf("before the process exited (status %d)", e.ExitCode()))
				}
				owed = append(owed[:j], owed[j+1:]...)
			}
		}
	}
	if len(owed) > 0 {
		return fail(owed[0], "by the run's end")
	}
	return nil
}

// errorsReportedVerdict judges ErrorsReported on a run of v, or says why
// it does not apply.
func errorsReportedVerdict(v lease.Variant, tr *trace.Trace) Verdict {
	switch {
	case tr.Recorded:
		return Verdict{Property: ErrorsReported, Reason: "a recorded trace: the real processes do not report their callbacks"}
	case !v.Claims.Reports:
		return Verdict{Property: ErrorsReported, Reason: "it claims no OnError"}
	}
	return Verdict{Property: ErrorsReported, Applicable: true, Violation: checkErrorsReported(tr)}
}
