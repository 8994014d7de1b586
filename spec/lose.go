package spec

import (
	"time"

	"github.com/leaselab/leaselab/lease"

	"github.com/leaselab/leaselab/trace"
)

// A lease server that restarts without its data (a Lose fault: Redis
// without persistence) takes back what the protocol's guarantees rest on:
// the record, and the version counter from which epochs come. What the
// reference still promises, and the checker judges, is narrower:
//
//   - exclusive leadership between processes that saw a record before
//     the loss: a process that read the lease before it is a witness, and
//     waits out the lost lease before it leads (the reference's hold).
//     An overlap of two terms is excused when one belongs to a process
//     that had seen no record before a loss that came after the write the
//     other term rests on: nothing told it of a lease to wait for
//     (lostExcused).
//   - fencing and the store's linearizability until the first loss (the
//     epochs start again, and no register explains a record that
//     vanished): untilLoss.

// lossAftermath is how long after a loss of the server's data a leader
// may be owed later than otherwise, with the run's slowest configuration
// slow: a process learns of the loss at its next renewal or read (a renew
// or watch interval), then waits out, besides the lease it saw, any lease
// it may not have seen, made before it learned (a lease from then).
func lossAftermath(slow lease.Config) time.Duration {
	return slow.LeaseDuration + max(slow.RenewInterval, slow.WatchInterval)
}

// losses returns the indexes of the run's Lose faults that fired.
func losses(tr *trace.Trace) []int { return faultsOf(tr, trace.Lose) }

// jumps returns the indexes of the run's wall-clock steps.
func jumps(tr *trace.Trace) []int { return faultsOf(tr, trace.Jump) }

// faultsOf returns the indexes of the run's faults of kind k that fired.
func faultsOf(tr *trace.Trace, k trace.FaultKind) []int {
	var out []int
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvFault && e.FaultKind() == k && !e.Missed() {
			out = append(out, i)
		}
	}
	return out
}

// untilLoss is the run up to its first loss of the server's data, or the
// whole run.
func untilLoss(tr *trace.Trace) *trace.Trace {
	l := losses(tr)
	if len(l) == 0 {
		return tr
	}
	cut := *tr
	cut.Events = tr.Events[:l[0]]
	cut.End = time.Duration(tr.Events[l[0]].T)
	return &cut
}

// lostExcused reports whether an overlap of terms a and b is one a loss
// of the server's data excuses: a loss after the write one term rests on,
// and before the other began, whose process had seen no record before
// the loss.
func lostExcused(tr *trace.Trace, l []int, a, b trace.Interval) bool {
	return lostBetween(tr, l, a, b) || lostBetween(tr, l, b, a)
}

// lostBetween reports whether a loss came after the write x rests on and
// before y began, and y's process had seen no record before it. The write
// x rests on is the last its process made before x began, if it began no
// term of its own (it is x's) and came less than a lease before x: a term
// may begin up to a lease after its write, when a process that held a
// record over a lost lease leads on its last renewal (a check found one
// that did so beside a newcomer, a loss having taken its record
// meanwhile). A write older than that, or an earlier term's, is none x can
// rest on (a review: an excuse counted from any earlier write hid a
// planted leader that led on no write at all).
func lostBetween(tr *trace.Trace, l []int, x, y trace.Interval) bool {
	w := lastWrite(tr, x.Proc, x.Start)
	if w < 0 || tr.Events[w].T < x.From-int64(procLease(tr, x.Proc)) {
		return false
	}
	for i := w + 1; i < x.Start; i++ {
		if e := &tr.Events[i]; e.Kind == trace.EvStarted && int(e.Proc) == x.Proc {
			return false // an earlier term's write
		}
	}
	for _, i := range l {
		if i > w && i < y.Start && !sawRecord(tr, y.Proc, i) {
			return true
		}
	}
	return false
}

// procLease is process p's lease: its own configuration's, or the run's.
func procLease(tr *trace.Trace, p int) time.Duration {
	if l := tr.Procs[p].Lease.LeaseDuration; l != 0 {
		return l
	}
	return tr.Run.Lease.LeaseDuration
}

// lastWrite returns the index of the last store write (create, renew,
// takeover) of process p that succeeded before event index end, or -1.
func lastWrite(tr *trace.Trace, p, end int) int {
	for i := end - 1; i >= 0; i-- {
		e := &tr.Events[i]
		if e.Kind == trace.EvStore && int(e.Proc) == p && e.Res == trace.ResOK &&
			e.Store.Writes() {
			return i
		}
	}
	return -1
}

// sawRecord reports whether process p had a store operation return a
// record before event index end.
func sawRecord(tr *trace.Trace, p, end int) bool {
	for i := range end {
		e := &tr.Events[i]
		if e.Kind == trace.EvStore && int(e.Proc) == p && e.Res == trace.ResOK && e.Store != trace.StoreRelease && e.Store != trace.StoreExpire {
			return true
		}
	}
	return false
}
