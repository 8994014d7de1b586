package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// NoOwnExit is the property that a process ends only when it is told to:
// by a SIGKILL, a power loss, or a SIGTERM (its handler's graceful exit,
// or the signal's default action), never of its own accord. A program
// that exits on an I/O error (log.Fatal) leaves the election one process
// short, and all of them short if each meets the error: the liveness
// properties excuse a process that has ended (it is owed no leader), so
// without this property such a run would hold every one.
const NoOwnExit = "no-own-exit"

// CheckNoOwnExit reports the first exit (an exit(2) of the process's own
// code) of a process that no SIGTERM had reached. Recorded traces are not
// judged: their signals are the harness's, and a singleton's command may
// end on its own.
func CheckNoOwnExit(tr *trace.Trace) *Violation {
	if tr.Recorded {
		return nil
	}
	termed := make([]bool, len(tr.Procs))
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 {
			continue
		}
		switch {
		case e.Kind == trace.EvFault && e.FaultKind() == trace.Term && !e.Missed():
			termed[e.Proc] = true
		case e.Kind == trace.EvExit && e.ExitCode() >= 0 && !termed[e.Proc]:
			pid := tr.Procs[e.Proc].PID
			return &Violation{Property: NoOwnExit, At: time.Duration(e.T), PIDs: []int{pid}, Events: []int{i},
				Detail: fmt.Sprintf("process %s exited with status %d of its own accord: no SIGTERM had reached it (a process ends only on a signal or a power loss)", tr.ProcName(int(e.Proc)), e.ExitCode())}
		case e.Kind == trace.EvExit && e.ExitCode() > 0:
			// (A probe: a mutant exiting 1 after its SIGTERM passed. A
			// supervisor takes any other status than 0 for a failure:
			// systemd's Restart=on-failure restarts a stopped service.)
			pid := tr.Procs[e.Proc].PID
			return &Violation{Property: NoOwnExit, At: time.Duration(e.T), PIDs: []int{pid}, Events: []int{i},
				Detail: fmt.Sprintf("process %s exited with status %d after its SIGTERM: a graceful stop exits 0", tr.ProcName(int(e.Proc)), e.ExitCode())}
		}
	}
	return nil
}
