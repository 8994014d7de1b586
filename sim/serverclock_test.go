package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Redis's PX and the SQL store's clock_timestamp() count on the machine's
// wall clock; etcd's lessor on the monotonic one. serverReach is the first
// true time at which a server's clock reads a value, steps back and forth
// included.
func TestServerClockFollowsTheWallClock(t *testing.T) {
	const s = int64(time.Second)
	w := &World{now: 100 * s, steps: []wallStep{{t: 10 * s, delta: 5 * s}, {t: 20 * s, delta: -30 * s}, {t: 40 * s, delta: 8 * s}}}
	for _, c := range []struct {
		kind       string
		t, want    int64
		from, goal int64
		reach      int64
	}{
		{kind: "redis", t: 5 * s, want: 5 * s, from: 0, goal: 12 * s, reach: 10 * s},   // reached by the step forward at 10 s
		{kind: "redis", t: 15 * s, want: 20 * s, from: 0, goal: 30 * s, reach: 47 * s}, // t+5 until 20 s, t-25 until 40 s, then t-17
		{kind: "redis", t: 25 * s, want: 0, from: 15 * s, goal: 21 * s, reach: 16 * s},
		{kind: "sql", t: 45 * s, want: 28 * s, from: 30 * s, goal: 20 * s, reach: 40 * s}, // the step forward at 40 s reaches it at once
		{kind: "etcd", t: 45 * s, want: 45 * s, from: 30 * s, goal: 39 * s, reach: 39 * s},
	} {
		if got := w.serverClock(c.kind, c.t); got != c.want {
			t.Errorf("%s clock at %v = %v, want %v", c.kind, time.Duration(c.t), time.Duration(got), time.Duration(c.want))
		}
		if got := w.serverReach(c.kind, c.from, c.goal); got != c.reach {
			t.Errorf("%s clock from %v reaches %v at %v, want %v", c.kind, time.Duration(c.from), time.Duration(c.goal), time.Duration(got), time.Duration(c.reach))
		}
	}
}

// A step of the wall clock forward drops a Redis or SQL record early, as
// the real servers do (a probe stepped a real Redis's and PostgreSQL's
// clock 8 s forward with an LD_PRELOAD: a watcher led 2 s beside the
// leader); etcd's is not moved. The reference makes no second leader of
// it: a watcher that saw the record, and finds it gone without a
// release (lease.ErrVanished), waits it out from when it saw it.
func TestWallClockStepDropsServerRecords(t *testing.T) {
	for _, kind := range ServerKinds {
		// The watcher polls every 500 ms: it reads after the step, before
		// the leader's next renewal (at 9 s) finds its record gone.
		watcher := lease.DefaultConfig()
		watcher.WatchInterval = 500 * time.Millisecond
		cfg := Config{Variant: kind, Seed: 1, Horizon: 40 * time.Second,
			Procs:      []ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond, Lease: watcher}},
			SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
			Faults: []Fault{{Kind: trace.Jump, At: 6500 * time.Millisecond, Delta: 8 * time.Second}},
		}
		tr, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		early := false
		for _, e := range tr.Events {
			// The renewal at 6 s would expire at 15 s: the step makes it
			// 7 s on a wall clock.
			if e.Kind == trace.EvStore && e.Store == trace.StoreExpire && e.ExpiredAt() < int64(14*time.Second) {
				early = true
			}
		}
		if early != (kind != "etcd") {
			t.Errorf("%s: a record expired early: %v, want %v", kind, early, kind != "etcd")
		}
		if n := tr.MaxConcurrentLeaders(); n > 1 {
			t.Errorf("%s: %d leaders at once: %+v", kind, n, tr.Leadership())
		}
		if kind != "etcd" && !strings.Contains(strings.Join(tr.LogLines(), "\n"), "The store lost the lease held by 100") {
			t.Errorf("%s: no watcher waited out the dropped record:\n%s", kind, strings.Join(tr.LogLines(), "\n"))
		}
	}
}
