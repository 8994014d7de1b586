package model

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// The records the oracle's histories are made of: the seed's, a versioned
// store's, and records named by their version alone (versionOnly).
var oracleRecs = []lease.Record{
	{},
	{Holder: 1, Until: 10},
	{Holder: 2, Until: 20},
	{Holder: 1, Until: 30},
	{Holder: 1, Epoch: 1, Version: 1},
	{Holder: 2, Epoch: 2, Version: 2},
	{Holder: 1, Epoch: 3, Version: 3},
	{Holder: lease.Unknown, Version: 1},
	{Holder: lease.Unknown, Version: 2},
	{Holder: lease.Unknown, Version: 3},
}

var oracleResults = []trace.StoreRes{trace.ResOK, trace.ResNotFound, trace.ResExists, trace.ResConflict, trace.ResCorrupt, trace.ResUnknown}

// randomHistory returns n operations of a sequential run of the register
// (expiring or not) with random choices among the outcomes it allows, each
// given an interval around its point in that run (many of them
// overlapping, many at one instant, one in eight never returning), in a
// random order; half of the histories then have one operation's record,
// result or interval changed, which makes many of them not linearizable.
func randomHistory(r *rand.Rand, n int, expiring bool) []porcupine.Operation {
	rec := func() lease.Record { return oracleRecs[r.IntN(len(oracleRecs))] }
	ops := make([]porcupine.Operation, 0, n)
	s := empty
	span := int64(2 + r.IntN(8))
	for len(ops) < n {
		in := Input{Op: trace.StoreOp(1 + r.IntN(6))}
		switch in.Op {
		case trace.StoreRead:
		case trace.StoreCreate:
			in.Holder = int64(1 + r.IntN(2))
		case trace.StoreRenew, trace.StoreRelease:
			in.Rec = rec()
			in.Holder = in.Rec.Holder
		default:
			in.Rec, in.Holder = rec(), int64(1+r.IntN(2))
		}
		var out Output
		var next []State
		for range 30 {
			out = Output{Res: oracleResults[r.IntN(len(oracleResults))]}
			if out.Res == trace.ResOK && in.Op != trace.StoreRelease {
				out.Rec = rec()
				if in.Op != trace.StoreRead && r.IntN(2) == 0 {
					out.Rec.Holder = writer(in)
				}
			}
			if in.Op == trace.StoreExpire {
				out = Output{Res: trace.ResOK}
			}
			if next = stepIn(s, in, out, expiring); len(next) > 0 {
				break
			}
		}
		if len(next) == 0 {
			continue
		}
		s = next[r.IntN(len(next))]
		at := int64(len(ops))*span/int64(n) + r.Int64N(2)
		call, ret := max(0, at-r.Int64N(span/2+1)), at+r.Int64N(span/2+1)
		if r.IntN(8) == 0 {
			ret = 1000 // never returned
		}
		ops = append(ops, porcupine.Operation{ClientId: len(ops), Input: in, Output: out, Call: call, Return: ret})
	}
	r.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	if r.IntN(2) == 0 {
		i := r.IntN(len(ops))
		out := ops[i].Output.(Output)
		switch r.IntN(3) {
		case 0:
			out.Rec = rec()
		case 1:
			out.Res = oracleResults[r.IntN(len(oracleResults))]
		default:
			j := r.IntN(len(ops))
			ops[i].Call, ops[i].Return = ops[j].Call, ops[j].Return
		}
		ops[i].Output = out
	}
	return ops
}

func stepIn(s State, in Input, out Output, expiring bool) []State {
	if expiring {
		return expiringStep(s, in, out)
	}
	return step(s, in, out)
}

// linearizable decides by brute force: every order that respects real
// time (an operation may not come after one that had not been called when
// it returned), every path of states through the transition relation.
func linearizable(ops []porcupine.Operation, expiring bool) bool {
	used := make([]bool, len(ops))
	var from func(k int, s State) bool
	from = func(k int, s State) bool {
		if k == len(ops) {
			return true
		}
		for i := range ops {
			if used[i] {
				continue
			}
			first := true
			for j := range ops {
				if !used[j] && ops[j].Return < ops[i].Call {
					first = false
					break
				}
			}
			if !first {
				continue
			}
			used[i] = true
			for _, t := range stepIn(s, ops[i].Input.(Input), ops[i].Output.(Output), expiring) {
				if from(k+1, t) {
					used[i] = false
					return true
				}
			}
			used[i] = false
		}
		return false
	}
	return from(0, empty)
}

