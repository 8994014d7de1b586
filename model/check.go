package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/trace"
)

// Result is the outcome of checking a trace's Store history against
// Register.
type Result struct {
	// Linearizable is true when Witness or porcupine found a
	// linearization.
	Linearizable bool
	// Unknown is true when porcupine's search passed its step budget
	// (StepBudget) or timed out first; Linearizable is then false but no
	// violation was found.
	Unknown bool
	// Info holds the (partial) linearizations, for WriteHTML and Culprit
	// (once resolved: see Decide). For Check's and Decide's results its
	// operations' Input and Output are *Input and *Output, pointers into
	// the history (no allocation each); Ops and Culprit give values.
	Info porcupine.LinearizationInfo
	// End is the true time at which the run stopped, in ns: an operation
	// returning after it never returned.
	End int64

	model   porcupine.Model
	timeout time.Duration
	ops     []porcupine.Operation // the history checked, when porcupine was asked (Decide's: boxedRefsInto of hist);
	hist    []histOp              // Decide's history, unboxed (see Ops)
	// pending marks Decide's verdict on a history that is not
	// linearizable, whose partial linearizations are not computed yet
	// (Resolve); disagree, a Resolve whose verbose check linearized it;
	// overBudget, a porcupine search that passed its step budget (of
	// budget steps); noCulprit, a violation whose culprit the verbose
	// search could not find within its budget or timeout.
	pending, disagree, overBudget, noCulprit bool
	budget                                   int
	buf                                      *histBuf // Holds' memory, for Release
}

// StepBudget bounds porcupine's search on a history of n operations to
// StepBudget + 64n steps of the model (calls of its Step): past it the
// search stops, and the history is undecided (Unknown). The bound is a
// count, not a time, so that a check's verdict is a function of the
// history alone, as a run is of its seed: porcupine's own timeout made it
// one of the machine's speed and load (a probe: 25 of 1,000 runs of 32
// processes "unknown" after 10 s, the number varying with the machine).
// The runs of check's default setups take at most about 3,000 steps
// (2026-12-06: 1,500 runs each of seed and reference, -faults all), so the
// budget decides every one of them; some runs of 16 or 32 processes pass
// it (about 0.6 s of search here, 2 s on a loaded machine). The timeout a
// check is given (spec.LinearizeTimeout: two minutes) is a backstop far
// past it: with 4 million steps and a 10 s timeout a review saw the
// timeout win on a loaded machine, and the verdict's words change.
var StepBudget = 1_000_000

// budgeted returns m counting its steps against StepBudget for a history
// of n operations: past the budget every step fails, which ends
// porcupine's search at once; over reports whether it was passed.
// (Atomics: porcupine returns at its timeout without waiting for its
// search, which may still be stepping: a review.)
func budgeted(m porcupine.Model, n int) (porcupine.Model, func() bool) {
	var left atomic.Int64
	var over atomic.Bool
	left.Store(int64(budgetFor(n)))
	spend := func() bool {
		if left.Add(-1) < 0 {
			over.Store(true)
			return false
		}
		return true
	}
	step, stepCtx := m.Step, m.StepContext
	if stepCtx != nil {
		m.Step = nil
		m.StepContext = func(ctx context.Context, s, in, out any) (bool, any) {
			if !spend() {
				return false, nil
			}
			return stepCtx(ctx, s, in, out)
		}
	} else {
		m.Step = func(s, in, out any) (bool, any) {
			if !spend() {
				return false, nil
			}
			return step(s, in, out)
		}
	}
	return m, over.Load
}

// budgetFor is the step budget of a history of n operations.
func budgetFor(n int) int { return StepBudget + 64*n }

// plain is porcupine's plain check within the budget.
func plain(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, bool) {
	bm, over := budgeted(m, len(ops)) // (over is read after the search: porcupine may time out first)
	res := porcupine.CheckOperationsTimeout(bm, ops, timeout)
	if over() {
		return porcupine.Unknown, true
	}
	return res, false
}

