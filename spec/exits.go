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
// code) of a process that no SIGTERM had reached, or with another status
// than 0 after one; or the first process told to stop that had not ended
// within ExitBound of its running time after its SIGTERM. Recorded traces
// are not judged: their signals are the harness's, and a singleton's
// command may end on its own.
func CheckNoOwnExit(tr *trace.Trace) *Violation {
	if tr.Recorded {
		return nil
	}
	if v := exitedOnItsOwn(tr); v != nil {
		return v
	}
	return exitedLate(tr)
}

// ExitBound is how much of its running time a process may take to end
// after its SIGTERM: its hand-over (a release, read again up to three
// times) and the call it was in, HandoverCalls of the run's longest
// calls, and Slack. A watcher has nothing to give back and ends at once.
// (A probe's reference whose watcher's wait ignored the signal ended only
// when its wait did: 7 s after its SIGTERM with a dead leader, a lease
// with -lease 60s, and systemctl stop waits that long, or kills it; no
// property judged how soon a process told to stop ends.)
func ExitBound(tr *trace.Trace) time.Duration {
	return Slack + HandoverCalls*tr.Run.CallMax + tr.Run.StopGrace
}

// exitedLate is CheckNoOwnExit's rule on ending in time: a process whose
// first SIGTERM reached it ends (by its own exit, or a SIGKILL or power
// loss) within ExitBound of its running time (a pause, a stalled machine
// do not count), or the run ends first.
func exitedLate(tr *trace.Trace) *Violation {
	termAt := make([]int, len(tr.Procs)) // index+1 of each process's first SIGTERM
	endAt := make([]int64, len(tr.Procs))
	told := false
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 || endAt[e.Proc] != 0 {
			continue
		}
		switch {
		case e.Kind == trace.EvFault && e.FaultKind() == trace.Term && !e.Missed() && termAt[e.Proc] == 0:
			termAt[e.Proc], told = i+1, true
		case e.Kind == trace.EvExit:
			endAt[e.Proc] = e.T + 1 // (+1: 0 is "not ended")
		}
	}
	if !told {
		return nil
	}
	run := running(tr)
	bound := int64(ExitBound(tr))
	var first *Violation
	for p, k := range termAt {
		if k == 0 {
			continue
		}
		from, until := tr.Events[k-1].T, int64(tr.End)
		if endAt[p] != 0 {
			until = endAt[p] - 1
		}
		at := reached(run[p], from, bound)
		if at < 0 || at >= until || first != nil && time.Duration(at) >= first.At {
			continue
		}
		how := "still running when the run ended"
		if endAt[p] != 0 {
			how = fmt.Sprintf("it ended at %s", secs(time.Duration(endAt[p]-1)))
		}
		first = &Violation{Property: NoOwnExit, At: time.Duration(at), PIDs: []int{tr.Procs[p].PID}, Events: []int{k - 1},
			Detail: fmt.Sprintf("process %s was sent SIGTERM at %s and had not ended after %v of its running time, its hand-over's calls and a slack (%s): a process told to stop ends, and a supervisor waits for it (or kills it)",
				tr.ProcName(p), secs(time.Duration(from)), time.Duration(bound), how)}
	}
	return first
}

// reached returns the instant at which spans, from instant from on, have
// covered d, or -1 if they never do.
func reached(spans []span, from, d int64) int64 {
	for _, s := range spans {
		a := max(s.from, from)
		if s.to <= a {
			continue
		}
		if s.to-a >= d {
			return a + d
		}
		d -= s.to - a
	}
	return -1
}

// exitedOnItsOwn is CheckNoOwnExit's rule on exits no SIGTERM asked for,
// and on a graceful stop's status.
func exitedOnItsOwn(tr *trace.Trace) *Violation {
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
