package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// cutShort returns, for each leader context of the run that ended (not by
// death), how long before its renew deadline after its last acknowledged
// write it ended (negative: after), as checkTermsLast measures it.
func cutShort(t *testing.T, tr *trace.Trace) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, e := range endedTerms(tr, tr.Leadership()) {
		due := time.Duration(tr.Events[e.ack].CallMono()) + tr.Run.Lease.RenewDeadlineInEffect()
		out = append(out, due-monoAtLatest(tr, e.p, e.end))
	}
	return out
}

// A term may end before its renew deadline for a reason: the process was
// told to stop (SIGTERM), or the store answered that the lease was lost
// (a server that lost its data: the renewal finds no record). Each run
// below ends a term seconds early, for one of those reasons, and is not a
// violation; without the excuse it would be. A pause longer than the
// deadline ends the term at the deadline, on the process's clock, which
// ran on. (Each fails if its excuse is taken out of excused.)
func TestTermsLastExcuses(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name, variant string
		faults        []sim.Fault
		early         bool // a term ended more than a second early
	}{
		{"SIGTERM to the leader", "reference", []sim.Fault{{Kind: trace.Term, Proc: 0, At: 10 * time.Second}}, true},
		{"SIGTERM to the leader, Redis", "redis", []sim.Fault{{Kind: trace.Term, Proc: 0, At: 10 * time.Second}}, true},
		{"the server loses its data", "redis", []sim.Fault{{Kind: trace.Lose, At: 6500 * ms}}, true},
		{"a pause longer than the deadline", "reference", []sim.Fault{{Kind: trace.Stop, Proc: 0, At: 6200 * ms, Dur: 12 * time.Second}}, false},
		{"a pause of 2 s", "reference", []sim.Fault{{Kind: trace.Stop, Proc: 0, At: 6200 * ms, Dur: 2 * time.Second}}, false},
	} {
		tr, err := sim.Run(sim.Config{Variant: c.variant, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
			Procs:  []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * ms}},
			Faults: c.faults})
		if err != nil {
			t.Fatal(err)
		}
		early := false
		for _, d := range cutShort(t, tr) {
			early = early || d > time.Second
		}
		if early != c.early {
			t.Errorf("%s: a term ended more than a second before its deadline: %v, want %v (%v)", c.name, early, c.early, cutShort(t, tr))
		}
		v, _ := lease.LookupVariant(c.variant)
		if x := checkTermsLast(tr, endedTerms(tr, tr.Leadership()), v); x != nil {
			t.Errorf("%s: %v", c.name, x)
		}
		tr.Release()
	}
}

// A leader whose descriptors run out for longer than its deadline steps
// down with its own record still the store's (nobody else runs); once it
// can open files again it takes the record back within a back-off, and
// the rule holds; it judged the run (the store kept the record, and the
// process led again, after the stretch).
func TestOwnRecordTakenBack(t *testing.T) {
	tr, err := sim.Run(sim.Config{Variant: "reference", Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
		Procs:  []sim.ProcSpec{{PID: 100}},
		Faults: []sim.Fault{{Kind: trace.EMFile, Proc: 0, At: 10 * time.Second, Dur: 10 * time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	iv := tr.Leadership()
	if len(iv) < 2 || iv[0].Open || iv[1].From < int64(20*time.Second) || iv[1].From > int64(24*time.Second) {
		t.Fatalf("leadership %+v: want a term that ends in the stretch and one that begins within a back-off of its end (20 s)", iv)
	}
	stoppedAt := stoppedEventFrom(tr, 0, iv[0].Seen, iv[0].LiveSteps)
	if until, _ := ownRecordHeld(tr, 0, lease.Record{}, stoppedAt); until >= 0 {
		t.Errorf("a record nobody wrote seen held until %v", time.Duration(until))
	}
	v, _ := lease.LookupVariant("reference")
	if x := checkOwnTakenBack(tr, endedTerms(tr, iv), v); x != nil {
		t.Error(x)
	}
}
