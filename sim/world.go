package sim

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// World is one simulated run in progress.
type World struct {
	chained []Fault       // faults that follow another (Fault.Follows), armed when it fires
	boots   int           // power losses so far: the machine's boot number (BootID)
	servers []namedServer // lease servers (Dialer), in order of first use
	cfg     Config
	variant lease.Variant
	choose  Chooser
	sched   Scheduler
	fs      *FileSystem
	procs   []*proc
	queue   actHeap
	now     int64
	seq     uint64
	cur     *activity
	base    int64 // WallBase in Unix ns
	steps   []wallStep
	faults  []Fault // timed faults not yet fired, ordered by At
	reap    []*activity
	cands   []Candidate
	candAct []*activity
	// fcands are the faults a reduced exploration offers at the pick
	// under way (Explore.DPOR); faultPick is the one chosen, at faultAt.
	fcands    []Candidate
	faultPick Candidate
	faultAt   int64
	tieAt     int64 // the instant of the tie being decided (TieInstant)
	tr        *trace.Trace
	leading   int     // leader contexts not yet seen done, over all processes
	leaders   leadSet // the processes that hold them
	timers    int     // armed MonoTimers, over all processes
	setup     *setup  // tr.Run.Setup
	syscalls  int
	// limit, when positive, stops the run after that many system calls
	// (Config.MaxSyscalls; the benchmark's unit is one system call).
	limit int
	// noFastPath sends every step through the scheduler (for the test that
	// the fast path changes nothing).
	noFastPath bool
	// fenceMax is the highest epoch the fenced resource has accepted.
	fenceMax int64
	inotify  notifications // change counts and the activities waiting for one
	// ctxWaiters are activities in a wait that a context can end
	// (lease.ContextWaiter).
	ctxWaiters []ctxWaiter
	// ex is the run's use of its Explore budgets.
	ex exploreState
	// lockWaiters are activities waiting in flock for an inode's lock, in
	// the order they began to wait.
	lockWaiters []lockWaiter
	// stretches are the stretch faults under way (stretch.go).
	stretches stretchState
	// bootAt is the true instant the machine last booted (0: the run's
	// first boot; World.reboot).
	bootAt int64
	// leaderTriggers are crash points aimed at whichever process leads
	// (Proc Leader with After): they count the calls made by leaders.
	leaderTriggers []trigger
	// dirMax is the most names the lock's directory has held so far.
	dirMax int
	// notices are the Notice faults that have fired: while each lasts,
	// the server's change notices to its process meet its fate.
	notices []activeNotice
	// nconf is how many processes the config named (a power loss's
	// restart starts them again: restart); incarn, once a restart has
	// run, is each one's current process, and ownProcs marks cfg.Procs
	// and setup.cfg.Procs as this world's own copies (delayStart).
	nconf    int
	incarn   []int
	ownProcs bool
	// end is the true time at which the run stops: the horizon, or
	// Config.Calm after the last fault that took effect or exit.
	end int64
	// por records the steps' accesses for partial-order reduction
	// (Explore.DPOR, Explore.OnNode; nil otherwise).
	por *porLog
	// xc is the explorer's Chooser (Explore.Chooser, wrapped by drawHash
	// with OnNode); nh names the run's states for OnNode (por_node.go).
	xc Chooser
	nh *nodeHash
	// spare, if set, is the memory this world runs on, a finished one's
	// or fresh: sim.Run gives it back when the run ends, New's caller by
	// Release. released marks a world New made and its caller released.
	spare    *spare
	released bool
	// fl is the world's entry among the runs in progress (Running).
	fl flight
}

// countDir notes a new peak of the lock directory's name count.
func (w *World) countDir() {
	if n := w.fs.WatchCount(); n > w.dirMax {
		w.dirMax = n
		w.tr.LockDir.Peaks = append(w.tr.LockDir.Peaks, trace.DirPeak{T: w.now, N: n})
	}
}

