package spec

import (
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// failEveryFourth is a store whose every fourth renewal fails as if
// another process had taken the lease: its leader steps down every 12 s
// or so and takes the lease back, gaps far shorter than no-wedge's bound.
type failEveryFourth struct {
	lease.Store
	renewals int
}

func (s *failEveryFourth) Unwrap() lease.Store { return s.Store }

func (s *failEveryFourth) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if s.renewals++; s.renewals%4 == 0 {
		return lease.Record{}, lease.ErrConflict
	}
	return s.Store.Renew(cur, ttl)
}

var registerFlapping = sync.OnceFunc(func() {
	registerWrapped("reference", "spec-test-flapping", "the reference, whose every fourth renewal fails with a conflict", func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return run(p, &failEveryFourth{Store: s}, path, cfg)
		}
	})
})

// A clock fault the algorithm is configured to tolerate disturbs, as any
// fault does; it does not blind stable-leadership for the rest of the run
// (found by review: after a skew of 1 µs a leader that stepped down every
// 12 s went unseen). A drift beyond the configured bound still ends the
// quiet.
func TestStableLeadershipAfterClockFaults(t *testing.T) {
	registerFlapping()
	bound := lease.DefaultConfig().DriftBound()
	for _, c := range []struct {
		name   string
		fault  *sim.Fault
		broken bool
	}{
		{"no fault", nil, true},
		{"a skew of 1 µs", &sim.Fault{Kind: trace.Skew, Proc: 0, Delta: time.Microsecond}, true},
		{"a wall-clock jump", &sim.Fault{Kind: trace.Jump, Delta: 9 * time.Second}, true},
		{"a drift at the bound", &sim.Fault{Kind: trace.Drift, Proc: 1, PPM: bound}, true},
		{"a drift beyond the bound", &sim.Fault{Kind: trace.Drift, Proc: 1, PPM: -2 * bound}, false},
	} {
		cfg := sim.Config{Variant: "spec-test-flapping", Horizon: 90 * time.Second,
			Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: time.Millisecond}, {PID: 300, Start: 2 * time.Millisecond}}}
		if c.fault != nil {
			cfg.Faults = []sim.Fault{*c.fault}
			cfg.Faults[0].At = 100 * time.Millisecond
		}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var v *Violation
		for _, vd := range Check(tr) {
			if vd.Property == StableLeadership {
				v = vd.Violation
			}
		}
		// Since 2026-12-07 the flapping is caught outside settled quiet
		// too, as a term cut short (no conflict reached the store: the
		// wrapper made it up), but not after a drift beyond the bound,
		// which ends every rule's judgement.
		if (v != nil) != c.broken {
			t.Errorf("%s: stable-leadership %v, want broken %v", c.name, v, c.broken)
		}
		iv := tr.Leadership()
		quiet := checkSettledQuiet(tr, iv, runBounds(mustVariant(t, "reference"), tr), nil)
		if (quiet != nil) != c.broken {
			t.Errorf("%s: stable-leadership in settled quiet %v, want broken %v", c.name, quiet, c.broken)
		}
	}
}
