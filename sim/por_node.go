package sim

import (
	"math/bits"
	"slices"

	"github.com/leaselab/leaselab/trace"
)

// Merging equivalent states (Explore.OnNode). A delay-bounded search
// runs schedules that differ only in the order of independent steps:
// two processes' steps that touch nothing in common, run in either order,
// reach one state, and from it the search runs the same continuations
// twice. With OnNode the world names, before the first pick of every
// instant, the state the run is in, up to that reordering, so that the explorer can cut a run
// that reaches a state it has already searched from with at least as
// much budget left.
//
// The name is a hash of the run's steps as a partial order: each step is
// hashed with its process, its activity (none for a fault), its instant,
// its events (what it did and saw), the choices made for it (a power
// loss's outcomes, a workload's timing) and the sum of the hashes of the
// earlier steps of its instant it depends on (por.go's relation, its own
// activity's and the step that woke it included); an instant's steps are
// summed, which does not depend on their order, and instants (and the
// events between them, timed faults) are chained in order. Two orders of
// one instant's steps that agree on every dependent pair give every step
// the same hash, and so one name; two that do not give some step another
// (up to a collision of two 64-bit hashes). What is left out is what
// merely counts steps: a term's end's count of the events before it
// (EvStopped's C, as Fingerprint leaves it out) and which step saw a
// term's deadline pass (the instant's own events are summed apart).
//
// It relies on the dependency relation as the reduction does: steps it
// calls independent commute, reaching one state in either order.
// TestMergeSound holds the merged search to the full one.

// Node names a state of an exploration, at a pick (Explore.OnNode).
type Node struct {
	// State is the run's steps up to the reordering of independent
	// steps, with its setup and the faults it has used.
	State [2]uint64
	// Last is the activity that ran last, which the delay bound runs
	// first while it can (Proc -1: none yet).
	Last Candidate
	// Left is how many deviations from the default order the delay bound
	// still allows.
	Left int
}

