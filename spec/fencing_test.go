package spec

import (
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// fencingTrace builds a two-process run from (proc, time, epoch) terms,
// each leading until the next term starts, and optional accepted actions.
func fencingTrace(terms [][3]int64, accepted [][2]int64) *trace.Trace {
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}}, End: 100}
	for i, x := range terms {
		p, t, epoch := int16(x[0]), x[1], x[2]
		tr.Events = append(tr.Events,
			trace.Event{T: t, Proc: p, Kind: trace.EvRole, Role: lease.RoleLeader},
			trace.Event{T: t, Proc: p, Kind: trace.EvLead, N: epoch, A: 1000},
			withT(trace.Started(p, 0, epoch), t))
		end := int64(90)
		if i+1 < len(terms) {
			end = terms[i+1][1]
		}
		tr.Events = append(tr.Events, trace.Event{T: end, Proc: p, Kind: trace.EvRole, Role: lease.RoleWatcher},
			withT(trace.Stopped(p, end, len(tr.Events), false), end))
	}
	for _, a := range accepted {
		tr.Events = append(tr.Events, trace.Event{T: 95, Proc: int16(a[0]), Kind: trace.EvFence, N: a[1], A: 1})
	}
	return tr
}

func TestCheckFencing(t *testing.T) {
	cases := []struct {
		name     string
		terms    [][3]int64
		accepted [][2]int64
		broken   bool
	}{
		{"increasing", [][3]int64{{0, 10, 1}, {1, 20, 2}, {0, 30, 5}}, nil, false},
		{"decreasing", [][3]int64{{0, 10, 3}, {1, 20, 2}}, nil, true},
		{"reused by another", [][3]int64{{0, 10, 3}, {1, 20, 3}}, nil, true},
		// A term over is over: the next one of the same process takes a
		// new epoch, else an action of the first still under way is not
		// refused (an exemption for a lapsed term renewed let a probe's
		// mutant pass).
		{"reused by the same process's next term", [][3]int64{{0, 10, 3}, {0, 20, 3}}, nil, true},
		{"the same process's next term, a new epoch", [][3]int64{{0, 10, 3}, {0, 20, 4}}, nil, false},
		{"same epoch shared on the resource", [][3]int64{{0, 10, 1}, {1, 20, 2}}, [][2]int64{{0, 2}, {1, 2}}, true},
	}
	for _, c := range cases {
		tr := fencingTrace(c.terms, c.accepted)
		v := CheckFencing(tr, tr.Leadership())
		if (v != nil) != c.broken {
			t.Errorf("%s: violation %v, want broken %v", c.name, v, c.broken)
		}
	}
}

// withT returns e at true time t.
func withT(e trace.Event, t int64) trace.Event {
	e.T = t
	return e
}