// Run runs the world to its horizon. It panics on a released world.
func (w *World) Run() {
	if w.released {
		panic("sim: Run of a released World")
	}
	w.takeOff()
	defer w.land()
	for !w.ex.stop { // (Explore.OnStep)
		w.turn()
		next := w.queue.peek()
		if len(w.faults) > 0 && int64(w.faults[0].At) <= w.end && (next == nil || int64(w.faults[0].At) <= next.ready) {
			f := w.faults[0]
			w.faults = w.faults[1:]
			w.now = max(w.now, int64(f.At))
			w.fire(f, nil)
			continue
		}
		if next == nil || next.ready > w.end || w.limit > 0 && w.syscalls >= w.limit {
			break
		}
		if w.nh != nil && (next.ready != w.nh.t || w.cfg.Explore.NodeEvery) && w.cfg.Explore.OnNode(w.node()) {
			w.ex.stop = true
			break
		}
		a := w.pick()
		if w.ex.stop {
			if a != nil {
				w.queue.push(a)
			}
			break
		}
		if a == nil {
			w.exploreFault(w.faultPick, w.faultAt)
			continue
		}
		if w.por != nil {
			w.porBegin(a)
		}
		if a.p.stopped || w.stalled() {
			a.p.parked = append(a.p.parked, a)
			if w.por != nil {
				w.porEnd()
			}
			continue
		}
		w.now = a.ready
		if w.cfg.Explore != nil {
			if !w.exploreStep(a) {
				if w.por != nil {
					w.porEnd()
				}
				continue
			}
			w.ex.last = a
		}
		w.step(a)
		if w.por != nil {
			w.porEnd()
		}
	}
	if w.limit > 0 && w.syscalls >= w.limit {
		w.setup.stopped(w.now, w.syscalls) // the run ends here, not at its horizon
		w.tr.Run.Capped = w.cfg.MaxSyscalls == 0
	} else {
		w.now = max(w.now, w.end)
	}
	w.observeAtEnd()
	w.tr.End = time.Duration(w.now)
	w.unwindAll()
	w.tr.Files = w.fs.Files()
}

// unwindAll unwinds every activity still suspended (or never started)
// and returns its worker.
func (w *World) unwindAll() {
	for _, p := range w.procs {
		for _, a := range p.acts {
			if a.state != actDone {
				a.killed = true
				w.finish(a)
			}
		}
	}
}

// runsNext reports whether activity a, ready at true time ready, is
// certainly the next step the run loop would take: strictly before every
// queued step and every pending fault, within the horizon, and its process
// running.
func (w *World) runsNext(a *activity, ready int64) bool {
	if w.noFastPath || a.p.stopped || ready > w.end || w.limit > 0 && w.syscalls >= w.limit {
		return false
	}
	if next := w.queue.peek(); next != nil && next.ready <= ready {
		return false
	}
	return len(w.faults) == 0 || int64(w.faults[0].At) > ready
}

// pick pops the next activity to step: the earliest ready one, or the
// scheduler's choice among those ready at the same instant. In a
// reduced exploration (Explore.DPOR) a process's fault is a candidate
// of its own at every instant while its budget lasts; when the scheduler
// chooses one, pick returns nil, every activity stays queued, and
// w.faultPick is the fault.
func (w *World) pick() *activity {
	a := w.queue.pop()
	if w.cfg.Explore != nil {
		w.faultCands(a.ready)
	}
	// (A SIGKILL held back for a quiet step still makes the pick a tie,
	// as offered it would: the sleep sets cut a run at ties only.)
	if next := w.queue.peek(); len(w.fcands) == 0 && (w.por == nil || w.por.held == 0) && (next == nil || next.ready != a.ready) {
		return a
	}
	w.candAct = append(w.candAct[:0], a)
	for next := w.queue.peek(); next != nil && next.ready == a.ready; next = w.queue.peek() {
		w.candAct = append(w.candAct, w.queue.pop())
	}
	slices.SortFunc(w.candAct, func(x, y *activity) int {
		if x.p.idx != y.p.idx {
			return x.p.idx - y.p.idx
		}
		return x.id - y.id
	})
	w.cands = w.cands[:0]
	for _, c := range w.candAct {
		w.cands = append(w.cands, Candidate{Proc: c.p.idx, Act: c.id})
	}
	w.cands = append(w.cands, w.fcands...)
	if l := w.por; l != nil {
		l.tie = len(l.ties)
		n := len(l.tieCands)
		l.tieCands = append(l.tieCands, w.cands...)
		l.ties = append(l.ties, l.tieCands[n:len(l.tieCands):len(l.tieCands)])
	}
	w.tieAt = a.ready
	k := w.sched.Pick(w.cands)
	if w.por != nil {
		w.por.cand = k
		if w.por.held != 0 && !w.ex.stop { // (a run stopped here chose nothing)
			w.por.heldAt = append(w.por.heldAt, heldTie{w.por.tie, w.por.held, len(w.por.steps)})
		}
	}
	if k >= len(w.candAct) {
		for _, c := range w.candAct {
			w.queue.push(c)
		}
		w.faultPick, w.faultAt = w.cands[k], a.ready
		return nil
	}
	chosen := w.candAct[k]
	for i, c := range w.candAct {
		if i != k {
			w.queue.push(c)
		}
	}
	return chosen
}

