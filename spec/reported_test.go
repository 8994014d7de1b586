package spec

import (
	"syscall"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// errors-reported on hand-made runs: process 0's activity 0 reads, and
// the read fails with EIO (owed word) or a conflict-like outcome (not).
func TestErrorsReportedRules(t *testing.T) {
	failed := func(act int16, owed bool) trace.Event {
		e := trace.StoreReturn(0, act, trace.StoreRead, trace.ResUnknown, lease.Record{}, syscall.EIO)
		if owed {
			e.Flag = trace.StoreOwed
		}
		return e
	}
	call := func(act int16) trace.Event { return trace.StoreCall(0, act, trace.StoreRead, lease.Record{}, 0) }
	told := func(act int16, op trace.StoreOp) trace.Event { return trace.ErrorCallback(0, act, op, syscall.EIO) }
	toldErrno := func(errno syscall.Errno) trace.Event { return trace.ErrorCallback(0, 0, trace.StoreRead, errno) }
	exit := trace.Exit(0, 0)
	died := trace.Exit(0, trace.ExitKilled)
	for _, c := range []struct {
		name   string
		events []trace.Event
		bad    bool
	}{
		{"reported before the next call", []trace.Event{call(0), failed(0, true), told(0, trace.StoreRead), call(0)}, false},
		{"the next call first", []trace.Event{call(0), failed(0, true), call(0)}, true},
		{"never reported", []trace.Event{call(0), failed(0, true)}, true},
		{"reported by another activity", []trace.Event{call(0), failed(0, true), told(1, trace.StoreRead)}, true},
		{"reported for another operation", []trace.Event{call(0), failed(0, true), told(0, trace.StoreRenew)}, true},
		{"another activity's call meanwhile", []trace.Event{call(0), failed(0, true), call(1), told(0, trace.StoreRead)}, false},
		{"the process died first", []trace.Event{call(0), failed(0, true), died}, false},
		{"the process exited first", []trace.Event{call(0), failed(0, true), exit}, true},
		{"reported, then exited", []trace.Event{call(0), failed(0, true), told(0, trace.StoreRead), exit}, false},
		{"another error told", []trace.Event{call(0), failed(0, true), toldErrno(syscall.EACCES)}, true},
		{"the error's errno lost", []trace.Event{call(0), failed(0, true), toldErrno(0)}, true},
		{"an outcome of the contract", []trace.Event{call(0), failed(0, false), call(0)}, false},
		{"an outcome of the contract reported", []trace.Event{call(0), failed(0, false), told(0, trace.StoreRead)}, true},
		{"reported twice", []trace.Event{call(0), failed(0, true), told(0, trace.StoreRead), told(0, trace.StoreRead)}, true},
	} {
		tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}}, Events: c.events}
		if v := checkErrorsReported(tr); (v != nil) != c.bad {
			t.Errorf("%s: %v, want violation %v", c.name, v, c.bad)
		}
	}
}
