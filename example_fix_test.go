package leaselab_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// This file shows how to check your own fix before you trust it, without
// editing leaselab: write the variant, register it, search.
//
// The proposed fix here: "the takeover race happens because a watcher
// removes a lease it read a while ago; so read the lease again right
// before removing it, and only remove it if it is still the stale one".
// It sounds right. The checker says whether it is.

// recheckStore is the seed's file store with the fix: Takeover re-reads
// the lock file and gives up if it changed since the watcher read it.
type recheckStore struct{ *lease.SeedFile }

func (s recheckStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	now, err := s.Read()
	if err != nil || now != stale {
		return lease.Record{}, &lease.StepError{Step: "remove", Err: errors.Join(lease.ErrConflict, err)}
	}
	return s.SeedFile.Takeover(stale, holder, ttl)
}

func init() {
	// Register once per test binary; the name is what check and replay use.
	if err := lease.Register(lease.Variant{
		Name:    "example-recheck",
		Summary: "the seed, re-reading the lease right before a takeover removes it",
		NewStore: func(p lease.Proc, path string) lease.Store {
			return recheckStore{&lease.SeedFile{FS: p, Clock: p, Path: path}}
		},
		Claims: lease.Claims{ExpiryLag: time.Second}, // the seed's whole-second expiry
	}); err != nil {
		panic(err)
	}
}

// TestExampleFix runs the checker on the proposed fix, as
// `leaselab check -variant example-recheck -faults kill` would if the
// variant were compiled into the command. The fix narrows the race from
// "read, then later remove" to "re-read, then remove": it is still check,
// then act, and the search still finds two leaders.
func TestExampleFix(t *testing.T) {
	s := spec.Search{
		Setup:      sim.SetupOptions{Variant: "example-recheck", Faults: []trace.FaultKind{trace.Kill}},
		Runs:       20000,
		Seed:       1,
		Properties: []string{spec.ExclusiveLeadership},
	}
	rep, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) == 0 {
		t.Fatalf("no double leader in %d runs: the re-check would have fixed the takeover race", rep.Runs)
	}
	f := rep.Found[0]
	t.Logf("the fix still elects two leaders (run %d of the search): %s", f.Run, f.Violation.String())
	for _, l := range f.Trace.Excerpt(f.At-3*time.Second, f.At) {
		t.Log("  ", l)
	}
}

// Example_checkAFix prints the verdict the checker gives the fix.
func Example_checkAFix() {
	rep, _ := spec.Search{
		Setup:      sim.SetupOptions{Variant: "example-recheck", Faults: []trace.FaultKind{trace.Kill}},
		Runs:       20000,
		Seed:       1,
		Properties: []string{spec.ExclusiveLeadership},
	}.Run(nil)
	fmt.Println(len(rep.Found) > 0, rep.Found[0].Property)
	// Output: true exclusive-leadership
}