// step resumes a until its next scheduling point.
func (w *World) step(a *activity) {
	if len(a.p.timers) > 0 {
		a.p.fireTimers() // due before this step: its code sees their effect
	}
	if a.p.dead {
		// A callback of its timers panicked, here or in the look at the
		// world of a fault an exploration fired just before (exploreStep):
		// a, killed with its process, unwinds with the rest.
		w.reapKilled()
		return
	}
	if len(a.p.ended) > 0 {
		a.p.lookAgain(int16(a.id))
	}
	w.cur = a
	a.state = actRunning
	a.t = w.now // the time of the step it resumes into (suspend's caller reads it)
	alive := a.wk.resume()
	w.cur = nil
	if !alive {
		w.observe() // what the activity did before it ended
	}
	if !alive {
		a.state = actDone
		a.p.sync()
		a.p.running--
		w.putWorker(a.wk)
		a.wk = nil
	}
	w.reapKilled()
}

// reapKilled unwinds the activities killed since the last reaping.
func (w *World) reapKilled() {
	for len(w.reap) > 0 {
		r := w.reap[len(w.reap)-1]
		w.reap = w.reap[:len(w.reap)-1]
		w.finish(r)
	}
}

// finish unwinds a killed activity's coroutine (its deferred calls run,
// and any Proc call they make panics again) and returns its worker.
func (w *World) finish(a *activity) {
	a.state = actDone
	wk := a.wk
	a.wk = nil
	if wk == nil {
		return
	}
	if !a.started {
		w.putWorker(wk) // its body never ran: nothing to unwind
		return
	}
	prev := w.cur
	w.cur = a
	if wk.resume() {
		panic("sim: a killed activity kept running")
	}
	w.cur = prev
	w.putWorker(wk)
}