// Witness against an oracle of its own (brute force over every order)
// and porcupine, on small random histories of both registers: Witnessed
// only for a linearizable history, NoOrder only for one that is not.
// (Written by a review, which ran 1.3 million of them: none wrong.)
func TestWitnessOracle(t *testing.T) {
	histories := 20000
	if testing.Short() {
		histories = 4000
	}
	var verdicts [3][2]int
	for i := range histories {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		expiring := i%3 == 0
		ops := randomHistory(r, 1+r.IntN(7), expiring)
		m := Register
		if expiring {
			m = ExpiringRegister
		}
		want := linearizable(ops, expiring)
		if p := porcupine.CheckOperations(m, ops); p != want {
			t.Fatalf("history %d: the oracle says %v, porcupine %v: %+v", i, want, p, ops)
		}
		v := Witness(ops, expiring)
		switch {
		case v == Witnessed && !want:
			t.Fatalf("history %d (expiring %v): witnessed, but not linearizable: %+v", i, expiring, ops)
		case v == NoOrder && want:
			t.Fatalf("history %d (expiring %v): no order, but linearizable: %+v", i, expiring, ops)
		}
		b := 0
		if want {
			b = 1
		}
		verdicts[v][b]++
	}
	t.Logf("verdicts (not linearizable, linearizable): unsure %v, witnessed %v, no order %v", verdicts[Unsure], verdicts[Witnessed], verdicts[NoOrder])
	if verdicts[Witnessed][1] == 0 || verdicts[NoOrder][0] == 0 || verdicts[Unsure][0]+verdicts[Unsure][1] == 0 {
		t.Errorf("some verdict never given: %v", verdicts)
	}
}

// pendingHistory is one holder's create and n renewals in sequence, with
// another process's create called at the start that never returned.
func pendingHistory(n int) []porcupine.Operation {
	cur := lease.Record{Holder: 1, Until: 1}
	ops := []porcupine.Operation{
		{ClientId: 0, Input: Input{Op: trace.StoreCreate, Holder: 1}, Output: Output{Res: trace.ResOK, Rec: cur}, Call: 0, Return: 1},
		{ClientId: 1, Input: Input{Op: trace.StoreCreate, Holder: 2}, Output: Output{Res: trace.ResUnknown}, Call: 2, Return: int64(10*n + 100)},
	}
	for i := range n {
		next := lease.Record{Holder: 1, Until: int64(i + 2)}
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: Input{Op: trace.StoreRenew, Rec: cur, Holder: 1}, Output: Output{Res: trace.ResOK, Rec: next}, Call: int64(10*i + 5), Return: int64(10*i + 8)})
		cur = next
	}
	return ops
}

// An operation that never returned stays unplaced to the end of a search:
// offering candidates must not scan past the ones placed after it each
// time (it did: quadratic, 2.5 s on 90,000 operations, more than
// porcupine). Counted, not timed.
func TestWitnessOffersInLinearTime(t *testing.T) {
	const n = 20000
	sc := new(scratch)
	if v := sc.search(pendingHistory(n), false); v != Witnessed {
		t.Fatalf("verdict %v, want Witnessed", v)
	}
	if sc.scanned > 4*n {
		t.Errorf("offer looked at %d operations for a history of %d: not linear", sc.scanned, n+2)
	}
}

// A history whose operation returns before its call is not FromTrace's:
// porcupine decides it (it finds this one not linearizable: the read
// returned before the create it reads was called).
func TestWitnessUnsureOfMalformed(t *testing.T) {
	rec := lease.Record{Holder: 1, Until: 10}
	h := []porcupine.Operation{
		{Input: Input{Op: trace.StoreCreate, Holder: 1}, Output: Output{Res: trace.ResOK, Rec: rec}, Call: 0, Return: 10},
		{ClientId: 1, Input: Input{Op: trace.StoreRead}, Output: Output{Res: trace.ResOK, Rec: rec}, Call: 20, Return: 5},
	}
	if v := Witness(h, false); v != Unsure {
		t.Errorf("verdict %v, want Unsure", v)
	}
}

