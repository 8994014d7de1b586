package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A watch interval is waited on the process's own clock, which may run
// slow by its drift bound: the checker's allowances for a back-off
// (emfileLag, longestWatch) are that wait in true time, as flock's wedge
// bound is (slowWait), not the interval as written.
func TestWatchAllowancesStretchByDrift(t *testing.T) {
	run := lease.DefaultConfig() // 3 s watch, the design's 1% drift bound
	slow := run
	slow.DriftBoundPPM = 300_000 // -drift-bound 0.3
	long := run
	long.WatchInterval = 5 * time.Second
	tr := &trace.Trace{Run: trace.Run{Lease: run}, Procs: []trace.ProcInfo{{PID: 1}, {PID: 2, Lease: slow}, {PID: 3, Lease: long}}}
	for _, c := range []struct {
		p    int
		want time.Duration
	}{
		{0, 3030303030}, // 3 s / 0.99
		{1, 4285714285}, // 3 s / 0.7
		{2, 5050505050}, // 5 s / 0.99
	} {
		if got := emfileLag(tr, c.p); got != c.want {
			t.Errorf("emfileLag(process %d) = %v, want %v", c.p, got, c.want)
		}
	}
	if got, want := longestWatch(tr), time.Duration(5050505050); got != want {
		t.Errorf("longestWatch = %v, want %v (process 3's 5 s, on a 1%% slow clock)", got, want)
	}
	tr.Procs = tr.Procs[:2]
	if got, want := longestWatch(tr), time.Duration(4285714285); got != want {
		t.Errorf("longestWatch = %v, want %v (process 2's 3 s on a 30%% slow clock)", got, want)
	}
}
