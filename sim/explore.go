package sim

import (
	"slices"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// Explore turns a run into one branch of a systematic search (package
// spec's Explore): before every step the Chooser is asked whether the
// process about to step is killed, signalled, paused, or has its system
// call fail, or whether the machine loses power, while budgets last, and
// every tie is ordered by a delay-bounded scheduler. The fast path is off,
// so every scheduling point is a choice point. With DPOR a process's
// SIGKILL, SIGTERM and pauses are not asked about at its steps: they are
// candidates of their own at every pick (faultCands), so any process can
// be hit at any instant at which anything steps.
type Explore struct {
	Chooser Chooser
	// Budgets: how many of each a run may inject.
	Crashes, Terms, Pauses, FSErrors, Jumps int
	// Powers is how many power losses a run may inject. A power loss kills
	// every process at once; the file system keeps its durable state, a
	// prefix of its metadata journal (every prefix is a choice) and, of
	// the files written since their last fsync, the data as written,
	// except that up to TornFiles of them (each file, each fate, is a
	// choice) get another of PowerLoss's outcomes: the synced data, zeros,
	// or the new data cut after one byte, in the middle, or before its last
	// byte. PowerRestart later the machine is up again and every process
	// of the config starts again, with its PID, skew and drift, on what the
	// disk kept.
	Powers       int
	PowerRestart time.Duration
	TornFiles    int
	// PauseLengths are the lengths a pause may take.
	PauseLengths []time.Duration
	// JumpSizes are the steps the machine's wall clock may take.
	JumpSizes []time.Duration
	// Preemptions bounds deviations from the default schedule, which runs
	// the activity that ran last while it can, then the lowest-numbered
	// ready one (delay bounding: a preemption, or any other reordering of
	// same-instant steps, costs one). DPOR lifts the bound.
	Preemptions int
	// DPOR records what each step reads and writes (por.go), for
	// World.Races and World.Fingerprint, and lets every tie be chosen: the
	// explorer orders same-instant steps by dynamic partial-order
	// reduction instead of a delay bound, with the processes' faults
	// among the candidates of every tie (CandKill, CandTerm, CandPause).
	DPOR bool
	// EveryKill offers, with DPOR, a process's SIGKILL after its quiet
	// steps too, which a kill before them stands for (por_quiet.go): the
	// full search the reduced one is held to.
	EveryKill bool
	// OnTie, if set, is called with a tie's candidates before the
	// Chooser is asked to order it: the next choice is a schedule's, not
	// a fault's. If it returns true the run stops there (every candidate
	// is asleep: the schedule is another's reordered).
	OnTie func(cands []Candidate) (stop bool)
	// OnStep, if set with DPOR, is told what each step touched, after it.
	// If it returns true the run stops there (the step was of an activity
	// asleep, and nothing else could have run: the schedule is another's
	// reordered).
	OnStep func(Footprint) (stop bool)
	// OnNode, if set, is called before the first pick of every instant
	// (before every pick with NodeEvery) with the state the run is in,
	// named up to the reordering of independent steps (Node,
	// por_node.go); the steps are recorded as for DPOR, which changes
	// nothing else in the run. If it returns true the run stops there
	// (the explorer has searched from an equivalent state with as much
	// budget left). An explorer that sees only each instant's first
	// state still meets two orders of one instant's independent steps
	// where they end, at a fraction of the memory and the hashing.
	OnNode    func(Node) (stop bool)
	NodeEvery bool
}

// exploreState is a run's use of its Explore budgets.
type exploreState struct {
	crashes, terms, pauses, fserrs, jumps, powers, deviations int
	last                                                      *activity
	// started is set at the run's first step; procs is then the number
	// of configured processes, those a restart starts again.
	started bool
	procs   int
	// stop ends the run at once (Explore.OnTie, Explore.OnNode).
	stop bool
	// asking marks the explorer's own questions (ask).
	asking bool
}

// ask asks the explorer's Chooser a question of its own: a fault here or
// not, which of a tie's steps first. (What follows is the answer: a
// merged search's state names leave these choices out, drawHash.)
func (w *World) ask(n int) int {
	w.ex.asking = true
	v := w.xc.Choose(n)
	w.ex.asking = false
	return v
}

// exploreStep offers the faults at the step activity a is about to take.
// It reports whether a still takes its step.
func (w *World) exploreStep(a *activity) bool {
	e, s := w.cfg.Explore, &w.ex
	p := a.p
	if !s.started {
		s.started, s.procs = true, len(w.procs)
		if e.Powers > 0 {
			w.fs.TrackDurability() // what New placed is on the disk
		}
	}
	// (A reduced exploration offers its processes' faults as candidates
	// of their own: faultCands.)
	if !e.DPOR && s.crashes < e.Crashes && w.ask(2) == 1 {
		s.crashes++
		w.fire(Fault{Kind: trace.Kill, Proc: p.idx, At: time.Duration(w.now)}, nil)
		return false
	}
	if s.powers < e.Powers && w.ask(2) == 1 {
		s.powers++
		w.explorePowerLoss()
		return false
	}
	if !e.DPOR && s.terms < e.Terms && w.ask(2) == 1 {
		s.terms++
		w.fire(Fault{Kind: trace.Term, Proc: p.idx, At: time.Duration(w.now)}, nil)
		if p.dead {
			return false
		}
	}
	if !e.DPOR && s.pauses < e.Pauses && len(e.PauseLengths) > 0 {
		if k := w.ask(1 + len(e.PauseLengths)); k > 0 {
			s.pauses++
			w.fire(Fault{Kind: trace.Stop, Proc: p.idx, At: time.Duration(w.now), Dur: e.PauseLengths[k-1]}, nil)
			p.parked = append(p.parked, a)
			return false
		}
	}
	if s.jumps < e.Jumps && len(e.JumpSizes) > 0 {
		if k := w.ask(1 + len(e.JumpSizes)); k > 0 {
			s.jumps++
			w.fire(Fault{Kind: trace.Jump, At: time.Duration(w.now), Delta: e.JumpSizes[k-1]}, nil)
		}
	}
	if s.fserrs < e.FSErrors && a.pendingSyscall && w.ask(2) == 1 {
		s.fserrs++
		a.inject = syscall.ENOSPC
	}
	return true
}

// A reduced exploration's fault candidates (Explore.DPOR) have a negative
// Candidate.Act: the process's SIGKILL, its SIGTERM, or a pause of
// Explore.PauseLengths[k] (CandPause - k).
const (
	CandKill  = -1
	CandTerm  = -2
	CandPause = -3
)

// faultCands sets w.fcands to the faults a reduced exploration offers at
// the instant t: while its budgets last, each living process's SIGKILL
// (unless a quiet step of it at t is pending: por_quiet.go), SIGTERM
// and, unless it is paused, a pause of each length. A fault is a
// step of its own, at any instant, whichever of its process's
// activities (if any) is ready then: so a crash before or after another
// process's step is one candidate, and sleeps like any other step once
// run.
func (w *World) faultCands(t int64) {
	w.fcands = w.fcands[:0]
	if w.por != nil {
		w.por.held = 0
	}
	e, s := w.cfg.Explore, &w.ex
	if e == nil || !e.DPOR || t > w.end {
		return
	}
	for _, p := range w.procs {
		if p.dead {
			continue
		}
		// (Not after a quiet step of p at t: a kill before it reaches
		// the same, por_quiet.go.)
		if s.crashes < e.Crashes {
			if e.EveryKill || p.idx >= 64 || !w.por.quietPending(p.idx, t) {
				w.fcands = append(w.fcands, Candidate{Proc: p.idx, Act: CandKill})
			} else {
				w.por.held |= 1 << p.idx
			}
		}
		if s.terms < e.Terms {
			w.fcands = append(w.fcands, Candidate{Proc: p.idx, Act: CandTerm})
		}
		if s.pauses < e.Pauses && !p.stopped {
			for k := range e.PauseLengths {
				w.fcands = append(w.fcands, Candidate{Proc: p.idx, Act: CandPause - k})
			}
		}
	}
}

// exploreFault fires the fault candidate c, chosen at instant t.
func (w *World) exploreFault(c Candidate, t int64) {
	e, s := w.cfg.Explore, &w.ex
	w.now = max(w.now, t)
	if !s.started {
		s.started, s.procs = true, len(w.procs)
		if e.Powers > 0 {
			w.fs.TrackDurability()
		}
	}
	if w.por != nil {
		w.porBeginFault(c.Proc)
	}
	f := Fault{Proc: c.Proc, At: time.Duration(w.now)}
	switch c.Act {
	case CandKill:
		s.crashes++
		f.Kind = trace.Kill
	case CandTerm:
		s.terms++
		f.Kind = trace.Term
	default:
		s.pauses++
		f.Kind, f.Dur = trace.Stop, e.PauseLengths[CandPause-c.Act]
	}
	w.fire(f, nil)
	for len(w.reap) > 0 { // a death unwinds its activities within its step
		r := w.reap[len(w.reap)-1]
		w.reap = w.reap[:len(w.reap)-1]
		w.finish(r)
	}
	if w.por != nil {
		w.porEnd()
	}
}

// explorePowerLoss fires a power loss now, its outcomes chosen by the
// explorer (tornChooser), and starts the machine's restart.
func (w *World) explorePowerLoss() {
	e := w.cfg.Explore
	c := w.choose
	w.choose = &tornChooser{c: w.xc, budget: e.TornFiles}
	w.fire(Fault{Kind: trace.Power, At: time.Duration(w.now)}, nil)
	w.choose = c
	at := w.now + int64(e.PowerRestart)
	w.reboot(at)
	for _, ps := range w.cfg.Procs[:w.ex.procs] {
		ps.Start = time.Duration(at)
		w.addProc(ps)
	}
}

// addProc adds a process to a run under way (a restart after a power
// loss), as New adds the configured ones (its speed, and its lease
// configuration in the trace, which the checker judges its deadlines by:
// a restart of a process of a rolling change was judged by the run's
// lease, a false alarm a test found): the run's config, its setup line
// and its trace list it from then on.
func (w *World) addProc(ps ProcSpec) {
	p := &proc{w: w, idx: len(w.procs), pid: ps.PID, slow: ps.Slow, fds: w.fs.NewFDTable(), clock: newProcClock(ps.DriftPPM, int64(ps.Skew))}
	if w.boots > 0 {
		p.clock.reboot(w.bootAt) // (a process of the machine's restart)
	}
	w.procs = append(w.procs, p)
	// Clip: the slices may share an array with the caller's Config.
	w.cfg.Procs = append(slices.Clip(w.cfg.Procs), ps)
	w.setup.cfg.Procs = append(slices.Clip(w.setup.cfg.Procs), ps)
	w.tr.Procs = append(w.tr.Procs, trace.ProcInfo{PID: ps.PID, Start: ps.Start, Lease: ps.Lease, DriftPPM: ps.DriftPPM})
	w.tr.Acts = append(w.tr.Acts, nil)
	p.spawn("main", int64(ps.Start), nil)
}

// tornFates are the fates, other than keeping its new data (TornNew), an
// exploration gives a file written since its last fsync when the power
// fails: PowerLoss's other outcomes, a torn prefix at three cuts.
var tornFates = []struct{ torn, cut int }{{TornOld, 0}, {TornZeros, 0}, {TornPrefix, 0}, {TornPrefix, 1}, {TornPrefix, 2}}

// tornChooser makes FileSystem.PowerLoss's choices for an exploration,
// from the explorer's Chooser c: first the length of the metadata
// journal's surviving prefix (every length, the whole journal first),
// then, for each file written since its last fsync, its fate: its new
// data without a choice once budget files have had another, else any of
// tornFates (TornNew first); a torn prefix's length follows from its cut.
type tornChooser struct {
	c       Chooser
	budget  int
	journal bool // the journal's prefix is chosen
	cut     int  // the pending torn prefix's cut, plus one (0: none)
}

// Choose implements Chooser.
func (t *tornChooser) Choose(n int) int {
	switch {
	case !t.journal:
		t.journal = true
		if n == 1 {
			return 0 // an empty journal: nothing to choose
		}
		return n - 1 - t.c.Choose(n)
	case t.cut > 0:
		// n-1 is the new data's length: cut after one byte, in the middle,
		// or before the last byte.
		cut := t.cut - 1
		t.cut = 0
		return [...]int{min(1, n-1), (n - 1) / 2, max(n-2, 0)}[cut]
	case n != numTorn:
		panic("sim: a power loss asked the explorer for a choice it does not know")
	case t.budget == 0:
		return TornNew
	}
	k := t.c.Choose(1 + len(tornFates))
	if k == 0 {
		return TornNew
	}
	t.budget--
	f := tornFates[k-1]
	if f.torn == TornPrefix {
		t.cut = f.cut + 1
	}
	return f.torn
}

// PowerLossOutcomes returns how many outcomes a power loss now would have
// in an exploration with torn as Explore.TornFiles: the surviving prefixes
// of the metadata journal times the fates of the files written since
// their last fsync (for the estimate of an exploration's size; it counts
// the files of the whole namespace, not of each prefix's).
func (w *World) PowerLossOutcomes(torn int) float64 {
	f := w.fs
	if !f.tracking {
		return 1
	}
	dirty := 0
	seen := map[*inode]bool{}
	for _, ino := range f.names.m {
		if ino.dirty && !seen[ino] {
			seen[ino] = true
			dirty++
		}
	}
	// Sum over k <= torn of C(dirty, k) * len(tornFates)^k.
	fates, term := 0.0, 1.0
	for k := 0; k <= min(torn, dirty); k++ {
		fates += term
		term *= float64(dirty-k) / float64(k+1) * float64(len(tornFates))
	}
	return float64(len(f.journal)+1) * fates
}

// delayBounded is Explore's scheduler.
type delayBounded struct{ w *World }

func (d delayBounded) Pick(cands []Candidate) int {
	w := d.w
	def := 0
	if l := w.ex.last; l != nil {
		for i, c := range cands {
			if c.Proc == l.p.idx && c.Act == l.id {
				def = i
			}
		}
	}
	e := w.cfg.Explore
	if w.ex.deviations >= e.Preemptions && !e.DPOR {
		return def
	}
	if e.OnTie != nil && e.OnTie(cands) {
		w.ex.stop = true
		return def
	}
	k := w.ask(len(cands))
	if k != def {
		w.ex.deviations++
	}
	return k
}

// FaultsLeft reports, during an exploration, whether a fault of a
// process (a SIGKILL, SIGTERM or pause) and a global one (a power loss, a
// clock jump) can still be chosen at a later step as an alternative to a
// step: a step's sleeper stands for the faults its step could have had
// only while they can. (A reduced exploration's process faults are
// candidates of their own, never alternatives: proc is false.)
func (w *World) FaultsLeft() (proc, global bool) {
	e, s := w.cfg.Explore, &w.ex
	if e == nil {
		return false, false
	}
	proc = !e.DPOR && (s.crashes < e.Crashes || s.terms < e.Terms || s.pauses < e.Pauses && len(e.PauseLengths) > 0)
	// (An injected ENOSPC changes what its step touches: a sleeping step
	// that could still fail stands for every outcome, as a global fault.)
	global = s.powers < e.Powers || s.jumps < e.Jumps && len(e.JumpSizes) > 0 || s.fserrs < e.FSErrors
	return proc, global
}

// TieInstant returns, while Explore.OnTie runs, the true time of the
// instant whose tie it is asked about.
func (w *World) TieInstant() int64 { return w.tieAt }

// Stopped reports whether the run was stopped by Explore.OnTie or
// Explore.OnNode.
func (w *World) Stopped() bool { return w.ex.stop }
