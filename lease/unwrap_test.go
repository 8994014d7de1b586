package lease_test

import (
	"sync"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// unwrapless is a user's wrapper around a store (a metrics or logging
// layer) with no Unwrap: the reference cannot see through it to the
// store's Vanishing, nor to its notices (its watchers poll).
type unwrapless struct{ lease.Store }

// registerUnwrapless registers redis and sql over unwrapless as
// variants of this test binary.
var registerUnwrapless = sync.OnceValue(func() error {
	for _, base := range []string{"redis", "sql"} {
		v, err := lease.LookupVariant(base)
		if err != nil {
			return err
		}
		v.Name, v.Summary = base+"~unwrapless", base+" behind a user's wrapper without Unwrap"
		v.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return lease.RunReferenceWith(0, true)(p, unwrapless{s}, path, cfg)
		}
		if err := lease.Register(v); err != nil {
			return err
		}
	}
	return nil
})

// TestVanishingThroughAWrapper: a store's word that its records vanish
// (a read's VanishedError, a create's Record.Vanished) switches the
// reference's waits on wherever the store's Vanishing is hidden. With the
// interface alone, Redis and SQL behind a wrapper without Unwrap took a
// record a wall-clock step dropped for no lease and led beside its
// holder: two leaders in 39 of 5,000 runs of -faults all (helper-101,
// 2026-12-07; this search breaks exclusive-leadership on both without
// the fix). Only the safety properties are judged: the wrapper hides the
// store's notices too, and its watchers poll, which the bounds of a
// variant whose store pushes do not allow for.
func TestVanishingThroughAWrapper(t *testing.T) {
	if err := registerUnwrapless(); err != nil {
		t.Fatal(err)
	}
	runs := 1000
	if testing.Short() {
		runs = 200
	}
	for _, variant := range []string{"redis~unwrapless", "sql~unwrapless"} {
		o, err := checkOptions(variant, "all", "mixed", nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := spec.Search{Setup: o, Runs: runs, Seed: 1, Properties: []string{spec.ExclusiveLeadership, spec.Fencing, spec.HonestRole}, DropTraces: true}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Found {
			t.Errorf("%s: %s\n%s", variant, f.Violation.String(), f.Replay)
		}
	}
}
