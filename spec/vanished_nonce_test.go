package spec

import (
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A record the server dropped is named by its version and its nonce
// (lease.VanishedError.Nonce, lease.Record.VanishedNonce): after a loss of
// the server's data versions repeat, and a version alone named another
// process's post-loss record for this process's own, or for one it had
// waited out. A review (2026-12-07) scripted these; each failed in 20 of
// 20 runs before (holdRuns judges each with Check, on Redis and SQL).

// The simplest: 100 leads (version 1); the server loses its data at 1 s;
// 300, started after the loss, creates version 1 and leads; a step at
// 2.9 s drops 300's version 1; 100's renewal at 3 s conflicts and its read
// shows version 1 gone. By version that was its own record, and it led at
// once beside 300, whose renewal at 5 s was the first to fail.
func TestLossThenStepOfTheSameVersion(t *testing.T) {
	holdRuns(t, []string{"redis", "sql"}, 30*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 300, Start: 2 * time.Second}},
		[]sim.Fault{
			{Kind: trace.Lose, At: 1 * time.Second},
			{Kind: trace.Jump, At: 2900 * ms, Delta: 8500 * ms},
		})
}

// The create's answer alone: 100 is paused across the loss; 300, started
// after it, creates and renews up to the version 100 last wrote, a step
// drops it, and 100's create over it (its read showed no record: the
// counter too was lost) took Vanished for its own by version (the
// own-version skip, dropped since).
func TestCreateOverTheSameVersionAfterALoss(t *testing.T) {
	holdRuns(t, []string{"redis", "sql"}, 30*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 300, Start: 6050 * ms}},
		[]sim.Fault{
			{Kind: trace.Lose, At: 3500 * ms},
			{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 6, Dur: 3200 * ms},
			{Kind: trace.Jump, At: 9100 * ms, Delta: 9 * time.Second},
		})
}

// A create over a dropped record of a longer lease than any its creator
// has read holds its record for that lease (Record.VanishedTTL): 100 (27
// s) leads, paused for 10 s from 60 ms; a step drops its record; 200 (9
// s), whose read saw none, creates over it.
func TestCreateOverALongerDroppedLease(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
	holdRuns(t, []string{"redis", "sql"}, 60*time.Second,
		[]sim.ProcSpec{{PID: 200}, {PID: 100, Start: ms, Lease: long}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 1, Dur: 100 * ms},
			{Kind: trace.Jump, At: 50 * ms, Delta: 27 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 60 * ms, Dur: 10 * time.Second},
		})
}

// A create over an unseen dropped record whose reply is lost (it may have
// taken effect, and its creator never sees Vanished): it reads its own
// record as another's and waits a whole lease before it takes it over.
// No violation, whatever the other process's pause (0, 5 s, 20 s).
func TestLostCreateReplyOverADroppedRecord(t *testing.T) {
	for _, pause := range []time.Duration{0, 5 * time.Second, 20 * time.Second} {
		faults := []sim.Fault{
			{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 1, Dur: 100 * ms},
			{Kind: trace.Jump, At: 50 * ms, Delta: 8990 * ms},
			{Kind: trace.FSError, Proc: 0, Call: "rpc", Nth: 2, Errno: syscall.ECONNRESET},
		}
		if pause > 0 {
			faults = append(faults, sim.Fault{Kind: trace.Stop, Proc: 1, At: 60 * ms, Dur: pause})
		}
		holdRuns(t, []string{"redis", "sql"}, 60*time.Second, []sim.ProcSpec{{PID: 200}, {PID: 100, Start: ms}}, faults)
	}
}
