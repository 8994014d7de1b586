package sim

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A fault chained to a SIGTERM (Fault.Follows) pauses the process the
// SIGTERM hit right after the Nth system call it makes after it: in the
// middle of its handler. Unfired, it never fires; a bad chain is refused.
func TestChainedFault(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.Term, Proc: Leader, At: 5 * time.Second},
		{Kind: trace.Stop, Follows: 1, Nth: 2, Dur: time.Second},
	}
	tr := mustRun(t, cfg)
	var term, stop = -1, -1
	for i, e := range tr.Events {
		if e.Kind != trace.EvFault || e.Missed() {
			continue
		}
		switch e.FaultKind() {
		case trace.Term:
			term = i
		case trace.Stop:
			stop = i
		}
	}
	if term < 0 || stop < 0 {
		t.Fatalf("term at event %d, stop at event %d: want both to fire\n%s", term, stop, tr.Setup())
	}
	p := tr.Events[term].Proc
	if tr.Events[stop].Proc != p {
		t.Errorf("the chained stop hit process %d, the SIGTERM process %d", tr.Events[stop].Proc, p)
	}
	calls := 0
	for _, e := range tr.Events[term+1 : stop] {
		if e.Proc == p && (e.Kind == trace.EvSyscall || e.Kind == trace.EvLog || e.Kind == trace.EvClock) { // (a clock reading counts: proc.aim)
			calls++
		}
	}
	if calls != 2 {
		t.Errorf("the chained stop came after %d calls of the SIGTERMed process, want 2", calls)
	}
	if s := tr.Setup(); !strings.Contains(s, "stop its process after call #2 following fault 1") {
		t.Errorf("setup line: %s", s)
	}

	// A chain to a fault that never fires never fires.
	cfg.Faults = []Fault{
		{Kind: trace.Term, Proc: 0, At: 100 * time.Second},
		{Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second},
	}
	for _, e := range mustRun(t, cfg).Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Stop {
			t.Errorf("a stop chained to an unfired fault fired")
		}
	}

	for _, bad := range [][]Fault{
		{{Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second}},                                               // itself
		{{Kind: trace.Drift, At: time.Second, PPM: 5}, {Kind: trace.Stop, Follows: 1, Nth: 1, Dur: time.Second}}, // not a signal
		{{Kind: trace.Drift, At: time.Second, PPM: 5}, {Kind: trace.FSError, Follows: 1, Call: "any", Errno: 5}}, // an error, after no process's fault
		{{Kind: trace.Kill, At: time.Second}, {Kind: trace.FSError, Follows: 1, Call: "any", Errno: 5}},          // an error of a killed process
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.FSError, Follows: 1, Call: "log", Errno: 5}},          // a call that cannot fail
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.FSError, Follows: 1, Proc: Leader, Errno: 5}},         // the leader's error
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.EMFile, Follows: 1, Dur: time.Second}},                // no signal, no error
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.Stop, Follows: 3, Dur: time.Second}},                  // out of range
		{{Kind: trace.Kill, At: time.Second}, {Kind: trace.Stop, Follows: 1, Dur: time.Second}},                  // a killed process
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.Stop, Follows: 1, Proc: 1, Dur: time.Second}},         // a process of its own
		// The leader's error, of a call kind it could fail (the entry above
		// without one is refused for its call kind alone).
		{{Kind: trace.Term, At: time.Second}, {Kind: trace.FSError, Follows: 1, Proc: Leader, Call: "any", Errno: 5}},
	} {
		cfg.Faults = bad
		if _, err := Run(cfg); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// An injected error chained to another (Fault.Follows: errors in a burst)
// fails the Nth call that can fail which the process makes after the
// first error's call, and nothing before it.
func TestChainedError(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.FSError, Proc: 0, Call: "any", Nth: 3, Errno: syscall.EIO},
		{Kind: trace.FSError, Follows: 1, Call: "any", Nth: 2, Errno: syscall.ENOSPC},
	}
	tr := mustRun(t, cfg)
	var at []int // the calls that failed with an injected error
	for i, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.FSError {
			for j := i + 1; j < len(tr.Events); j++ {
				if c := tr.Events[j]; c.Kind == trace.EvSyscall && c.Proc == e.Proc {
					at = append(at, j)
					break
				}
			}
		}
	}
	if len(at) != 2 {
		t.Fatalf("%d injected errors, want 2\n%s", len(at), tr.Setup())
	}
	first, second := tr.Events[at[0]], tr.Events[at[1]]
	if first.Errno.Sys() != syscall.EIO || second.Errno.Sys() != syscall.ENOSPC || second.Proc != 0 {
		t.Errorf("errors %v then %v (process %d), want EIO then ENOSPC, both of process 0", first.Errno.Sys(), second.Errno.Sys(), second.Proc)
	}
	between := 0 // process 0's calls that can fail, after the first error's
	for _, e := range tr.Events[at[0]+1 : at[1]] {
		if e.Kind == trace.EvSyscall && e.Proc == 0 && (e.Op <= trace.OpLink || e.Op == trace.OpFlock || e.Op == trace.OpRPC || e.Op == trace.OpReadDir) {
			between++
		}
	}
	if between != 1 {
		t.Errorf("the chained error failed the call after %d calls that can fail, want 1 (its Nth is 2)", between)
	}
	if s := tr.Setup(); !strings.Contains(s, "fserr its process: any #2 following fault 1 fails with ENOSPC") {
		t.Errorf("setup line: %s", s)
	}
}

