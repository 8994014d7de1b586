package spec

import (
	"context"
	"sync"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// registerImmortal registers, once, a reference whose user's context
// outlives the term (the algorithm hands OnStartedLeading a context it
// never cancels, while reporting its role and deadline honestly): the
// checker must judge leadership by that context, not by the reports. It
// is registered by the test that needs it, so that tests iterating over
// every variant do not meet it.
var registerImmortal = sync.OnceFunc(func() {
	registerWrapped("reference", "mutant-immortal-context", "the reference, handing its user a context that is never cancelled",
		withStarted(func(started func(context.Context), ctx context.Context) { started(context.WithoutCancel(ctx)) }))
})

// withStarted wraps a variant's Run so that each OnStartedLeading calls
// call with the user's callback and the term's context.
func withStarted(call func(started func(context.Context), ctx context.Context)) func(runFunc) runFunc {
	return func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			if started := cfg.Callbacks.OnStartedLeading; started != nil {
				cfg.Callbacks.OnStartedLeading = func(ctx context.Context) { call(started, ctx) }
			}
			return run(p, s, path, cfg)
		}
	}
}

func TestCheckerObservesTheUsersContext(t *testing.T) {
	registerImmortal()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "mutant-immortal-context", Faults: []trace.FaultKind{trace.Kill, trace.Stop}},
		Runs: 2000, Seed: 1, KeepGoing: true}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[ExclusiveLeadership] == 0 || rep.Counts[HonestRole] == 0 {
		t.Errorf("a leader whose context outlives its term: counts %v in %d runs, want exclusive-leadership and honest-role broken", rep.Counts, rep.Runs)
	}
	t.Logf("%d runs: %v", rep.Runs, rep.Counts)
}

// registerTwoContexts registers, once, a reference that hands its user a
// second context at each term, one never cancelled, beside the term's own:
// a checker that follows only a process's first open context (it once did)
// sees every term end on time and passes it.
var registerTwoContexts = sync.OnceFunc(func() {
	registerWrapped("reference", "mutant-second-context", "the reference, handing its user the term's context and then one that is never cancelled",
		withStarted(func(started func(context.Context), ctx context.Context) {
			started(ctx)
			started(context.WithoutCancel(ctx))
		}))
})

// Each leader context is judged on its own: a process's second live
// context is leadership too, however its first one ended.
func TestCheckerObservesEveryContext(t *testing.T) {
	registerTwoContexts()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "mutant-second-context", Faults: []trace.FaultKind{trace.Kill, trace.Stop}},
		Runs: 300, Seed: 1, KeepGoing: true}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[ExclusiveLeadership] == 0 || rep.Counts[HonestRole] == 0 {
		t.Errorf("a leader with a second context that outlives its term: counts %v in %d runs, want exclusive-leadership and honest-role broken", rep.Counts, rep.Runs)
	}
	t.Logf("%d runs: %v", rep.Runs, rep.Counts)
	// One process holding two contexts at once is one leader.
	cfg := sim.RandomSetup(sim.SetupOptions{Variant: "mutant-second-context"}, 1)
	cfg.Faults = nil
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := tr.MaxConcurrentLeaders(); n != 1 {
		t.Errorf("no faults: %d leaders at once, want 1 (a process's two contexts are one leader)", n)
	}
}
