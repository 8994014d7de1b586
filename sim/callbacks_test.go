package sim

import (
	"context"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// The elector's client-go-style callbacks: a leader paused past its lease
// is taken over, steps down at its next renewal, and its leadership
// context is cancelled then.
func TestCallbacks(t *testing.T) {
	var started, stopped int
	var ctxs []context.Context
	var leaders []int64
	cfg := Config{
		Seed:    3,
		Horizon: 30 * time.Second,
		Procs:   []ProcSpec{{PID: 100}, {PID: 200, Start: 500 * time.Millisecond}},
		Faults:  []Fault{{Kind: trace.Stop, Proc: 0, At: 4 * time.Second, Dur: 12 * time.Second}},
		Lease: lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second,
			Callbacks: lease.Callbacks{
				OnStartedLeading: func(ctx context.Context) { started++; ctxs = append(ctxs, ctx) },
				OnStoppedLeading: func() { stopped++ },
				OnNewLeader:      func(h int64) { leaders = append(leaders, h) },
			}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
	}
	if _, err := Run(cfg); err != nil {
		t.Fatal(err)
	}
	// 100 leads, 200 takes over during the pause, 100 wakes, sees 200's pid
	// and steps down.
	if started != 2 || stopped != 1 {
		t.Fatalf("started %d, stopped %d; want 2 and 1", started, stopped)
	}
	if ctxs[0].Err() == nil {
		t.Error("the first leader's context is not cancelled after it stepped down")
	}
	if ctxs[1].Err() != nil {
		t.Error("the current leader's context is cancelled")
	}
	// Both processes observe 100 first, then 200.
	if len(leaders) < 3 || leaders[0] != 100 {
		t.Errorf("new-leader calls %v", leaders)
	}
	seen200 := false
	for _, h := range leaders {
		seen200 = seen200 || h == 200
	}
	if !seen200 {
		t.Errorf("nobody observed 200 as leader: %v", leaders)
	}
}