// TestLeaderCrashPoint: a crash point aimed at the leader (Proc Leader
// with After) counts only the calls a process makes while its role is
// leader, across leaders, and hits the process that made the Nth.
func TestLeaderCrashPoint(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{{Kind: trace.Term, Proc: Leader, After: "link", Nth: 2}}
	tr := mustRun(t, cfg)
	leader := make([]bool, len(tr.Procs))
	links, fault := 0, -1
	for i, e := range tr.Events {
		if e.Kind == trace.EvRole {
			leader[e.Proc] = e.Role == lease.RoleLeader
		}
		if e.Kind == trace.EvSyscall && e.Op == trace.OpLink && leader[e.Proc] {
			links++
			if links == 2 {
				if i+1 >= len(tr.Events) || tr.Events[i+1].Kind != trace.EvFault || tr.Events[i+1].Proc != e.Proc || tr.Events[i+1].FaultKind() != trace.Term {
					t.Fatalf("the leader's second link (event %d, proc %d) is not followed by its SIGTERM:\n%s", i, e.Proc, tr.Setup())
				}
				fault = i + 1
			}
		}
	}
	if fault < 0 {
		t.Fatalf("leaders made %d links: want the SIGTERM after the second", links)
	}
	if s := tr.Setup(); !strings.Contains(s, "term leader after link #2") {
		t.Errorf("setup line: %s", s)
	}
}

// TestSlowCalls: with SlowEvery, some calls take far longer than
// SyscallMax, by at most SlowMax; without it none does. (A gap between two
// calls of one activity is its calls' latency, plus, at most, a wait for a
// notification that comes a latency or two after the change: never 5
// latencies when nothing is slow.)
func TestSlowCalls(t *testing.T) {
	const lat = 10 * time.Microsecond
	gaps := func(slow int) (over, n int, most time.Duration) {
		cfg := worldCfg(3)
		cfg.Variant = "reference"
		cfg.SyscallMin, cfg.SyscallMax = lat, lat
		cfg.SlowEvery, cfg.SlowMax, cfg.TimerLateMax = slow, time.Millisecond, 0
		tr := mustRun(t, cfg)
		// A gap between two calls of one activity with nothing else of
		// it between: a clock read or a store operation between them may
		// be a wait (a watcher woken by another's write), not a late call.
		last := map[int16]int64{}
		for _, e := range tr.Events {
			k := e.Act<<8 | e.Proc
			if e.Kind != trace.EvSyscall && e.Kind != trace.EvLog {
				delete(last, k)
				continue
			}
			if prev, ok := last[k]; ok && e.T-prev > int64(5*lat) && e.T-prev < int64(100*time.Millisecond) {
				over++
				most = max(most, time.Duration(e.T-prev))
			}
			last[k] = e.T
			n++
		}
		return over, n, most
	}
	if over, n, most := gaps(0); over != 0 {
		t.Errorf("no slow calls: %d of %d calls came late (the latest %v after the one before)", over, n, most)
	}
	over, n, most := gaps(2)
	if over < n/20 || most > time.Millisecond+3*lat {
		t.Errorf("one slow call in 2: %d of %d calls came late, the latest %v after the one before (want at least 5%%, at most %v)", over, n, most, time.Millisecond+3*lat)
	}
}

// A fault aimed after the Nth call of any kind counts a reading of a
// clock as one (proc.aim): it lands right after the Nth system call, log
// line or clock reading of its process (or, as any fault at a process,
// at its next scheduling point: after the readings that follow the Nth
// without one between), and some land between a reading of the clock and
// the call after it, the window of a check-then-act.
func TestAimAfterClockReading(t *testing.T) {
	afterClock := 0
	for n := 1; n <= 40; n++ {
		cfg := worldCfg(3)
		cfg.Variant = "reference"
		cfg.Faults = []Fault{{Kind: trace.Stop, Proc: 0, After: "any", Nth: n, Dur: time.Second}}
		tr := mustRun(t, cfg)
		var points []trace.Kind // process 0's calls and readings before the pause
		fired := false
		for _, e := range tr.Events {
			if e.Kind == trace.EvFault && e.FaultKind() == trace.Stop {
				fired = true
				break
			}
			if e.Proc == 0 && (e.Kind == trace.EvSyscall || e.Kind == trace.EvLog || e.Kind == trace.EvClock || e.Kind == trace.EvFence || e.Kind == trace.EvSignal && e.Op == trace.OpSigaction) {
				points = append(points, e.Kind)
			}
		}
		if !fired || len(points) < n || slices.ContainsFunc(points[n:], func(k trace.Kind) bool { return k != trace.EvClock }) {
			t.Errorf("aimed after any #%d: fired %v after %v", n, fired, points)
			continue
		}
		if points[n-1] == trace.EvClock {
			afterClock++
		}
	}
	if afterClock == 0 {
		t.Errorf("no pause of 40 landed right after a reading of the clock")
	}
}
