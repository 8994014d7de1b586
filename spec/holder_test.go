package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// failover-bound judges the SIGTERM of a process whose acquiring write
// was in flight, though its user was never handed the term: the store
// says it holds the lease, and its successors wait for that, not for what
// its user saw. The reference gives the record back (its shutdown path
// before the term starts), and the other process leads within the
// hand-over's bound. Without the store's holder counted, nobody would be
// judged here: the mutant catalogue's reference~no-release-while-acquiring
// passed 20,000 runs of -faults all (a probe, 2026-12-06).
func TestFailoverJudgesTheStoresHolder(t *testing.T) {
	tr := run(t, sim.Config{
		Variant: "reference",
		Horizon: 30 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 10 * time.Millisecond}},
		// The reference's acquiring write links its version, then lists
		// the directory: the SIGTERM lands between the two. (Its first
		// link is its boot record's, within its first read.)
		Faults: []sim.Fault{{Kind: trace.Term, Proc: 0, After: "link", Nth: 2}},
	})
	dumpOnFailure(t, tr)
	if lead := intervalsOf(tr, 0); len(lead) != 0 {
		t.Fatalf("process 100 led %+v: the SIGTERM was meant to land in its acquiring write", lead)
	}
	if j, n := FailoverCounts(tr); j != 1 || n != 1 {
		t.Fatalf("%d of %d SIGTERMs judged, want 1 of 1", j, n)
	}
	if v := verdicts(t, tr)[FailoverBound].Violation; v != nil {
		t.Fatalf("failover-bound: %v", v)
	}
	next := intervalsOf(tr, 1)
	if len(next) == 0 {
		t.Fatal("process 200 never led")
	}
	var term int64
	for i, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Term {
			term = e.T
			if h := holding(tr, 0, i, true); h != holdFresh {
				t.Fatalf("process 100's hold at the SIGTERM: %d, want fresh (%d): held to the hand-over's bound", h, holdFresh)
			}
		}
	}
	if b := boundsOf(t, tr); next[0].From-term > int64(b.Term) {
		t.Fatalf("process 200 led %v after the SIGTERM, past the bound %v", time.Duration(next[0].From-term), b.Term)
	}
}

// A holder whose term ran out in a pause, SIGTERMed while stopped, at its
// SIGCONT holds a record nobody took over yet. failover-bound holds it to
// the SIGKILL bound, not the hand-over's (a first version did, and broke
// the harmless reference~keep-one on such a run): whether a process gives
// a lease back after its deadline is its own affair. The reference does
// since 2026-12-07, by compare-and-set on its own last write, the record
// it saw (a review's sweep found a watcher waiting 9 s): its successor
// leads within the hand-over's bound of the SIGCONT.
func TestFailoverStaleHolderWaitsOutItsLease(t *testing.T) {
	cfg := lease.DefaultConfig()
	cfg.RenewDeadline = 6 * time.Second                         // (a deadline well before the lease's end: the successor's wait shows)
	pause := cfg.RenewDeadlineInEffect() + 500*time.Millisecond // past the deadline, within the lease
	if pause >= cfg.LeaseDuration {
		t.Fatalf("a pause of %v is not within the lease %v", pause, cfg.LeaseDuration)
	}
	tr := run(t, sim.Config{
		Variant: "reference",
		Lease:   cfg,
		Horizon: 40 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 10 * time.Millisecond}},
		// Process 100 renews at 6 s; stopped just after, SIGTERMed in the
		// stop, continued past its deadline.
		Faults: []sim.Fault{{Kind: trace.Stop, Proc: 0, At: 6100 * time.Millisecond, Dur: pause}, {Kind: trace.Term, Proc: 0, At: 7 * time.Second}},
	})
	dumpOnFailure(t, tr)
	if j, n := FailoverCounts(tr); j != 1 || n != 1 {
		t.Fatalf("%d of %d SIGTERMs judged, want 1 of 1", j, n)
	}
	if v := verdicts(t, tr)[FailoverBound].Violation; v != nil {
		t.Fatalf("failover-bound: %v", v)
	}
	// What the stale holder's successor waited for: past the hand-over's
	// bound, from the SIGCONT.
	cont := int64(6100*time.Millisecond + pause)
	next := intervalsOf(tr, 1)
	if len(next) == 0 {
		t.Fatal("process 200 never led")
	}
	if b := boundsOf(t, tr); next[0].From-cont > int64(b.Term) {
		t.Fatalf("process 200 led %v after the SIGCONT, past the hand-over's bound %v: the stale holder did not release its own record", time.Duration(next[0].From-cont), b.Term)
	}
}

// A process stopped in the middle of its acquiring write for longer than
// the lease, SIGTERMed while stopped: the signal reaches it at its
// SIGCONT, its write then returns ok, and its term is over before it
// began (the reference never acts on it, nor writes after its deadline),
// so the lease is waited out. The hold is judged where the signal was
// delivered, not sent, and by the write's age: judged at the send, or
// every acquisition taken for fresh, the correct reference broke
// failover-bound here (a review's mutants of holding).
func TestFailoverHolderStoppedInItsCreate(t *testing.T) {
	cfg := lease.DefaultConfig()
	cfg.RenewDeadline = 6 * time.Second // (the stop outlasts it, not the lease its watcher waits out)
	tr := run(t, sim.Config{
		Variant: "reference",
		Lease:   cfg,
		Horizon: 40 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 10 * time.Millisecond}},
		// Stopped after its create's link, before the listing that
		// confirms it; SIGTERMed 1 ms later; continued at 7 s.
		Faults: []sim.Fault{{Kind: trace.Stop, Proc: 0, At: 650 * time.Microsecond, Dur: 7 * time.Second},
			{Kind: trace.Term, Proc: 0, At: time.Millisecond}},
	})
	dumpOnFailure(t, tr)
	var call, ret int64 = -1, -1
	for _, e := range tr.Events {
		if e.Proc == 0 && e.Kind == trace.EvStoreCall && e.Store == trace.StoreCreate && call < 0 {
			call = e.T
		}
		if e.Proc == 0 && e.Kind == trace.EvStore && e.Store == trace.StoreCreate && e.Res == trace.ResOK && ret < 0 {
			ret = e.T
		}
	}
	if call < 0 || call > int64(650*time.Microsecond) || ret < int64(7*time.Second) {
		t.Fatalf("process 100's create called at %v, returned ok at %v: the stop was meant to land inside it", time.Duration(call), time.Duration(ret))
	}
	if j, n := FailoverCounts(tr); j != 1 || n != 1 {
		t.Fatalf("%d of %d SIGTERMs judged, want 1 of 1", j, n)
	}
	if v := verdicts(t, tr)[FailoverBound].Violation; v != nil {
		t.Fatalf("failover-bound: %v", v)
	}
}