// BenchmarkWitnessPending: the long history of TestWitnessOffersInLinearTime
// (90,000 operations), against porcupine's plain check.
func BenchmarkWitnessPending(b *testing.B) {
	h := pendingHistory(90000)
	b.Run("witness", func(b *testing.B) {
		for b.Loop() {
			Witness(h, false)
		}
	})
	b.Run("porcupine", func(b *testing.B) {
		for b.Loop() {
			porcupine.CheckOperations(Register, h)
		}
	})
}

// Check is Decide then Resolve, and Resolve says so when porcupine
// linearizes a history Decide found none for (a bug in Witness), never
// taking it for a pass.
func TestResolveDisagreement(t *testing.T) {
	ops := []porcupine.Operation{
		{ClientId: 0, Input: Input{Op: trace.StoreRead}, Call: 0, Output: Output{Res: trace.ResUnknown}, Return: 1},
	}
	if !porcupine.CheckOperations(Register, ops) {
		t.Fatal("the history should be linearizable")
	}
	r := Result{ops: ops, model: Register, pending: true} // as if Witness had found no order
	got := r.Resolve()
	if got.Linearizable || !got.disagree {
		t.Fatalf("resolved %+v: want not linearizable, disagreeing", got)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "bug in the checker") {
		t.Fatalf("Err() = %v", err)
	}
	if _, ok := r.Culprit(); ok {
		t.Fatal("a culprit for a disagreement")
	}
}

// porcupine's search is bounded by a count of model steps, not by time, so
// that a verdict is a function of the history: a history porcupine must
// decide (Witness unsure of it) is undecided within a budget too small for
// it, the same each time and saying why, and decided within the default
// budget; one Witness found no order for stays not linearizable whatever
// the budget of the search for its culprit.
func TestStepBudget(t *testing.T) {
	defer func(b int) { StepBudget = b }(StepBudget)
	o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	unsure, noOrder := 0, 0
	for seed := uint64(1); seed <= 300 && (unsure < 5 || noOrder < 5); seed++ {
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			t.Fatal(err)
		}
		v := witnessHistory(historyOf(tr), false)
		if v == Witnessed || tr.Run.Server {
			continue
		}
		if v != NoOrder {
			t.Fatalf("seed %d: Witness is unsure within its default budget", seed)
		}
		// Each such history twice: as Witness leaves it (no order), and
		// left to porcupine (Witness given no budget: unsure).
		for _, wb := range []int{witnessBudget, 0} {
			slack := witnessSlack
			if wb == 0 {
				slack = 0
			}
			restore := setWitnessBudget(wb, slack)
			StepBudget = 4_000_000
			want := Check(tr, 0)
			if want.Unknown {
				t.Fatalf("seed %d: undecided within the default budget", seed)
			}
			StepBudget = -64 * 1_000_000 // (none at all, for any history here)
			got, again := Check(tr, 0), Check(tr, 0)
			if wb == 0 {
				unsure++
				if !got.Unknown || !again.Unknown || got.Linearizable || !strings.Contains(got.Err().Error(), "budget") {
					t.Errorf("seed %d: with no budget: %+v, %v", seed, got, got.Err())
				}
			} else {
				noOrder++
				if got.Unknown || got.Linearizable || got.Err() == nil {
					t.Errorf("seed %d: a history with no order, with no budget for its culprit: %+v", seed, got)
				}
			}
			restore()
		}
	}
	if unsure == 0 || noOrder == 0 {
		t.Fatalf("%d unsure and %d no-order histories: the test shows too little", unsure, noOrder)
	}
}

