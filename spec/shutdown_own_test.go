package spec

import (
	"testing"

	"github.com/leaselab/leaselab/sim"
)

// A leader paused right after its create for about its lease and sent
// SIGTERM meanwhile resumes past its term's deadline with the signal
// pending: it never leads again, but the record the store holds is its
// own last write, and it releases it on the way out (a compare-and-set:
// safe whoever else waits), so a watcher takes over at once, not a lease
// later. A review's sweep (2026-12-07) found failover-bound broken here:
// "Not leading, nothing to release", and the watcher waited 9 s. The
// run is pinned by its replay line (the setup hash guards it).
func TestShutdownReleasesOwnRecordPastTheDeadline(t *testing.T) {
	checkPinned(t, "redis", "all", 7357029282714310458, "554aa72f60", "`leaselab check -variant redis -faults all` on a build without the release")
}

// checkPinned runs the setup that seed draws for variant with the fault
// kinds faults and the mixed scheduler (a replay line's run), and fails
// on any violation. hash guards the setup: if it changed, the run the
// test pins is gone, and find says how to find another.
func checkPinned(t *testing.T, variant, faults string, seed uint64, hash, find string) {
	t.Helper()
	kinds, err := sim.ParseFaults(faults)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.SetupOptions{Variant: variant, Faults: kinds, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	if h := SetupHash(o, seed); h != hash {
		t.Fatalf("the setup drawn for seed %d changed (hash %s): the run this test pins is gone; find another with %s", seed, h, find)
	}
	tr, err := sim.Run(sim.RandomSetup(o, seed))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("%s: %v", v.Property, v.Violation)
		}
	}
}