// Check checks the Store operations of tr for linearizability against
// Register. A timeout of 0 means none.
// A server that expires records itself (Redis, etcd and SQL stores)
// records each expiry in the trace, and the history has it as the
// server's own operation (StoreExpire).
//
// A recorded trace of real processes over a server that expires records
// itself has no such steps, and is checked against ExpiringRegister.
//
// It is Decide, then Resolve.
func Check(tr *trace.Trace, timeout time.Duration) Result {
	return Decide(tr, timeout).Resolve()
}

// Decide is Check without the partial linearizations of a history that is
// not linearizable: its Result says so (Linearizable and Unknown false,
// or Unknown when porcupine passed its step budget or timed out), and
// Resolve computes what Culprit,
// Err and WriteHTML read (each of which resolves a Result that was not).
// A search that keeps the details of a few of its violating runs decides
// every run and resolves those few: porcupine's verbose check was the
// most of a check's work on a variant whose store is broken (seed).
//
// It asks Witness first: a witness decides at once (only ever for a
// linearizable history). When Witness tried every order and found none,
// the history is not linearizable (TestWitnessOracle and
// TestWitnessAgreesWithPorcupine hold Witness to porcupine and to a
// search of every order), and porcupine is left to Resolve. Otherwise
// porcupine's plain check decides.
func Decide(tr *trace.Trace, timeout time.Duration) Result {
	return decide(tr, timeout, nil)
}

// Holds reports whether the history of tr is linearizable, as Decide
// decides. When it is, r says only that (its Ops are empty: the history's
// memory is reused by a later call, since nothing refers to it; a
// search's runs are mostly linearizable, and their histories were a third
// of the bytes its runs allocated). When it is not, or porcupine found no
// answer, r is Decide's Result; Release gives its memory back once it is
// no longer used.
func Holds(tr *trace.Trace, timeout time.Duration) (r Result, ok bool) {
	b := histPool.Get().(*histBuf)
	r = decide(tr, timeout, b)
	if !r.Linearizable {
		if !r.Unknown {
			// (An undecided history's memory is never reused: porcupine
			// stops waiting for its search when it times out, and the
			// search may still be reading the history.)
			r.buf = b
		}
		return r, false
	}
	b.keep(r)
	return Result{Linearizable: true, End: r.End, model: r.model, timeout: timeout}, true
}

// Release gives the memory of a Result of Holds back for reuse by later
// calls: neither r nor anything made from it (Resolve's Result, Ops, Info,
// a culprit, a page drawn from it) may be used after. A search releases
// the Results of the runs it does not keep. Any other Result's Release
// does nothing.
func (r Result) Release() {
	if r.buf != nil {
		r.buf.keep(r)
	}
}

// keep puts b back in the pool with the memory of r, a Result decided on
// it, unless the history was longer than maxPooledHist.
func (b *histBuf) keep(r Result) {
	if cap(r.hist) > maxPooledHist {
		return
	}
	if r.ops != nil { // (porcupine was asked)
		b.ops = r.ops[:0]
	} else if cap(r.hist) != cap(b.h) {
		b.ops = nil // (the history outgrew b.h: b.ops points into the old one)
	}
	b.h = r.hist[:0]
	histPool.Put(b)
}

// maxPooledHist is the longest history whose memory is kept for reuse: a
// run's is a few dozen operations, a spinning process's can be thousands.
const maxPooledHist = 1024

// histBuf is the memory of a history Holds decided.
type histBuf struct {
	h   []histOp
	ops []porcupine.Operation
}

var histPool = sync.Pool{New: func() any { return new(histBuf) }}

// decide is Decide, on b's memory when b is not nil.
func decide(tr *trace.Trace, timeout time.Duration, b *histBuf) Result {
	var hb []histOp
	var ob []porcupine.Operation
	if b != nil {
		hb, ob = b.h, b.ops
	}
	expiring := tr.Run.Server && tr.Recorded
	m := Register
	if expiring {
		m = ExpiringRegister
	}
	h, end := historyInto(hb, tr), int64(tr.End)
	r := Result{End: end, model: m, timeout: timeout}
	switch witnessHistory(h, expiring) {
	case Witnessed:
		r.Linearizable, r.hist = true, h
		return r
	case NoOrder:
		r.ops, r.hist, r.pending = boxedRefsInto(ob, h), h, true
		return r
	}
	r.ops, r.hist = boxedRefsInto(ob, h), h
	res, over := plain(m, r.ops, timeout)
	switch res {
	case porcupine.Ok:
		r.Linearizable = true
	case porcupine.Unknown:
		// (The verbose check is the same search with more bookkeeping: it
		// would time out, or pass the budget, too.)
		r.Unknown, r.overBudget, r.budget = true, over, budgetFor(len(r.ops))
	default:
		r.pending = true
	}
	return r
}

