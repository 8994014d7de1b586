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
//	leaselab replay -variant reference -procs 0 -faults all,power -scheduler random -seed 13342261535968590567 -expect 438a9a2326
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
// again at once and its third read succeeds), and so has the reference
// (2026-12-05): a version whose content a watcher could not read is no
// longer taken over on the watcher's own clock (how long a lease it holds
// only its content says: a probe's fresh 9 s watcher took over a 27 s
// holder's), only once read. This test makes the story happen on purpose:
// 101 leads; 102's reads after its first (the boot record's) fail with
// EIO for a while, so that it sees 101's versions, and the release at
// SIGTERM, held by Unknown; it takes nothing over until a read works, then
// acquires the released lease. Every property must hold (the model reads
// the Unknown records by their versions), and no Takeover of a record held
// by Unknown is made.
func TestUnreadableReleaseTakeover(t *testing.T) {
	faults := []sim.Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}}
	for n := 2; n <= 14; n++ {
		faults = append(faults, sim.Fault{Kind: trace.FSError, Proc: 1, Call: "read", Nth: n, Errno: syscall.EIO})
	}
	tr, err := sim.Run(sim.Config{
		Variant: "reference",
		Procs:   []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}},
		Horizon: 40 * time.Second,
		Seed:    1,
		Faults:  faults,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	unread := 0
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvStore && e.Store == trace.StoreRead && e.Proc == 1 && e.Res == trace.ResUnknown && e.Record().Holder == lease.Unknown {
			unread++
		}
	}
	if _, found := unreadableTakeover(tr); found || unread < 3 || powerLoss(tr) >= 0 {
		t.Fatalf("%d reads of a version without its content, a takeover of one: %v; want 3 or more, and none", unread, found)
	}
	if iv := tr.Leadership(); len(iv) != 2 || iv[1].Proc != 1 {
		t.Fatalf("leadership %+v: want 101's, then 102's once its reads work", iv)
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

// A false alarm of failover-bound, found through the mutant catalogue
// (flock~no-unlock-on-term was "killed" by it): run 9746 of `leaselab
// check -variant flock~no-unlock-on-term -faults all` at c1ea7c6. A
// failing disk (EIO on every create and write) from 0.9 s to 2.8 s; the
// processes that started meanwhile back off, doubling up to the watch
// interval; 1016 acquires at 3.5 s and is sent SIGTERM at 3.6 s. It
// unlocks at once, but the others are asleep in their back-off until
// 3.8 s: the hand-over took 155 ms against flock's 100 ms bound. The
// correct flock broke failover-bound too, once the pause chained to the
// SIGTERM (which excused it and not the mutant, whose exit came first)
// was taken away. A failing disk's end is learnt at each process's next
// try, within its back-off, at most a watch interval: failover-bound does
// not judge a signal within a watch interval of a stretch (no-wedge, whose
// clock restarts when the stretch ends, still owes the next leader).
func TestFailoverAfterDiskStretch(t *testing.T) {
	cfg := sim.Config{
		Variant: "flock",
		Procs: []sim.ProcSpec{
			{PID: 1006, Start: 1751068423}, {PID: 1013, Start: 1751 * time.Millisecond, Skew: 3502233842},
			{PID: 1016, Start: 1493169332}, {PID: 1024, Start: 1751064313},
		},
		Horizon: 48 * time.Second,
		Seed:    1,
		Faults: []sim.Fault{
			{Kind: trace.DiskEIO, At: 890864 * time.Microsecond, Dur: 1934968567},
			{Kind: trace.Term, Proc: 2, At: 3647482 * time.Microsecond},
		},
	}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	// The story: 1016 leads when its SIGTERM comes, and the next leader
	// comes more than flock's bound after it, the stretch having ended
	// less than a watch interval before.
	iv := tr.Leadership()
	if len(iv) < 2 || tr.Procs[iv[0].Proc].PID != 1016 || iv[0].To != int64(3647482*time.Microsecond) || time.Duration(iv[1].From-iv[0].To) <= boundsOf(t, tr).Term {
		t.Fatalf("the run no longer tells the story: leadership %+v", iv)
	}
	checkAll(t, tr, "the run TestFailoverAfterDiskStretch builds")
}
