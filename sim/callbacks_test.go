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

// The reference names each holder it observes to OnNewLeader once, as it
// leads and as a watcher reads another holder's record (the callback's
// word, "called when the observed holder changes, this process included";
// it used to name only its own acquisitions): with 100 leading, paused,
// and 200 taking over, each process names 100, then 200, once each.
func TestReferenceOnNewLeader(t *testing.T) {
	named := map[int64]int{}
	cfg := Config{
		Variant: "reference",
		Seed:    3,
		Horizon: 40 * time.Second,
		Procs:   []ProcSpec{{PID: 100}, {PID: 200, Start: 500 * time.Millisecond}},
		Faults:  []Fault{{Kind: trace.Stop, Proc: 0, At: 4 * time.Second, Dur: 12 * time.Second}},
		Lease: lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second,
			Callbacks: lease.Callbacks{OnNewLeader: func(h int64) { named[h]++ }}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
	}
	tr, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if iv := tr.Leadership(); len(iv) != 2 || iv[0].Proc != 0 || iv[1].Proc != 1 {
		t.Fatalf("leadership %+v: want 100's, then 200's", iv)
	}
	if named[100] != 2 || named[200] != 2 || len(named) != 2 {
		t.Errorf("OnNewLeader named %v, want 100 and 200 twice each (once by each process)", named)
	}
}
