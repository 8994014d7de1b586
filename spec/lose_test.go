package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// The loss excuse counts from the write a term rests on: its process's
// last before the term, less than a lease before it, and of no earlier
// term. A review planted a leader that led on no write of its term and
// found that the excuse as first written (from any earlier write of the
// process, lostBetweenFirst) hid some of its double leaders. Each case is
// a hand-made trace: process 1's term x and process 0's term y overlap,
// with one loss of the server's data, process 0 a newcomer that saw no
// record before it.
func TestLossExcuseRestsOnTheTermsWrite(t *testing.T) {
	const s = int64(time.Second)
	write := func(p int16, at int64) trace.Event {
		e := trace.StoreReturn(p, 0, trace.StoreCreate, trace.ResOK, lease.Record{Holder: int64(p + 1), Epoch: 1, Version: 1}, 0)
		e.T = at
		return e
	}
	renew := func(p int16, at int64) trace.Event {
		e := write(p, at)
		e.Store = trace.StoreRenew
		return e
	}
	started := func(p int16, at int64) trace.Event {
		e := trace.Started(p, 0, 1)
		e.T = at
		return e
	}
	loss := func(at int64) trace.Event {
		e := trace.Fault(-1, trace.Lose, 0, 0, false, trace.Str{})
		e.T = at
		return e
	}
	for _, c := range []struct {
		name           string
		events         []trace.Event
		xStart, yStart int  // the events that start x's term and y's
		excused, first bool // by the excuse, and by the excuse as first written
	}{
		{"x holds a record over a lost lease and leads on its last renewal, 2 s old; the loss took it",
			[]trace.Event{write(1, 1*s), renew(1, 16*s), loss(17 * s), write(0, 18*s), started(0, 18*s), started(1, 18*s)}, 5, 4, true, true},
		{"x leads on a write of its own term that the loss took, after the newcomer led",
			[]trace.Event{write(1, 1*s), loss(1*s + 1), write(0, 2*s), started(0, 2*s), started(1, 2*s)}, 4, 3, true, true},
		{"x leads on a write of its own term that the loss took, before the newcomer led",
			[]trace.Event{write(1, 1*s), loss(1*s + 1), started(1, 1*s+2), write(0, 2*s), started(0, 2*s)}, 2, 4, true, true},
		{"x leads on a write of an earlier term of its own",
			[]trace.Event{write(1, 1*s), started(1, 1*s), loss(2 * s), write(0, 3*s), started(0, 3*s), started(1, 5*s)}, 5, 4, false, true},
		{"x leads on a write more than a lease old",
			[]trace.Event{write(1, 1*s), loss(2 * s), write(0, 3*s), started(0, 3*s), started(1, 12*s)}, 4, 3, false, true},
		{"the newcomer led before the loss",
			[]trace.Event{write(0, 1*s), started(0, 1*s), write(1, 2*s), loss(3 * s), started(1, 4*s)}, 4, 1, false, false},
	} {
		tr := &trace.Trace{Run: trace.Run{Lease: lease.DefaultConfig()}, Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}}, Events: c.events}
		n := len(c.events)
		end := c.events[n-1].T + 10*s
		x := trace.Interval{Proc: 1, From: c.events[c.xStart].T, To: end, Seen: end, Start: c.xStart, LiveSteps: n, Open: true}
		y := trace.Interval{Proc: 0, From: c.events[c.yStart].T, To: end, Seen: end, Start: c.yStart, LiveSteps: n, Open: true}
		l := losses(tr)
		if got := lostExcused(tr, l, x, y); got != c.excused {
			t.Errorf("%s: excused %v, want %v", c.name, got, c.excused)
		}
		if got := lostExcused(tr, l, y, x); got != c.excused {
			t.Errorf("%s (terms the other way round): excused %v, want %v", c.name, got, c.excused)
		}
		if got := lostBetweenFirst(tr, l, x, y) || lostBetweenFirst(tr, l, y, x); got != c.first {
			t.Errorf("%s: the first excuse says %v, want %v", c.name, got, c.first)
		}
	}
}

// lostBetweenFirst is lostBetween as first written (a82b856): from any
// earlier write of x's process.
func lostBetweenFirst(tr *trace.Trace, l []int, x, y trace.Interval) bool {
	w := lastWrite(tr, x.Proc, x.Start)
	if w < 0 {
		return false
	}
	for _, i := range l {
		if i > w && i < y.Start && !sawRecord(tr, y.Proc, i) {
			return true
		}
	}
	return false
}