// lanes is a pair of 64-bit hashes, summed or chained lane by lane.
type lanes [2]uint64

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// put chains v into h.
func (h *lanes) put(v uint64) {
	h[0] = mix(h[0] ^ v)
	h[1] = mix(bits.RotateLeft64(h[1], 17) + v*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
}

func (h *lanes) putLanes(x lanes) { h.put(x[0]); h.put(x[1]) }

func (h *lanes) putString(s string) {
	h.put(uint64(len(s)))
	for len(s) >= 8 {
		h.put(uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56)
		s = s[8:]
	}
	var v uint64
	for i := range len(s) {
		v |= uint64(s[i]) << (8 * i)
	}
	h.put(v)
}

func (h *lanes) add(x lanes) { h[0] += x[0]; h[1] += x[1] }

// nodeHash is a run's state name under way.
type nodeHash struct {
	chain lanes   // the setup, the instants before the current one, the events between
	t     int64   // the current instant
	lo    int     // its first step (an index of porLog.steps)
	sum   lanes   // its steps' hashes, summed
	timed lanes   // its own events' hashes (porLog.timedEv), summed
	hs    []lanes // each step's hash, by index of porLog.steps
	seen  int     // the trace's events hashed so far
	tcur  int     // porLog.timedEv[:tcur] are hashed
	draws lanes   // choices made since the last step or flush
	nd    bool    // draws holds something
}

// newNodeHash starts a run's name with its setup: what a search may vary
// between runs (each process's skew and drift) and the rest of its
// processes' configuration.
func newNodeHash(cfg *Config) *nodeHash {
	nh := &nodeHash{t: -1}
	nh.chain.putString(cfg.Variant)
	for _, ps := range cfg.Procs {
		nh.chain.put(uint64(ps.PID))
		nh.chain.put(uint64(ps.Start))
		nh.chain.put(uint64(ps.Skew))
		nh.chain.put(uint64(ps.DriftPPM))
	}
	return nh
}

// closeInstant chains the current instant's steps, which are done.
func (nh *nodeHash) closeInstant(next int) {
	if nh.t >= 0 || nh.sum != (lanes{}) {
		nh.chain.put(uint64(nh.t))
		nh.chain.putLanes(nh.sum)
		nh.chain.putLanes(nh.timed)
	}
	nh.sum, nh.timed, nh.lo = lanes{}, lanes{}, next
}

// flush chains what happened outside steps since the last one: events
// (timed faults, which come before every step of their instant) and
// choices.
func (w *World) nodeFlush() {
	nh, l := w.nh, w.por
	if nh.seen < len(w.tr.Events) {
		nh.closeInstant(len(l.steps))
		nh.t = -1
		for ; nh.seen < len(w.tr.Events); nh.seen++ {
			nh.chain.put(w.hashEvent(&w.tr.Events[nh.seen]))
		}
		for nh.tcur < len(l.timedEv) && l.timedEv[nh.tcur] < nh.seen {
			nh.tcur++
		}
	}
	if nh.nd {
		nh.chain.putLanes(nh.draws)
		nh.draws, nh.nd = lanes{}, false
	}
}

// hashEvent hashes an event's content (strings by their text: a trace's
// string table is in order of first use).
func (w *World) hashEvent(e *trace.Event) uint64 {
	var h lanes
	c := e.C
	if e.Kind == trace.EvStopped {
		c = 0 // the count of events before it: the order of independent steps
	}
	for _, v := range [...]int64{e.T, e.N, e.A, e.B, c, e.D, int64(e.Flag), int64(e.FD), int64(e.Proc), int64(e.Act),
		int64(e.Errno), int64(e.Kind), int64(e.Op), int64(e.Role), int64(e.Msg), int64(e.Store), int64(e.Res)} {
		h.put(uint64(v))
	}
	for _, s := range [...]trace.Str{e.Path, e.Path2, e.Data, e.Text} {
		h.putString(w.tr.S(s))
	}
	return h[0] ^ bits.RotateLeft64(h[1], 32)
}

// nodeStep hashes the step just recorded (porEnd).
func (w *World) nodeStep() {
	nh, l := w.nh, w.por
	i := len(l.steps) - 1
	s := &l.steps[i]
	if s.t != nh.t {
		nh.closeInstant(i)
		nh.t = s.t
	}
	var h lanes
	h.put(uint64(uint16(s.proc)) | uint64(uint16(s.actOf()))<<16)
	h.put(uint64(s.t))
	for k := s.ev0; k < s.ev1; k++ {
		e := w.hashEvent(&w.tr.Events[k])
		if nh.tcur < len(l.timedEv) && l.timedEv[nh.tcur] == k {
			nh.tcur++
			var x lanes
			x.put(e)
			nh.timed.add(x) // the instant's, whichever step saw it
			continue
		}
		h.put(e)
	}
	nh.seen = s.ev1
	if nh.nd {
		h.putLanes(nh.draws)
		nh.draws, nh.nd = lanes{}, false
	}
	var deps lanes
	for j := nh.lo; j < i; j++ {
		p := &l.steps[j]
		if p.proc == s.proc && p.act == s.act || j == s.enabler || l.dependent(p, s) {
			deps.add(nh.hs[j])
		}
	}
	h.putLanes(deps)
	nh.hs = append(nh.hs, h)
	nh.sum.add(h)
}

// node names the state before the next pick.
func (w *World) node() Node {
	w.nodeFlush()
	nh, s := w.nh, &w.ex
	k := nh.chain
	k.put(uint64(nh.t))
	k.putLanes(nh.sum)
	k.putLanes(nh.timed)
	for _, v := range [...]int{s.crashes, s.terms, s.pauses, s.fserrs, s.jumps, s.powers} {
		k.put(uint64(v))
	}
	// A pause falls on the step of one of its process's activities,
	// which it parks; the others are parked as they come to step. Until
	// they have, which is parked is not in the steps (the pause is the
	// process's, whichever activity it fell on).
	for _, p := range w.procs {
		if len(p.parked) > 0 {
			k.put(uint64(p.idx))
			ids := make([]int, 0, 8)
			for _, a := range p.parked {
				ids = append(ids, a.id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				k.put(uint64(id))
			}
		}
	}
	n := Node{State: k, Last: Candidate{Proc: -1, Act: -1}, Left: w.cfg.Explore.Preemptions - s.deviations}
	if a := s.last; a != nil {
		n.Last = Candidate{Proc: a.p.idx, Act: a.id}
	}
	return n
}

// drawHash passes choices through from c and hashes those the run's
// steps and events do not show by themselves into its state's name: a
// power loss's outcomes, a workload's timing. The explorer's own
// questions (a fault here? which step first?) are left out: their answers
// are the steps and faults that follow.
type drawHash struct {
	w *World
	c Chooser
}

// Choose implements Chooser.
func (d *drawHash) Choose(n int) int {
	v := d.c.Choose(n)
	if nh := d.w.nh; nh != nil && !d.w.ex.asking {
		nh.draws.put(uint64(n)<<32 | uint64(uint32(v)))
		nh.nd = true
	}
	return v
}
