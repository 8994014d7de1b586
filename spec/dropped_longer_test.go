package spec

import (
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A record the server dropped, of a longer lease than any its successor's
// creator has read, is waited out for that lease (lease.Record.VanishedTTL)
// in two more cases a review scripted (2026-12-07); each broke
// exclusive-leadership on Redis and SQL before (holdRuns judges each run
// with Check).

// The create shows a loss of the server's data too: 100 (9 s) leads up to
// version 4; the server loses its data at 9.5 s; 100's renewal conflicts,
// it reads no record and is paused before its create; 300 (27 s), started
// after the loss, creates version 1 and leads; a 28 s step drops it, and
// 300 is paused (leading on by its clock); 100 creates version 2 over the
// dropped version 1. Its version shows the loss (lostUntil), and the hold
// was the loss's alone, a lease of 9 s, not the dropped record's 27 s: 20
// of 20 runs with two leaders.
func TestLossAndALongerDroppedLease(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 3 * time.Second}
	holdRuns(t, []string{"redis", "sql"}, 60*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 300, Start: 12050 * ms, Lease: long}},
		[]sim.Fault{
			{Kind: trace.Lose, At: 9500 * ms},
			{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 8, Dur: 3200 * ms},
			{Kind: trace.Jump, At: 12080 * ms, Delta: 28 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 12100 * ms, Dur: 20 * time.Second},
		})
}

// The create's answer is lost: 100 (27 s) leads and is paused for 20 s; a
// step drops its record; 200 (9 s) creates over it and the reply is lost
// (ECONNRESET) though the create took effect. Its creator never learned
// VanishedTTL, read its own record, stating 9 s, as another's, waited 9 s
// and took it over beside 100 (14 of 20 runs: the seeds where the create
// took effect); any other watcher would have too. The store now makes the
// record state the longer lease (lease.RaisedTTL), so whoever reads it
// waits that.
func TestLostCreateReplyOverALongerDroppedLease(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 3 * time.Second}
	holdRuns(t, []string{"redis", "sql"}, 60*time.Second,
		[]sim.ProcSpec{{PID: 200}, {PID: 100, Start: ms, Lease: long}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 1, Dur: 100 * ms},
			{Kind: trace.Jump, At: 50 * ms, Delta: 27 * time.Second},
			{Kind: trace.FSError, Proc: 0, Call: "rpc", Nth: 2, Errno: syscall.ECONNRESET},
			{Kind: trace.Stop, Proc: 1, At: 60 * ms, Dur: 20 * time.Second},
		})
}
