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
	told := func(act int16, op trace.StoreOp) trace.Event { return trace.ErrorCallback(0, act, op) }
	exit := trace.Event{Proc: 0, Kind: trace.EvExit}
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
		{"the process ended first", []trace.Event{call(0), failed(0, true), exit}, false},
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
