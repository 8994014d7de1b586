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
// (Variables: tests set them to 0 to leave porcupine every history.)
var (
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
// candidates tried an operation, and that does not search twice from a
// point it has already searched from in full: the operations placed and
// the states the register may be in after them decide what can follow,
// so a point whose every continuation failed once fails again (porcupine's
// cache, on sets of states). Every step it takes is the model's own
// transition relation, so a linearization it finds is one porcupine would
// accept (TestWitnessAgreesWithPorcupine compares the two, on histories
// that are linearizable and on histories that are not). On the simulator's
// histories it finds one for nearly every linearizable history, at a small
// part of porcupine's cost, which sorts and links entries, boxes every
// state and starts a goroutine a history.
func Witness(ops []porcupine.Operation, expiring bool) Verdict {
	sc := scratchPool.Get().(*scratch)
	defer sc.put()
	return sc.search(ops, expiring)
}

// put gives sc back to the pool, without the dead ends of a search that
// remembered many (a long history's: a run's searches remember a few).
func (sc *scratch) put() {
	if len(sc.ends) > maxPooledEnds {
		sc.dead, sc.ends, sc.endBits, sc.endSts = nil, nil, nil, nil
	}
	scratchPool.Put(sc)
}

// maxPooledEnds is the most dead ends whose memory a pooled scratch keeps.
const maxPooledEnds = 1024

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

	// The points searched from in full (dead ends): placed is the set of
	// operations placed now (a bit each) and key its hash (the exclusive
	// or of zobrist(j) over its members); a dead end is found by the hash
	// of its operations and states and compared in full.
	placed  []uint64
	key     uint64
	dead    map[uint64]int32 // hash -> its last dead end (index into ends)
	ends    []deadEnd
	endBits []uint64 // the dead ends' sets of operations, each its window (see window)
	endSts  []State  // their states
	pruned  int      // candidates cut as dead ends (for a test)
}

// deadEnd is a point searched from in full that led to no linearization.
type deadEnd struct {
	bits, sts, nsts int32 // its operations at endBits[bits:], states at endSts[sts:sts+nsts]
	lo, nbits       int32 // placed's words before lo are all ones, after lo+nbits all zeros
	prev            int32 // the dead end before it with the same hash, or -1
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
	defer sc.put()
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
	sc.scanned, sc.pruned = 0, 0
	words := (n + 63) / 64
	sc.placed = slices.Grow(sc.placed[:0], words)[:words]
	clear(sc.placed)
	sc.key = 0
	clear(sc.dead)
	sc.ends, sc.endBits, sc.endSts = sc.ends[:0], sc.endBits[:0], sc.endSts[:0]
	budget := witnessBudget*n + witnessSlack

	sc.offer(0, 1)
	for placed := 0; placed < n; {
		f := &sc.path[len(sc.path)-1]
		if f.tried >= f.candAt {
			j := sc.cands[f.tried] // back from the one tried last
			sc.succ[sc.pred[j]], sc.pred[sc.succ[j]] = j, j
			sc.mark(j, false)
		}
		f.tried++
		if f.tried == f.candEnd {
			// Nothing fits here: back up one operation, and remember the
			// point as a dead end.
			if len(sc.path) > 1 {
				sc.markDead(sc.states[f.stateAt:f.stateEnd])
			}
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
		sc.mark(j, true)
		if sc.isDead(next) {
			sc.pruned++
			continue // (taken out again at the top, as every candidate tried)
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

// mark puts operation j in the set of those placed, or takes it out (a
// candidate backed from may never have been placed).
func (sc *scratch) mark(j int, in bool) {
	w, b := &sc.placed[j/64], uint64(1)<<(j%64)
	if (*w&b != 0) != in {
		*w ^= b
		sc.key ^= zobrist(uint64(j))
	}
}

// zobrist is operation j's share of the hash of a set of operations.
func zobrist(j uint64) uint64 {
	z := j + 0x9e3779b97f4a7c15 // splitmix64
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// statesHash is the hash of a set of states, whatever their order.
func statesHash(sts []State) uint64 {
	var h uint64
	for _, s := range sts {
		x := uint64(s.Rec.Holder)*0x9e3779b97f4a7c15 ^ uint64(s.Rec.Until)
		x = x*0xbf58476d1ce4e5b9 ^ uint64(s.Rec.Epoch)
		x = x*0x94d049bb133111eb ^ uint64(s.Rec.Version)
		x = x*0x9e3779b97f4a7c15 ^ uint64(s.Rec.TTL)
		x = x*0xbf58476d1ce4e5b9 ^ s.Rec.Nonce
		if s.Present {
			x ^= 1 << 62
		}
		if s.Wild {
			x ^= 1 << 63
		}
		h += zobrist(x)
	}
	return h
}

// isDead reports whether the operations placed, with the register in one
// of sts, is a point searched from in full before.
func (sc *scratch) isDead(sts []State) bool {
	if len(sc.ends) == 0 {
		return false
	}
	i, ok := sc.dead[sc.key^statesHash(sts)]
	if !ok {
		return false
	}
	lo, win := sc.window()
	for i >= 0 {
		e := sc.ends[i]
		if int(e.nsts) == len(sts) && int(e.lo) == lo && int(e.nbits) == len(win) && slices.Equal(sc.endBits[e.bits:e.bits+e.nbits], win) && sameSet(sc.endSts[e.sts:e.sts+e.nsts], sts) {
			return true
		}
		i = e.prev
	}
	return false
}

// markDead remembers the operations placed, with the register in one of
// sts, as a dead end.
func (sc *scratch) markDead(sts []State) {
	if sc.dead == nil {
		sc.dead = make(map[uint64]int32)
	}
	h := sc.key ^ statesHash(sts)
	prev, ok := sc.dead[h]
	if !ok {
		prev = -1
	}
	sc.dead[h] = int32(len(sc.ends))
	lo, win := sc.window()
	sc.ends = append(sc.ends, deadEnd{bits: int32(len(sc.endBits)), sts: int32(len(sc.endSts)), nsts: int32(len(sts)), prev: prev, lo: int32(lo), nbits: int32(len(win))})
	sc.endBits = append(sc.endBits, win...)
	sc.endSts = append(sc.endSts, sts...)
}

// sameSet reports whether a and b, each without repeats and of one
// length, hold the same states.
func sameSet(a, b []State) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// window returns placed without its leading all-ones words (lo of them)
// and its trailing zero words: the operations placed, in the space of
// those the search has not passed (a search places nearly a prefix).
func (sc *scratch) window() (lo int, win []uint64) {
	hi := len(sc.placed)
	for lo < hi && sc.placed[lo] == ^uint64(0) {
		lo++
	}
	for hi > lo && sc.placed[hi-1] == 0 {
		hi--
	}
	return lo, sc.placed[lo:hi]
}
