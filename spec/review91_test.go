package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Review: a create whose version shows a loss (lostUntil) AND that names
// an unseen dropped record of a longer lease (Record.VanishedTTL): lost()
// consults dropped() only when lostUntil did not fire, so the longer
// stated lease is ignored. 100 (9 s) leads v1..v4; the server loses its
// data at 9.5 s; 100's renewal at 12 s conflicts, it reads no record and
// is paused before its create; 300 (27 s) starts at 12.05 s, creates v1
// and leads; a 28 s step drops it; 300 is paused (leading by its clock
// until ~39 s); 100 creates v2 over the dropped v1 (Vanished 1, 27 s),
// sees v2 <= its own v4 (loss) and holds only max(9 s, longest 9 s).
func TestReviewLossAndLongerDroppedLease(t *testing.T) {
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
