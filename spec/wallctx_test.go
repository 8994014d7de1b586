package spec

import (
	"context"
	"sync"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// wallContext is a leader context whose Err reads the process's wall
// clock, as a Term that judged its deadline by the wall clock would.
type wallContext struct {
	context.Context
	p lease.Proc
}

func (c wallContext) Err() error {
	_ = c.p.Now()
	return c.Context.Err()
}

var registerWallCtx = sync.OnceFunc(func() {
	registerWrapped("reference", "mutant-wall-context", "the reference, its leader contexts reading the wall clock when asked",
		func(run runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				if f := cfg.Callbacks.OnStartedLeading; f != nil {
					cfg.Callbacks.OnStartedLeading = func(ctx context.Context) { f(wallContext{ctx, p}) }
				}
				return run(p, s, path, cfg)
			}
		})
})

// The simulator looks at every leader context between steps, on the
// user's behalf, with no activity running: a context (or its Term) that
// reads the wall clock then crashed the checker (a probe's mutant, whose
// Valid judged the deadline by the wall clock: the clock read asked for
// the running activity, and there was none). It reads the clock then as
// the monotonic one is read: silently, at the world's instant.
func TestLeaderContextMayReadTheWallClock(t *testing.T) {
	registerWallCtx()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "mutant-wall-context", Faults: sim.AllFaults}, Runs: 200, Seed: 1, KeepGoing: true}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) != 0 {
		t.Errorf("a context that reads the wall clock, otherwise the reference: %v", rep.Counts)
	}
}
