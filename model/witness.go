package model

import (
	"cmp"
	"slices"
	"sync"

	"github.com/anishathalye/porcupine"
)

// witnessBudget bounds the search for a witness: this many candidates
// tried an operation (each through the model's step from every state the
// register may be in), and witnessSlack more.
const (
	witnessBudget = 4
	witnessSlack  = 64
)

// Verdict is what a search for a witness found.
type Verdict uint8

const (
	// Unsure: the search gave up (its budget spent, or a history whose
	// inputs and outputs are not Input and Output values, or with an
	// operation that returns before its call); nothing is known.
	Unsure Verdict = iota
	// Witnessed: a linearization was found, so the history is
	// linearizable.
	Witnessed
	// NoOrder: every order the search could take was tried and none fits.
	// Check then asks porcupine's verbose check alone, which decides.
	NoOrder
)

// Witness looks for a linearization of ops under Register (or, when
// expiring, ExpiringRegister). It is a cheap first look, not the decision:
// a depth-first search that offers, at each point, the operations that may
// come next (those called before every remaining operation returned; a
// call at the instant of another's return is concurrent with it, as
// porcupine orders them), earliest return first, tracking the set of
// states the register may be in, and that gives up after witnessBudget
// candidates tried an operation. Every step it takes is the model's own
// transition relation, so a linearization it finds is one porcupine would
// accept (TestWitnessAgreesWithPorcupine compares the two, on histories
// that are linearizable and on histories that are not). On the simulator's
// histories it finds one for nearly every linearizable history, at a small
// part of porcupine's cost, which sorts and links entries, boxes every
// state and starts a goroutine a history.
func Witness(ops []porcupine.Operation, expiring bool) Verdict {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	return sc.search(ops, expiring)
}

// witnessOp is an operation as the search reads it.
type witnessOp struct {
	call, ret int64
	in        Input
	out       Output
}

// frame is a point of the search's path: the candidates offered there
// (cands[candAt:candEnd]), the one being tried, and the states the
// register may be in there (states[stateAt:stateEnd]).
type frame struct {
	candAt, candEnd, tried int
	stateAt, stateEnd      int
}

// scratch is a search's memory, reused: a check makes one search a run.
// The operations not placed are a list in order of call (succ, pred; n is
// its head and tail), from which placing an operation unlinks it and
// backing up links it again (in the reverse order: each link it had is as
// it left it), so that offering candidates costs their number, not the
// history's length. (Scanning from the first operation not placed was
// quadratic on a long run with one operation that never returned, which
// stays unplaced to the end.)
type scratch struct {
	ops        []witnessOp
	succ, pred []int
	path       []frame
	cands      []int
	states     []State
	next       []State
	scanned    int // operations offer has looked at (for a test of its cost)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (sc *scratch) search(ops []porcupine.Operation, expiring bool) Verdict {
	sc.ops = sc.ops[:0]
	for _, o := range ops {
		in, ok1 := asInput(o.Input)
		out, ok2 := asOutput(o.Output)
		if !ok1 || !ok2 {
			return Unsure
		}
		sc.ops = append(sc.ops, witnessOp{o.Call, o.Return, in, out})
	}
	return sc.run(expiring)
}

// witnessHistory is Witness of FromTrace's history before boxing.
func witnessHistory(h []histOp, expiring bool) Verdict {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.ops = sc.ops[:0]
	for _, o := range h {
		sc.ops = append(sc.ops, witnessOp{o.Call, o.Return, o.Input, o.Output})
	}
	return sc.run(expiring)
}

// run searches sc.ops.
func (sc *scratch) run(expiring bool) Verdict {
	n := len(sc.ops)
	for i := range sc.ops {
		if sc.ops[i].ret < sc.ops[i].call {
			return Unsure // (not FromTrace's: porcupine decides)
		}
	}
	// In order of call (ties: of the history), so that the operations that
	// may come next are found by scanning the list from its head.
	slices.SortStableFunc(sc.ops, func(a, b witnessOp) int { return cmp.Compare(a.call, b.call) })
	sc.succ, sc.pred = slices.Grow(sc.succ[:0], n+1)[:n+1], slices.Grow(sc.pred[:0], n+1)[:n+1]
	for i := 0; i <= n; i++ {
		sc.succ[i], sc.pred[i] = (i+1)%(n+1), (i+n)%(n+1)
	}
	sc.path = slices.Grow(sc.path[:0], n+1) // (offer's frames never move: f stays valid)
	sc.cands = sc.cands[:0]
	sc.states = append(sc.states[:0], empty)
	sc.scanned = 0
	budget := witnessBudget*n + witnessSlack

	sc.offer(0, 1)
	for placed := 0; placed < n; {
		f := &sc.path[len(sc.path)-1]
		if f.tried >= f.candAt {
			j := sc.cands[f.tried] // back from the one tried last
			sc.succ[sc.pred[j]], sc.pred[sc.succ[j]] = j, j
		}
		f.tried++
		if f.tried == f.candEnd {
			// Nothing fits here: back up one operation.
			sc.cands, sc.states = sc.cands[:f.candAt], sc.states[:f.stateAt]
			sc.path = sc.path[:len(sc.path)-1]
			if len(sc.path) == 0 {
				return NoOrder
			}
			placed--
			continue
		}
		if budget == 0 {
			return Unsure
		}
		budget--
		j := sc.cands[f.tried]
		o := &sc.ops[j]
		next := sc.next[:0]
		for _, s := range sc.states[f.stateAt:f.stateEnd] {
			at := len(next)
			if expiring {
				next = appendExpiringStep(next, s, o.in, o.out)
			} else {
				next = appendStep(next, s, o.in, o.out)
			}
			for i := at; i < len(next); {
				if slices.Contains(next[:i], next[i]) {
					next = slices.Delete(next, i, i+1)
					continue
				}
				i++
			}
		}
		sc.next = next
		if len(next) == 0 {
			continue
		}
		sc.succ[sc.pred[j]], sc.pred[sc.succ[j]] = sc.succ[j], sc.pred[j]
		placed++
		at := len(sc.states)
		sc.states = append(sc.states, next...)
		sc.offer(at, len(sc.states))
	}
	return Witnessed
}

// offer pushes a frame whose states are states[sa:se], with the candidates
// after the operations placed so far: scanning the operations not placed
// in order of call, every one called no later than the earliest return
// among them (each one called later returns later still, so the scan stops
// at the first), earliest return first.
func (sc *scratch) offer(sa, se int) {
	n := len(sc.ops)
	at := len(sc.cands)
	minRet := int64(1<<63 - 1)
	for j := sc.succ[n]; j != n; j = sc.succ[j] {
		sc.scanned++
		if sc.ops[j].call > minRet {
			break
		}
		minRet = min(minRet, sc.ops[j].ret)
		sc.cands = append(sc.cands, j)
	}
	slices.SortFunc(sc.cands[at:], func(a, b int) int {
		if r := cmp.Compare(sc.ops[a].ret, sc.ops[b].ret); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	sc.path = append(sc.path, frame{candAt: at, candEnd: len(sc.cands), tried: at - 1, stateAt: sa, stateEnd: se})
}
