package sim

import "github.com/leaselab/leaselab/trace"

// A SIGKILL after a quiet step. A step of a process is quiet if nobody
// else can tell that it ran: it is not global, not a death or a pause,
// every object it touched it only read (a directory's change count
// excepted: a watch's wait leaves an activity the death must stop
// waiting, which the death's own footprint shows), and it recorded only
// events no property judges but by counting calls: system calls, log
// lines, clock reads, spawns and hand-offs within the process (a term's
// deadline passing, the instant's and not the step's, aside; an injected
// error's fault event, a role, a store operation, a leadership's start
// or end, a fence make a step loud).
//
// Killing a process P right after a quiet step s reaches what killing P
// right before s does: s changed nothing another process can see, and P
// has no future to carry what it changed in P. So a reduced search
// offers P's SIGKILL only where no quiet step of P at the tie's instant
// is pending: one that no loud step of P follows (depends on it, or was
// made runnable by it, directly or through other steps of P).
//
// Why that is sound. Take any run E of the full search that kills P at
// instant t, and let D be the quiet steps of P at t pending at the kill.
// No loud step of P follows a step of D, and a quiet step of P that
// follows one has none following it either, so it is in D: a step that
// follows one of D is in D or another process's, which depends on it
// only by writing what it read, and sees the same without it. So every
// step of E but D's, the kill included, does what it did in E, and E
// less D is a run (the activities of P that ran D stay queued at t, so
// picks at t remain, and the kill ends them), in which no quiet step of P
// is pending at the kill: it is offered there. Pending is a property of
// the trace, not of the order of its independent steps (another
// process's step neither makes nor clears it; two steps of P that do not
// depend on each other order nothing), so the kill is a transition that
// only P's own steps, dependent on it, enable or disable, as the
// reduction requires; at another instant it is another transition. Its
// races are reported where it is held back as where it runs (heldRaces).
//
// The two runs differ by D's events only, and the indices of the events
// after them: World.KillFingerprint leaves D out, and the full search of
// the tests (Explore.EveryKill) finds one verdict per KillFingerprint.
// Of the properties (package spec) only no-busy-loop judges such events,
// by counting a process's calls within a quiet stretch: the kill, a
// change for every process at t, starts a stretch at t, so D's calls
// count only among the calls of the one instant t, and the runs that
// continue E's prefix, D included, without the kill count at least as
// many there. (A run that reaches the simulator's cap on system calls,
// a spin, counts D's toward it.) A pause and a SIGTERM are not covered:
// a paused process's later steps read later, and a SIGTERM's handler
// runs.

// quietProc is one process's quiet steps at the instant of its last step.
type quietProc struct {
	t     int64
	steps []int    // the process's steps at instant t, by log index (at most 64)
	after []uint64 // for each, the bits (in steps) of the steps it follows
	// pending are the bits of the quiet steps no loud step follows.
	pending uint64
	// over marks an instant with more than 64 steps of the process: its
	// kill is offered everywhere then.
	over bool
}

// quietAdd records step i (after porEnd) in its process's quiet steps.
func (l *porLog) quietAdd(i int) {
	s := &l.steps[i]
	for int(s.proc) >= len(l.quiet) {
		l.quiet = append(l.quiet, quietProc{t: -1})
	}
	q := &l.quiet[s.proc]
	if q.t != s.t {
		*q = quietProc{t: s.t, steps: q.steps[:0], after: q.after[:0]}
	}
	if q.over || len(q.steps) == 64 {
		q.over = true
		return
	}
	var after uint64
	for k, j := range q.steps {
		o := &l.steps[j]
		if s.enabler == j || o.act == s.act && !o.fault && !s.fault || l.dependent(o, s) {
			after |= 1<<k | q.after[k]
		}
	}
	k := len(q.steps)
	q.steps, q.after = append(q.steps, i), append(q.after, after)
	if s.quiet {
		q.pending |= 1 << k
	} else {
		q.pending &^= after
	}
}

// quietPending reports whether process proc has a quiet step pending at
// instant t: its SIGKILL there is offered before it instead.
func (l *porLog) quietPending(proc int, t int64) bool {
	if proc >= len(l.quiet) {
		return false
	}
	q := &l.quiet[proc]
	return q.t == t && !q.over && q.pending != 0
}

// quietStep reports whether step s, just ended, is quiet.
func (w *World) quietStep(s *porStep) bool {
	if s.global || s.dies || s.fault {
		return false
	}
	l := w.por
	for _, a := range l.acc[s.acc0:s.acc1] {
		if a.mode != read || a.obj.kind == objChanges {
			return false
		}
	}
	timed := len(l.timedEv) // the step's own timed events are last
	for timed > 0 && l.timedEv[timed-1] >= s.ev0 {
		timed--
	}
	for i := s.ev0; i < s.ev1; i++ {
		if timed < len(l.timedEv) && l.timedEv[timed] == i {
			timed++
			continue
		}
		switch w.tr.Events[i].Kind {
		case trace.EvSyscall, trace.EvLog, trace.EvClock, trace.EvSpawn, trace.EvSend, trace.EvRecv:
		default:
			return false
		}
	}
	return true
}

// quietDropped returns, for the fingerprint, the steps a SIGKILL of their
// process at their instant found pending: those its run would have
// reached as well with the kill before them.
func (l *porLog) quietDropped() []bool {
	var drop []bool
	saved := l.quiet
	l.quiet = nil
	for i := range l.steps {
		s := &l.steps[i]
		if s.kill {
			if int(s.proc) < len(l.quiet) {
				q := &l.quiet[s.proc]
				if q.t == s.t && !q.over {
					for k, j := range q.steps {
						if q.pending&(1<<k) != 0 {
							if drop == nil {
								drop = make([]bool, len(l.steps))
							}
							drop[j] = true
						}
					}
				}
			}
		}
		l.quietAdd(i)
	}
	l.quiet = saved
	return drop
}

// heldTie is a tie at which the SIGKILL of the processes procs (bit p
// for process p) was held back for a quiet step pending.
type heldTie struct {
	tie   int
	procs uint64
	step  int // the step after the pick (StepMark)
}

// heldRaces adds, for each tie picked at step from or later where a
// process's SIGKILL was held back, the race its death there would have
// had with the process's activities ready there, which it disables
// (Races). A fault comes only at a pick, so a kill after the process's
// loud step at an instant needs another step of that instant still to
// come; the search that offers the kill at every tie puts the process's
// steps before another process's last step of the instant through these
// races of the kills it runs. Without them,
// a kill after a loud step that comes after quiet ones was missed where
// the other process's steps went first. (Found by
// TestDPORSoundRandomToys: toy 51, whose second process stats and then
// fails an O_EXCL create with an injected ENOSPC while the first's flock
// ends the instant, lost 1 of 88 traces.)
func (l *porLog) heldRaces(from int, add func(Race)) {
	for _, h := range l.heldAt {
		if h.step < from {
			continue
		}
		var acts uint64
		for c, x := range l.ties[h.tie] {
			if x.Act >= 0 && x.Proc < 64 && h.procs&(1<<x.Proc) != 0 {
				acts |= 1 << c
			}
		}
		if acts != 0 {
			add(Race{Tie: h.tie, Cands: acts, Every: true, Disables: true})
		}
	}
}