// fire applies a fault now. at is the activity that triggered it, if any.
func (w *World) fire(f Fault, by *proc) {
	if f.aimed != nil {
		// The timed copy of a power loss aimed after a call: it falls now
		// only if the call has not come, and then the call no longer
		// aims it.
		ts := w.leaderTriggers
		if f.aimed.proc != Leader {
			ts = w.procs[f.aimed.proc].triggers
		}
		tr := &ts[f.aimed.i]
		if tr.count >= max(tr.f.Nth, 1) {
			return
		}
		tr.count = max(tr.f.Nth, 1)
		f.aimed = nil
	}
	if f.expire != nil {
		w.expireNow(f.expire, int64(f.At))
		return
	}
	if f.deliver != nil {
		w.notifyKey(f.deliver.key, f.release) // a delayed notice, not a fault of its own
		return
	}
	if f.lose != "" {
		w.loseServerData(f.lose)
		return
	}
	w.observe() // the world reached the fault's instant: who leads, as its code sees it
	if f.Kind.IsStretch() && machineWide(f.Kind) || f.Kind == trace.End {
		w.fireStretch(f)
		return
	}
	var p *proc
	switch {
	case f.Kind == trace.Jump || f.Kind == trace.Power || f.Kind == trace.Lose:
	case f.Proc == Leader:
		if p = w.leaderNow(); p == nil {
			w.record(trace.Fault(-1, f.Kind, 0, 0, true, w.tr.Str(f.String()+": no leader, no effect")))
			w.setup.fate(f, noLeader)
			return
		}
	default:
		p = w.procs[f.Proc]
	}
	if p != nil && p.dead {
		return
	}
	w.setup.fate(f, fired)
	if p != nil {
		w.arm(f, p)
	}
	text := f.String()
	if p != nil {
		text += " (pid " + strconv.Itoa(p.pid) + ")"
	}
	ev := trace.Fault(-1, f.Kind, f.Dur, f.Delta, false, w.tr.Str(text))
	if p != nil {
		ev.Proc = int16(p.idx)
	}
	if f.Kind == trace.Drift {
		ev.C = f.PPM
	}
	w.record(ev)
	switch f.Kind {
	case trace.Kill:
		w.kill(p, -9)
	case trace.Term:
		p.signal()
	case trace.Stop, trace.Suspend:
		p.stopped = true
		w.faults = insertFault(w.faults, Fault{Kind: trace.Cont, At: time.Duration(w.now) + f.Dur, Proc: p.idx})
		if f.Kind == trace.Suspend {
			p.suspend(f.Dur)
		}
	case trace.Cont:
		p.cont()
	case trace.EMFile:
		p.emfile++
		w.faults = insertFault(w.faults, Fault{Kind: trace.End, At: time.Duration(w.now) + f.Dur, Proc: p.idx, ends: trace.EMFile})
	case trace.Notice:
		w.notices = append(w.notices, activeNotice{proc: p.idx, fate: f.Call, delay: f.Delta, until: w.now + int64(f.Dur)})
	case trace.Skew:
		p.clock.skew += int64(f.Delta)
	case trace.Drift:
		p.clock.setRate(w.now, f.PPM)
		p.restateLead()
		p.retime()
		if f.Proc == Leader { // a split: the leader one way, every other process the other
			for _, q := range w.procs {
				if q != p && !q.dead {
					q.clock.setRate(w.now, -f.PPM)
					q.restateLead()
					q.retime()
				}
			}
		}
	case trace.Jump:
		w.steps = append(w.steps, wallStep{t: w.now, delta: int64(f.Delta)})
	case trace.Power:
		// Every process that has started dies; those configured to start
		// later are the machine's restart.
		for i, q := range w.procs {
			if !q.dead && int64(w.cfg.Procs[i].Start) <= w.now {
				w.kill(q, -9)
			}
		}
		w.fs.PowerLoss(w.choose.Choose)
		w.countDir()
		w.boots++
		w.reboot(w.now + int64(f.Dur))
		if f.Dur > 0 {
			w.restart(f)
		}
	case trace.Lose:
		w.loseServerData("")
	}
}

// arm arms the faults chained to f, which has just hit p: those that
// follow p's next calls, and those that strike the leader now.
func (w *World) arm(f Fault, p *proc) {
	if f.idx == 0 {
		return
	}
	for _, c := range w.chained {
		switch {
		case c.Follows != f.idx:
		case c.Proc == Leader:
			c.Follows, c.At = 0, time.Duration(w.now)
			w.faults = insertFault(w.faults, c)
		default:
			p.triggers = append(p.triggers, trigger{f: c, any: c.Kind != trace.FSError}) // (an error's trigger counts the calls that can fail: proc.enter)
		}
	}
}

func insertFault(fs []Fault, f Fault) []Fault {
	i := sort.Search(len(fs), func(i int) bool { return fs[i].At > f.At })
	fs = append(fs, Fault{})
	copy(fs[i+1:], fs[i:])
	fs[i] = f
	return fs
}