// Resolve returns r with the partial linearizations of a history Decide
// found not linearizable (porcupine's verbose check); any other Result
// as it is.
func (r Result) Resolve() Result {
	if !r.pending {
		return r
	}
	v := verbose(r.model, r.ops, r.End, r.timeout)
	v.hist = r.hist // (what r.ops point into: Ops unboxes it)
	if v.Unknown {
		// The search for the culprit passed its budget or timed out: the
		// verdict stands (Decide's search, or porcupine's plain check
		// within the budget, found no linearization), without a culprit.
		v.Unknown, v.Info, v.noCulprit = false, porcupine.LinearizationInfo{}, true
		return v
	}
	if v.Linearizable {
		// Decide's search and porcupine's disagree: a bug in the checker,
		// said as such, never taken as a pass (the run was counted as a
		// violation before it was resolved).
		v.Linearizable, v.disagree = false, true
	}
	return v
}

// CheckOps checks a history (FromTrace's, or hand-written with Input and
// Output values) against Register; end is as Result.End.
func CheckOps(ops []porcupine.Operation, end int64, timeout time.Duration) Result {
	return CheckOpsWith(Register, ops, end, timeout)
}

// CheckOpsWith checks a history against m. It runs porcupine's plain
// check first, and the verbose one, whose partial linearizations Culprit
// and WriteHTML read, only when that finds the history not linearizable
// (one that passed the step budget or timed out is undecided at once: the
// verbose check is the same search with more bookkeeping): on the history
// of a run of hours (check -horizon 2h: 94,000 operations) the verbose
// check took 10 s and the plain one 1.2 s. Each is given timeout, and the
// step budget.
func CheckOpsWith(m porcupine.Model, ops []porcupine.Operation, end int64, timeout time.Duration) Result {
	switch res, over := plain(m, ops, timeout); res {
	case porcupine.Ok:
		return Result{Linearizable: true, ops: ops, End: end, model: m, timeout: timeout}
	case porcupine.Unknown:
		return Result{Unknown: true, overBudget: over, budget: budgetFor(len(ops)), ops: ops, End: end, model: m, timeout: timeout}
	}
	return verbose(m, ops, end, timeout)
}

// verbose is porcupine's verbose check, whose partial linearizations
// Culprit and WriteHTML read.
func verbose(m porcupine.Model, ops []porcupine.Operation, end int64, timeout time.Duration) Result {
	bm, over := budgeted(m, len(ops))
	res, info := porcupine.CheckOperationsVerbose(bm, ops, timeout)
	if over() {
		return Result{Unknown: true, overBudget: true, budget: budgetFor(len(ops)), ops: ops, End: end, model: m, timeout: timeout}
	}
	inOrder(info)
	return Result{Linearizable: res == porcupine.Ok, Unknown: res == porcupine.Unknown, ops: ops, Info: info, End: end, model: m, timeout: timeout}
}

// inOrder sorts each partition's partial linearizations in info, which
// porcupine lists in the order of a Go map's iteration, so that a
// history's page (WriteHTML) is the same every time it is drawn: longest
// first, then by their operations. (PartialLinearizations returns
// porcupine's own slices, which its page is drawn from.)
func inOrder(info porcupine.LinearizationInfo) {
	for _, p := range info.PartialLinearizations() {
		slices.SortFunc(p, func(a, b []int) int {
			if c := cmp.Compare(len(b), len(a)); c != 0 {
				return c
			}
			return slices.Compare(a, b)
		})
	}
}

