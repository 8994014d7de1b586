package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/leaselab/leaselab/trace"
)

// Footprint is what one step of an exploration touched: its process,
// whether it was global, and the objects it read, wrote or updated.
type Footprint struct {
	proc     int16
	act      int16 // its activity (-1: a fault candidate's step)
	iso      bool
	global   bool
	killable bool // it stands for a death or pause too (WithFaults)
	dies     bool // it is a death or pause of its process
	fault    bool // it is a fault candidate's step (faultCands), no activity's
	acc      []access
}

// Fault reports whether the step was a fault candidate's (a reduced
// exploration's SIGKILL, SIGTERM or pause of a process), not an
// activity's.
func (f Footprint) Fault() bool { return f.fault }

// Cand returns the candidate whose step it was (for a fault candidate's
// step, Act is -1, whichever fault it was).
func (f Footprint) Cand() Candidate { return Candidate{Proc: int(f.proc), Act: int(f.act)} }

func (l *porLog) footprint(s *porStep) Footprint {
	return Footprint{proc: s.proc, act: s.actOf(), iso: s.iso, global: s.global, dies: s.dies, fault: s.act < 0, acc: l.acc[s.acc0:s.acc1]}
}

// Dependent reports whether two steps (of different instants of a
// schedule, or of two schedules from one state) do not commute: see the
// relation above.
func (f Footprint) Dependent(g Footprint) bool {
	switch {
	case f.global || g.global:
		return true
	case f.proc == g.proc && (!f.iso && !g.iso || f.killable || g.killable || f.dies || g.dies):
		return true // (a process's death or pause ends or holds all its activities)
	case f.killable && (g.killable || g.touchesKill()) || g.killable && f.touchesKill():
		return true
	}
	for _, x := range f.acc {
		for _, y := range g.acc {
			if x.conflicts(y) {
				return true
			}
		}
	}
	return false
}

// Fingerprint returns a hash of the run's trace up to the reordering of
// independent steps (Explore.DPOR runs only; 0 otherwise): the events of
// each instant's steps in a canonical order (of all orders the
// dependency relation allows, the one that always takes the
// lowest-numbered activity that can go next), with what merely counts
// steps (the step at which a term was last seen live) left out. Events
// outside steps (timed faults) keep their place between instants.
func (w *World) Fingerprint() uint64 { return w.fingerprint(false) }

// KillFingerprint is Fingerprint with the quiet steps a SIGKILL of their
// process found pending (por_quiet.go) left out: a run that kills a
// process right after such steps hashes as the one that kills it before
// them, which a reduced search runs instead.
func (w *World) KillFingerprint() uint64 { return w.fingerprint(true) }

func (w *World) fingerprint(quiet bool) uint64 {
	l := w.por
	if l == nil {
		return 0
	}
	var drop []bool
	if quiet {
		drop = l.quietDropped()
	}
	h := fnv.New64a()
	var buf [8]byte
	num := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	str := func(s trace.Str) {
		h.Write([]byte(w.tr.S(s)))
		h.Write([]byte{0})
	}
	ev := func(e trace.Event) {
		if e.Kind == trace.EvStopped {
			e.C = 0
		}
		for _, v := range []int64{e.T, e.N, e.A, e.B, e.C, e.D, int64(e.Flag), int64(e.FD), int64(e.Proc), int64(e.Act),
			int64(e.Errno), int64(e.Kind), int64(e.Op), int64(e.Role), int64(e.Msg), int64(e.Store), int64(e.Res)} {
			num(v)
		}
		str(e.Path)
		str(e.Path2)
		str(e.Data)
		str(e.Text)
	}
	timed := make(map[int]bool, len(l.timedEv))
	for _, i := range l.timedEv {
		timed[i] = true
	}
	next := 0 // the first event not yet hashed
	l.instants(0, func(lo int, steps []porStep, deps [][]int, _ []bitset) {
		for ; next < steps[0].ev0; next++ {
			ev(w.tr.Events[next])
		}
		// The instant's own events (a term's deadline passing), wherever
		// they fell among its steps, in the order of their processes.
		var own []trace.Event
		for i := steps[0].ev0; i < steps[len(steps)-1].ev1; i++ {
			if timed[i] {
				own = append(own, w.tr.Events[i])
			}
		}
		slices.SortStableFunc(own, func(a, b trace.Event) int { return int(a.Proc) - int(b.Proc) })
		for _, e := range own {
			ev(e)
		}
		placed := make([]bool, len(steps))
		if drop != nil {
			copy(placed, drop[lo:]) // as if they had not run: what follows them only wrote what they read
		}
		for range steps {
			best := -1
			for j := range steps {
				if placed[j] {
					continue
				}
				ready := true
				for _, d := range deps[j] {
					if !placed[d] {
						ready = false
						break
					}
				}
				if ready && (best < 0 || steps[j].proc < steps[best].proc || steps[j].proc == steps[best].proc && steps[j].actOf() < steps[best].actOf()) {
					best = j
				}
			}
			if best < 0 {
				break // the rest left out
			}
			placed[best] = true
			s := steps[best]
			num(int64(s.proc)<<16 | int64(uint16(s.actOf())))
			for i := s.ev0; i < s.ev1; i++ {
				if !timed[i] {
					e := w.tr.Events[i]
					if s.fault {
						e.Act = -1
					}
					ev(e)
				}
			}
		}
		// Events between two steps of the instant (none is expected):
		// after its steps, in their order.
		for i := 1; i < len(steps); i++ {
			for j := steps[i-1].ev1; j < steps[i].ev0; j++ {
				if !timed[j] {
					ev(w.tr.Events[j])
				}
			}
		}
		next = steps[len(steps)-1].ev1
	})
	for _, e := range w.tr.Events[next:] {
		ev(e)
	}
	// The lock directory's peaks: an outcome the checker judges.
	for _, p := range w.tr.LockDir.Peaks {
		num(p.T)
		num(int64(p.N))
	}
	return h.Sum64()
}