// kill ends process p: every activity stops, descriptors close, files stay.
// It reports whether it ended p, with an exit event the trace's last.
func (w *World) kill(p *proc, code int64) bool {
	if p.dead {
		return false
	}
	w.observe() // it ran until now, unless paused
	if p.dead {
		return false // a callback of its timers, due there, panicked (timerPanicked)
	}
	w.porKill(p)
	p.dead = true
	p.role = lease.RoleStarting
	p.dropTimers()
	p.diedLeading()
	for _, a := range p.acts {
		if a.state == actDone {
			continue
		}
		w.queue.remove(a)
		if a == w.cur {
			continue // it unwinds itself
		}
		a.killed = true
		w.reap = append(w.reap, a)
	}
	p.parked = nil
	if len(w.lockWaiters) > 0 {
		kept := w.lockWaiters[:0]
		for _, x := range w.lockWaiters {
			if x.a.p != p {
				kept = append(kept, x)
			}
		}
		clear(w.lockWaiters[len(kept):])
		w.lockWaiters = kept
	}
	p.fds.CloseAll() // releases its flock locks: their waiters wake
	w.record(trace.Exit(int16(p.idx), code))
	return true
}

func (w *World) record(e trace.Event) { w.add(&e) }

// add is record of an event the caller built in its own frame, passed by
// pointer as an Event is a hundred bytes.
func (w *World) add(e *trace.Event) {
	e.T = w.now
	evs := append(w.tr.Events, *e)
	w.tr.Events = evs
	w.added(&evs[len(evs)-1]) // (as event)
}

// event appends to the trace an event of kind at now, of process proc's
// activity act, for the caller to fill in and then pass to added, with no
// other event recorded in between (it points into the trace's array).
// The hot paths (every system call's, store call's and clock read's)
// build their events there, in place: one built in the caller's frame
// and copied was read back, 16 bytes at a time, just after its fields
// were written one by one, which the processor's store forwarding does
// not cover (a stall at each such load: World.add was 13% of
// BenchmarkSimSyscall's profile, almost all of it two loads).
func (w *World) event(proc, act int16, kind trace.Kind) *trace.Event {
	evs := append(w.tr.Events, trace.Event{})
	w.tr.Events = evs
	e := &evs[len(evs)-1] // (evs, not w.tr.Events read back through w: loads less)
	e.T, e.Proc, e.Act, e.Kind = w.now, proc, act, kind
	return e
}

// added ends the recording of e, the trace's last event. It inlines: a
// run without a reduction or a calm has nothing to do here.
func (w *World) added(e *trace.Event) {
	if w.por != nil || w.cfg.Calm > 0 {
		w.addedMore(e)
	}
}

func (w *World) addedMore(e *trace.Event) {
	if w.por != nil {
		w.porEvent(e)
	}
	if w.cfg.Calm > 0 && (e.Kind == trace.EvFault && !e.Missed() || e.Kind == trace.EvExit) {
		w.end = max(w.end, w.now+int64(w.cfg.Calm)) // the calm starts again
	}
}

// latency draws the latency of a system call of p (nil: of the kernel's
// own, a wake-up).
func (w *World) latency(p *proc) int64 {
	lo, hi := int64(w.cfg.SyscallMin), int64(w.cfg.SyscallMax)
	l := lo
	if hi > lo {
		l += int64(w.choose.Choose(int(hi - lo + 1)))
	}
	if p != nil && p.slow > 0 {
		l += int64(w.choose.Choose(int(p.slow) + 1))
	}
	if w.cfg.SlowEvery > 0 && w.choose.Choose(w.cfg.SlowEvery) == 0 {
		// Log-uniform up to SlowMax: a halving in 0..15, then uniform
		// within it.
		d := int64(w.cfg.SlowMax) >> w.choose.Choose(16)
		l += d/2 + int64(w.choose.Choose(int(d-d/2)+1))
	}
	return l
}

// lateness draws how late a timer fires.
func (w *World) lateness() int64 {
	if w.cfg.TimerLateMax <= 0 {
		return 0
	}
	return int64(w.choose.Choose(int(w.cfg.TimerLateMax) + 1))
}

// Syscalls returns the number of system calls made so far.
func (w *World) Syscalls() int { return w.syscalls }

// Trace returns the trace so far.
func (w *World) Trace() *trace.Trace { return w.tr }