// Ops returns the history checked (FromTrace's).
func (r Result) Ops() []porcupine.Operation {
	if r.hist != nil {
		return boxed(r.hist) // (Decide's ops, if any, point into it)
	}
	return r.ops
}

// WriteHTML writes porcupine's visualization of the history and its
// (partial) linearizations to path. (For a linearizable history it runs
// the verbose check then: CheckOpsWith skipped it.)
func (r Result) WriteHTML(path string) error {
	r = r.Resolve()
	if r.Linearizable && r.Info.PartialLinearizations() == nil {
		r.Info = verbose(r.model, r.Ops(), r.End, r.timeout).Info // (within the step budget: the timeout is a backstop of minutes)
	}
	return porcupine.VisualizePath(r.model, r.Info, path)
}

// Culprit returns the first operation that could not be linearized: of
// the operations missing from the longest partial linearization, the one
// that returned first (ties: called first). When several partial
// linearizations are longest, the one whose culprit returned last wins: it
// linearizes the history furthest into the run. (Of two successful
// takeovers of one record, the culprit is the second to return.) ok is
// false when the history is linearizable or the check timed out.
func (r Result) Culprit() (op porcupine.Operation, ok bool) {
	r = r.Resolve()
	if r.Linearizable || r.Unknown || r.disagree {
		return op, false
	}
	parts := r.Info.PartialLinearizations()
	if len(parts) == 0 {
		return op, false
	}
	longest := 0
	for _, p := range parts[0] {
		longest = max(longest, len(p))
	}
	found := -1
	in := make([]bool, len(r.ops))
	for _, p := range parts[0] {
		if len(p) != longest {
			continue
		}
		clear(in)
		for _, id := range p {
			in[id] = true
		}
		first := -1
		for i := range r.ops {
			if !in[i] && (first < 0 || r.before(i, first)) {
				first = i
			}
		}
		if first >= 0 && (found < 0 || r.before(found, first)) {
			found = first
		}
	}
	if found < 0 {
		return op, false
	}
	op = r.ops[found]
	op.Input, op.Output = inputOf(op.Input), outputOf(op.Output) // (Decide's point into its history)
	return op, true
}

// before orders operations by return, then call, then index.
func (r Result) before(i, j int) bool {
	a, b := &r.ops[i], &r.ops[j]
	if a.Return != b.Return {
		return a.Return < b.Return
	}
	if a.Call != b.Call {
		return a.Call < b.Call
	}
	return i < j
}

// Describe renders op as "300/watch takeover({100 1760476487}) by 300 → ok
// {300 1760476499} at 12.100341s", with its return time (or its call
// time and "never returned").
func (r Result) Describe(op porcupine.Operation) string {
	s := describeOp(inputOf(op.Input), outputOf(op.Output))
	if op.Metadata != nil {
		s = fmt.Sprint(op.Metadata) + " " + s
	}
	if r.End > 0 && op.Return > r.End {
		return s + " called at " + secs(op.Call) + ", never returned"
	}
	return s + " at " + secs(op.Return)
}

// Err returns nil for a linearizable history and otherwise an error naming
// the first operation that could not be linearized.
func (r Result) Err() error {
	r = r.Resolve()
	switch {
	case r.Linearizable:
		return nil
	case r.Unknown && r.overBudget:
		return fmt.Errorf("store linearizability undecided: porcupine's search passed its budget of %d model steps (model.StepBudget)", r.budget)
	case r.Unknown:
		return errors.New("store linearizability unknown: the check timed out")
	case r.disagree:
		return errors.New("store linearizability undecided: model.Witness found no order and porcupine found one (a bug in the checker)")
	}
	if op, ok := r.Culprit(); ok {
		return errors.New("store not linearizable: " + r.Describe(op))
	}
	if r.noCulprit {
		return errors.New("store not linearizable (its culprit undecided: the search for it passed its budget or timed out)")
	}
	return errors.New("store not linearizable")
}

// secs prints true ns as seconds with six decimals, as the trace does.
func secs(ns int64) string { return fmt.Sprintf("%d.%06ds", ns/1e9, ns%1e9/1e3) }