// WithFaults returns f for a step at which a fault could also have been
// chosen, standing for all its outcomes: one more process's death or
// pause (which touch leadership, flock locks and servers: killable), or,
// if global, a power loss or a clock jump.
func (f Footprint) WithFaults(global bool) Footprint {
	f.killable = true
	f.global = f.global || global
	return f
}

// StepMark returns the index of the step being recorded, or of the next
// one between steps, for Races: asked when a choice is made, it is the
// first step that choice can change. (0 without DPOR's record.)
func (w *World) StepMark() int {
	l := w.por
	if l == nil {
		return 0
	}
	if l.open {
		return len(l.steps) - 1
	}
	return len(l.steps)
}

// touchesKill reports whether f touches what a death or pause does.
func (f Footprint) touchesKill() bool {
	for _, x := range f.acc {
		if x.obj.kind == objLead || x.obj.kind == objLock || x.obj.kind == objServer {
			return true
		}
	}
	return false
}

// String describes the footprint, for debugging an exploration.
func (f Footprint) String() string {
	return fmt.Sprintf("proc %d iso %v global %v dies %v fault %v acc %v", f.proc, f.iso, f.global, f.dies, f.fault, f.acc)
}

// Races returns the races of the run's steps, for Explore.DPOR (nil
// otherwise): for each race of a step i with a later step j, the tie
// before i and, of its candidates, the initials of the steps between i
// and j that do not happen after i, then j (those that have no
// predecessor among them): running one of them first reverses the race
// (Abdulla, Aronis, Jonsson and Sagonas's source sets, POPL 2014). When
// none of them was a candidate there, every candidate.
//
// Only the races whose later step is step from or after it are returned
// (the death races of the deaths from on, the held-back kills' races of
// the ties picked from on; 0: all). A depth-first search passes the
// StepMark of the choice that makes the run new: every step before it is
// the run's it replays, whose races it has had, and a race is a function
// of the steps up to its later one.
func (w *World) Races(from int) []Race {
	l := w.por
	if l == nil {
		return nil
	}
	var out []Race
	seen := map[Race]bool{}
	add := func(r Race) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	l.heldRaces(from, add)
	l.instants(from, func(lo int, steps []porStep, deps [][]int, pred []bitset) {
		// A death (or pause) disables its process's other activities:
		// those ready at its tie never step after it, so no step that ran
		// races with it, though theirs do.
		for k, s := range steps {
			if !s.dies || s.tie < 0 || lo+k < from {
				continue
			}
			var others uint64
			for c, x := range l.ties[s.tie] {
				if x.Proc == int(s.proc) && x.Act != int(s.act) {
					others |= 1 << c
				}
			}
			if others != 0 {
				add(Race{Tie: s.tie, Cands: others, Every: true, Disables: true})
			}
		}
		for j := max(from-lo, 0); j < len(steps); j++ {
			sj := steps[j]
			for _, i := range deps[j] {
				si := steps[i]
				if si.tie < 0 || si.proc == sj.proc && si.act == sj.act || sj.enabler == lo+i {
					// (A step cannot run before the one that alone
					// enabled it: the two are not co-enabled.)
					continue
				}
				// A race reversed through another step k (i before k
				// before j) is that step's.
				through := false
				for _, k := range deps[j] {
					if k != i && pred[k].has(i) {
						through = true
						break
					}
				}
				if e := sj.enabler - lo; e > i && e < j && pred[e].has(i) {
					through = true // (its enabler happens after i)
				}
				if through {
					continue
				}
				cands := l.ties[si.tie]
				var initials uint64
				for k := i + 1; k <= j; k++ {
					if k < j && pred[k].has(i) {
						continue // it happens after i
					}
					initial := true
					for m := i + 1; m < k; m++ {
						if !pred[m].has(i) && pred[k].has(m) {
							initial = false
							break
						}
					}
					if !initial {
						continue
					}
					for c, x := range cands {
						if x.Proc == int(steps[k].proc) && x.Act == int(steps[k].act) {
							initials |= 1 << c
						}
					}
				}
				if initials != 0 {
					add(Race{Tie: si.tie, Cands: initials})
				} else {
					add(Race{Tie: si.tie, Cands: 1<<len(cands) - 1, Every: true})
				}
			}
		}
	})
	return out
}
