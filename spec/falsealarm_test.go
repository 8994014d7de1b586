package spec

import (
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A false alarm of linearizable-store: run 4007 of `leaselab check
// -variant reference -faults all,power -runs 20000 -seed 7` at 0ebe0fb,
//
//	leaselab replay -variant reference -procs 0 -faults all,power -scheduler random -seed 13342261535968590567 -expect 9443493afe
//
// 1001 acquires (version 1) and, on SIGTERM, releases (version 2). Both of
// 1013's reads of version 2 fail with EIO: lease.VersionedFile reports the
// version held by lease.Unknown; 1013 waits it out (9 s) and takes it over
// with version 3, a link(2) compare-and-set on the version. The store kept
// its contract; the model (model.Register) did not know a record named by
// its version alone and, having no record for a release, rejected the
// takeover.
//
// The simulator has moved on since (at 3164d24 the run's watcher reads
// again at once and its third read succeeds): this test makes the same
// story happen on purpose, so that it does not depend on a seed. 101
// leads; every read of 102's after its first (the boot record's) fails
// with EIO, so it sees versions 1 and 2 (101's lease) and version 3
// (101's release at SIGTERM) as held by Unknown, waits version 3 out and
// takes it over. Every property must hold; the model used to reject the
// takeover at 14 s.
func TestUnreadableReleaseTakeover(t *testing.T) {
	faults := []sim.Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}}
	for n := 2; n <= 40; n++ {
		faults = append(faults, sim.Fault{Kind: trace.FSError, Proc: 1, Call: "read", Nth: n, Errno: syscall.EIO})
	}
	tr, err := sim.Run(sim.Config{
		Variant: "reference",
		Procs:   []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}},
		Horizon: 30 * time.Second,
		Seed:    1,
		Faults:  faults,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	if released, found := unreadableTakeover(tr); !released || !durable(tr) {
		t.Fatalf("the run takes over a version read as Unknown: %v, a release: %v; want both", found, released)
	}
	checkAll(t, tr, "the run TestUnreadableReleaseTakeover builds")
}

// unreadableTakeover reports whether tr has a successful Takeover of a
// record held by lease.Unknown (a version read without its content), and
// whether one of them took over a release (a version a successful Release
// wrote: the one after its record's).
func unreadableTakeover(tr *trace.Trace) (released, found bool) {
	type key struct{ proc, act int16 }
	calls := map[key]lease.Record{}
	releases := map[int64]bool{} // versions written by successful releases
	for i := range tr.Events {
		e := &tr.Events[i]
		k := key{e.Proc, e.Act}
		switch e.Kind {
		case trace.EvStoreCall:
			calls[k] = e.Record()
		case trace.EvStore:
			in, ok := calls[k]
			delete(calls, k)
			switch {
			case !ok || e.Res != trace.ResOK:
			case e.Store == trace.StoreRelease:
				releases[in.Version+1] = true
			case e.Store == trace.StoreTakeover && in.Holder == lease.Unknown:
				found = true
				released = released || releases[in.Version]
			}
		}
	}
	return released, found
}

// checkAll fails t for every property tr breaks; run says which run.
func checkAll(t *testing.T, tr *trace.Trace, run string) {
	t.Helper()
	for _, v := range Check(tr) {
		if !v.Applicable && v.Property == LinearizableStore {
			t.Errorf("%s not applicable (%s)\n  run: %s", v.Property, v.Reason, run)
		}
		if v.Violation != nil {
			t.Errorf("%s\n  run: %s", v.Violation, run)
		}
	}
}