// A store call from a process and activity the trace does not name (a
// hand-made or damaged trace) is judged like any other, not dropped: a
// dropped call could leave a history that passes.
func TestHistoryKeepsUnnamedCallers(t *testing.T) {
	tr, err := sim.Run(sim.Config{Variant: "seed", Seed: 1, Horizon: 10 * time.Second, Procs: []sim.ProcSpec{{PID: 10}, {PID: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	want := len(historyOf(tr))
	renamed := 0
	for i := range tr.Events {
		if e := &tr.Events[i]; (e.Kind == trace.EvStoreCall || e.Kind == trace.EvStore && e.Store != trace.StoreExpire) && e.Proc == 1 {
			e.Act += 40 // no such activity
			renamed++
		}
	}
	h := historyOf(tr)
	if renamed == 0 || len(h) != want {
		t.Fatalf("%d calls renamed; the history has %d operations, want %d", renamed, len(h), want)
	}
	unnamed := 0
	for _, o := range h {
		if w := o.Metadata.(Who); strings.Contains(w.Act, "not in the trace") {
			unnamed++
			if o.Return < 0 {
				t.Errorf("an unnamed caller's operation lost its return: %+v", o)
			}
		}
	}
	if unnamed == 0 {
		t.Fatal("no operation of the unnamed caller")
	}
}

// setWitnessBudget gives Witness a budget of b candidates an operation
// and slack more (0 and 0: it is unsure of every history with
// operations) and returns what restores the default.
func setWitnessBudget(b, slack int) (restore func()) {
	old, oldSlack := witnessBudget, witnessSlack
	witnessBudget, witnessSlack = b, slack
	return func() { witnessBudget, witnessSlack = old, oldSlack }
}

// Witness searches from a point (the operations placed, the states the
// register may be in) at most once: five reads of an empty register,
// all at once, and then a read of a record nobody wrote. Every order of
// the five leaves the register as it was, so after the first order fails
// the others are cut where they reach a point already searched (the
// search tries 81 candidates, under its budget of 88); without that it
// tries every order of the five (325) and gives up.
func TestWitnessRemembersDeadEnds(t *testing.T) {
	const k = 5
	var ops []porcupine.Operation
	for i := range k {
		ops = append(ops, porcupine.Operation{ClientId: i, Input: Input{Op: trace.StoreRead}, Output: Output{Res: trace.ResNotFound}, Call: 0, Return: 10})
	}
	ops = append(ops, porcupine.Operation{ClientId: k, Input: Input{Op: trace.StoreRead}, Output: Output{Res: trace.ResOK, Rec: lease.Record{Holder: 9, Until: 1}}, Call: 20, Return: 30})
	sc := new(scratch)
	if v := sc.search(ops, false); v != NoOrder {
		t.Fatalf("verdict %v, want NoOrder", v)
	}
	if sc.pruned == 0 {
		t.Fatal("no candidate cut as a dead end")
	}
	// The same history with its last read made possible: the dead ends of
	// one search are not the next one's.
	ops[k].Output = Output{Res: trace.ResNotFound}
	if v := sc.search(ops, false); v != Witnessed || sc.pruned != 0 {
		t.Fatalf("verdict %v with %d cut, want Witnessed with none", v, sc.pruned)
	}
}

// A dead end keeps the operations placed only where they are not all or
// nothing (a search places nearly a prefix): n reads one after another,
// then a read that cannot be, backs up through n points, each a dead end,
// and kept the whole set at each (n/64 words: 1 GB at n = 40,000, a
// review). Counted, not timed.
func TestWitnessDeadEndsStaySmall(t *testing.T) {
	const n = 20000
	var ops []porcupine.Operation
	for i := range n {
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: Input{Op: trace.StoreRead}, Output: Output{Res: trace.ResNotFound}, Call: int64(10 * i), Return: int64(10*i + 5)})
	}
	ops = append(ops, porcupine.Operation{ClientId: 1, Input: Input{Op: trace.StoreRead}, Output: Output{Res: trace.ResOK, Rec: lease.Record{Holder: 9, Until: 1}}, Call: int64(10 * n), Return: int64(10*n + 5)})
	sc := new(scratch)
	if v := sc.search(ops, false); v != NoOrder {
		t.Fatalf("verdict %v, want NoOrder", v)
	}
	if len(sc.ends) < n/2 || len(sc.endBits) > 2*len(sc.ends) {
		t.Fatalf("%d dead ends kept %d words of operations: want at most 2 each", len(sc.ends), len(sc.endBits))
	}
	sc.put()
	if sc.dead != nil || sc.endBits != nil {
		t.Error("a scratch with thousands of dead ends went back to the pool with them")
	}
}
