package sim

import (
	"errors"
	"io/fs"
	"strconv"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// errKilled unwinds a dead process's coroutine: it is panicked inside the
// coroutine and recovered at its base, so the lease code's deferred calls
// run but nothing it does after death reaches the world.
var errKilled = errors.New("sim: process is dead")

type actState uint8

const (
	actReady   actState = iota // in the queue
	actBlocked                 // waiting for a hand-off or a signal
	actRunning
	actDone
)

// activity is one concurrent activity of a process (a goroutine of the
// real program), run as a coroutine: it runs only between the scheduler's
// resume and its own next scheduling point.
type activity struct {
	changed bool // woken by a change notification (WaitChange)
	// pendingSyscall is set while the activity waits to make a system
	// call, and inject is an error an exploration injects into it.
	pendingSyscall bool
	inject         syscall.Errno
	p              *proc
	id             int
	name           string
	wk             *worker
	killed         bool // unwind at the next resume
	started        bool // its body has begun to run
	// inSim marks an activity suspended inside a Proc method that runs
	// none of its caller's code before it suspends again (AwaitShutdown),
	// and isolated one that runs only the simulator's code (the
	// workload): their steps share no memory with the process's other
	// activities (partial-order reduction).
	inSim, isolated bool
	// enabler is the step (its index in the partial-order reduction's
	// record) that alone made the activity runnable: the one that
	// released the flock lock it waited for, sent it a handoff or a
	// signal, or spawned it (-1: none, or not one alone).
	enabler int
	// onClock marks an activity queued to wake when its process's
	// monotonic clock reads clk, then late more (a timer's lateness, in
	// true time): a drift fault moves its wake-up (proc.retime).
	onClock   bool
	clk, late int64
	ready     int64 // true time at which its next step may run
	t         int64 // true time of its latest step
	seq       uint64
	hidx      int
	state     actState
}

// point is a scheduling point: the activity's next step may run at true
// time ready or later, when the scheduler resumes it. It is small enough
// to inline, and so a killed activity panics in its caller's frame: the
// unwinding of each activity still blocked when a run ends, or killed,
// walks a frame less (the runtime's stack walks for a panic and its
// recover were about a third of a short run's fixed cost).
func (a *activity) point(ready int64) {
	if a.pass(ready) {
		panic(errKilled)
	}
}

// pass is point but for the panic: it reports whether the activity must
// unwind (its process is dead, or it was killed).
func (a *activity) pass(ready int64) (killed bool) {
	w := a.p.w
	if a.p.dead || a.killed {
		return true
	}
	w.observe()
	if a.p.dead {
		return true // a callback of its timers panicked there (timerPanicked)
	}
	if w.runsNext(a, ready) {
		// The scheduler would resume this activity next anyway: no other
		// step and no fault is due before it, and no step ties with it, so
		// there is no choice to make. Skipping the round trip through the
		// scheduler gives the same run, minus two coroutine switches.
		w.now, a.t = ready, ready
		if len(a.p.timers) > 0 {
			if a.p.fireTimers(); a.p.dead { // as step would
				return true // (timerPanicked)
			}
		}
		if len(a.p.ended) > 0 {
			a.p.lookAgain(int16(a.id))
		}
		return false
	}
	a.ready, a.seq = ready, w.seq
	w.seq++
	a.state = actReady
	w.queue.push(a)
	return a.yield()
}

// onClockUntil prepares a wait until the activity's process's monotonic
// clock reads local (then a timer's lateness), as a sleep or a timed wait
// on CLOCK_MONOTONIC does: it returns the true instant to pass to point,
// and a change of the clock's rate while the activity waits moves it
// (proc.retime). Something else may wake it first (a change notice, a
// context's end). The caller calls point itself, and clears a.onClock
// after: a frame less for every blocked activity's unwinding (measured:
// 8% of a simulated call when this called point).
func (a *activity) onClockUntil(local int64) int64 {
	p := a.p
	target := p.clock.trueAt(local)
	late := p.w.lateness()
	a.onClock, a.clk, a.late = true, local, late
	return max(target, a.t) + late
}

// retime moves the wake-ups of p's activities queued by onClockUntil to the
// true instants at which their clock readings now come, after a drift
// fault changed the rate of p's clock: Linux's CLOCK_MONOTONIC timers
// follow a slewed rate. (Before, a wake-up stayed at the true instant
// reckoned at the old rate: with a drift of 28% a leader's back-off slept
// half a second past its own deadline, and stopped-callback blamed the
// algorithm for the simulator's late timer.) A wake-up already due, in
// its lateness, stays.
func (p *proc) retime() {
	now := p.w.now
	for _, a := range p.acts {
		if !a.onClock || a.hidx < 0 || a.ready-a.late <= now {
			continue
		}
		a.ready = max(p.clock.trueAt(a.clk), now) + a.late
		p.w.queue.fix(a.hidx)
	}
}

// block suspends the activity until something wakes it. Like point, it
// inlines, and a killed activity panics in its caller's frame.
func (a *activity) block() {
	if a.blocked() {
		panic(errKilled)
	}
}

// blocked is block but for the panic: it reports whether the activity
// must unwind.
func (a *activity) blocked() (killed bool) {
	a.p.w.observe()
	if a.p.dead {
		return true // a callback of its timers panicked there (timerPanicked)
	}
	a.state = actBlocked
	return a.yield()
}

// yield hands control back to the scheduler until it resumes the activity
// (World.step sets a.t then), and reports whether the activity must
// unwind.
func (a *activity) yield() (killed bool) {
	return !a.wk.yield(struct{}{}) || a.p.dead || a.killed
}

func (w *World) wake(a *activity, t int64) {
	if a.p.dead || a.state != actBlocked {
		return
	}
	a.enabler = w.porCurrent()
	a.ready, a.seq = t, w.seq
	w.seq++
	a.state = actReady
	w.queue.push(a)
}

// trigger is a fault aimed at a process's Nth call of a kind.
type trigger struct {
	f     Fault
	count int
	any   bool // a chained fault (Fault.Follows): any call counts
}

// proc is a simulated process. It implements lease.Proc for the lease code
// running in its activities.
type proc struct {
	w       *World
	idx     int
	pid     int
	fds     *FDTable
	clock   procClock
	acts    []*activity
	dead    bool
	stopped bool
	// suspends are its machine's suspensions (Suspend faults), from and
	// to in true time: Suspended.
	suspends []span
	slow     time.Duration // ProcSpec.Slow
	parked   []*activity
	role     lease.Role
	// lead is the last Proc.Lead: its epoch and local deadline, restated
	// in true time when the clock's rate changes (restateLead).
	lead struct {
		epoch    int64
		deadline time.Duration
		act      int16
		set      bool
	}

	sigInstalled, sigPending, termWhileStopped bool
	sigWaiter                                  *activity

	triggers []trigger
	// emfile counts the EMFile stretches under way: while it is positive
	// every open, every whole-file read and every directory listing (each
	// needs a descriptor) fails with EMFILE.
	emfile int

	// running counts its activities begun and not ended; base is the
	// count when the world's instant last changed (at instant), spawned
	// those begun since. trace.ProcInfo's MaxLive is the peak of base +
	// spawned: the activities alive when an instant began and those begun
	// in it, whatever the order of its steps (an end and a start of one
	// instant commute for the partial-order reduction, and the peak must
	// not tell two such orders apart: a review).
	running, base, spawned int
	instant                int64

	// actBuf holds its first activities, actPtrs the first of acts.
	actBuf  [4]activity
	actPtrs [4]*activity
	// tickBuf and handBuf hold its first tickers and hand-offs (a
	// process makes a few a run: no allocation each); nTick and nHand
	// count those handed out.
	tickBuf      [2]ticker
	handBuf      [1]handoff
	nTick, nHand int
	// store is the recording wrapper of its store (mainArgs), and leadBuf
	// holds its first leader context (leaders): memory of the process
	// slab too.
	store   recStore
	leadBuf [1]leaderCtx

	// leaders are the contexts the user's OnStartedLeading was given and
	// has not yet seen done; silent makes clock reads leave no trace
	// while the world looks at them.
	leaders  []leaderCtx
	ended    []endedCtx // the contexts seen done, looked at again as each new term begins
	lookedAt int64      // the instant (+1) of lookAgain's latest look
	contexts int        // OnStartedLeading calls so far
	silent   bool
	// writes counts its store writes: the nonces its clients send
	// (remote.sent).
	writes uint64
	// timers are its armed MonoTimers (timer.go).
	timers []*monoTimer
}

var _ lease.Proc = (*proc)(nil)

// mainArgs returns the store and the config the process's main activity
// starts the variant with (worker.run calls Variant.Start itself: a frame
// less for the unwinding of every main activity still blocked when a run
// ends).
func (p *proc) mainArgs() (lease.Store, lease.Config) {
	store := &p.store
	*store = recStore{inner: p.w.variant.NewStore(p, p.w.cfg.LockPath), p: p}
	cfg := p.w.cfg.ProcLease(p.idx)
	cfg.Callbacks = p.observeLeadership(cfg.Callbacks, p.w.variant.Epochs)
	return store, cfg
}

// sync starts the count of the world's instant, if it has changed.
func (p *proc) sync() {
	if p.instant != p.w.now {
		p.instant, p.base, p.spawned = p.w.now, p.running, 0
	}
}

// spawn starts an activity running f (nil: the process's main).
func (p *proc) spawn(name string, at int64, f func()) {
	w := p.w
	var a *activity
	if n := len(p.acts); n < len(p.actBuf) {
		a = &p.actBuf[n] // (a process has a handful: no allocation each)
	} else {
		a = new(activity)
	}
	*a = activity{p: p, id: len(p.acts), name: name, hidx: -1, t: at, enabler: w.porCurrent()}
	a.wk = w.getWorker()
	a.wk.act, a.wk.fn = a, f
	p.acts = append(p.acts, a)
	w.tr.Acts[p.idx] = append(w.tr.Acts[p.idx], name)
	p.sync()
	p.running++
	if p.spawned++; p.base+p.spawned > w.tr.Procs[p.idx].MaxLive {
		w.tr.Procs[p.idx].MaxLive = p.base + p.spawned
	}
	a.ready, a.seq = at, w.seq
	w.seq++
	w.queue.push(a)
}

// signal delivers SIGTERM.
func (p *proc) signal() {
	p.w.touch(objKey{kind: objSignal, id: p.idx}, true)
	switch {
	case p.stopped:
		p.termWhileStopped = true // delivered at SIGCONT
	case !p.sigInstalled:
		p.w.kill(p, -15) // the default action
	case p.sigWaiter != nil:
		a := p.sigWaiter
		p.sigWaiter = nil
		p.w.wake(a, p.w.now)
	default:
		p.sigPending = true
	}
}

// cont is SIGCONT, or the end of a suspension.
func (p *proc) cont() {
	p.stopped = false
	if n := len(p.suspends); n > 0 {
		// Whichever pause it ends, the process runs again: its machine
		// is no longer suspended.
		p.suspends[n-1].to = min(p.suspends[n-1].to, p.w.now)
	}
	for _, a := range p.parked {
		a.ready = max(a.ready, p.w.now)
		p.w.queue.push(a)
	}
	p.parked = p.parked[:0]
	if p.termWhileStopped {
		p.termWhileStopped = false
		p.signal()
	}
}

// enter is the scheduling point before a system call. It returns the
// calling activity and the error a fault injects into this call, if any.
func (p *proc) enter(op trace.Op, flag int) (*activity, syscall.Errno) {
	a := p.w.cur
	failable := op <= trace.OpLink || op == trace.OpFlock || op == trace.OpRPC || op == trace.OpReadDir // a call an error can be injected into
	a.pendingSyscall = failable
	a.point(a.t + p.w.latency(p))
	a.pendingSyscall = false
	inj := a.inject
	a.inject = 0
	if inj != 0 {
		p.w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvFault, N: int64(trace.FSError), Errno: trace.ErrnoOf(inj), Text: p.w.tr.Str("fserr " + op.String() + " fails with " + trace.ErrnoName(inj))})
	}
	for i := range p.triggers {
		tr := &p.triggers[i]
		if tr.f.Kind == trace.FSError && failable && matches(tr.f.Call, op, flag) {
			tr.count++
			if tr.count == max(tr.f.Nth, 1) {
				inj = tr.f.Errno
				p.w.setup.fate(tr.f, fired)
				p.w.arm(tr.f, p)
				p.w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvFault, N: int64(trace.FSError), Errno: trace.ErrnoOf(inj), Text: p.w.tr.Str(tr.f.String())})
			}
		}
	}
	if inj == 0 && p.emfile > 0 && (op == trace.OpOpen || op == trace.OpRead || op == trace.OpReadDir) {
		inj = syscall.EMFILE
	}
	return a, inj
}

// call appends to the trace the EvSyscall event of op by activity a of p,
// for the caller to fill in (see World.event) and pass to done.
func (p *proc) call(a *activity, op trace.Op) *trace.Event {
	e := p.w.event(int16(p.idx), int16(a.id), trace.EvSyscall)
	e.Op = op
	return e
}

// done records a system call that has taken effect, its event e from call,
// and fires crash points aimed just after it.
func (p *proc) done(e *trace.Event) {
	w := p.w
	w.added(e)
	w.syscalls++
	w.countDir()
	if len(w.leaderTriggers) > 0 && w.leads(p) {
		p.count(w.leaderTriggers, e)
	}
	if len(p.triggers) > 0 {
		p.count(p.triggers, e)
	}
}

// count counts the call e against the crash points trs and fires, at
// this process now, each that reaches its Nth call.
func (p *proc) count(trs []trigger, e *trace.Event) {
	for i := range trs {
		tr := &trs[i]
		if tr.count >= max(tr.f.Nth, 1) {
			continue // fired already
		}
		if tr.any || tr.f.After != "" && matches(tr.f.After, e.Op, int(e.Flag)) {
			tr.count++
			if tr.count == max(tr.f.Nth, 1) {
				f := tr.f
				f.After, f.At, f.Proc = "", time.Duration(p.w.now), p.idx
				p.w.faults = insertFault(p.w.faults, f)
			}
		}
	}
}

// errno is the error number err carries, 0 for none. It inlines: most
// calls succeed.
func errno(err error) trace.Errno {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}

func errnoOf(err error) trace.Errno {
	if pe, ok := err.(*fs.PathError); ok {
		if e, ok := pe.Err.(syscall.Errno); ok {
			return trace.ErrnoOf(e)
		}
	}
	if e, ok := errors.AsType[syscall.Errno](err); ok {
		return trace.ErrnoOf(e)
	}
	return 0 // not a system call's error (a parse error, say)
}

// PID implements lease.Proc.
func (p *proc) PID() int { return p.pid }

// Instance implements lease.Instancer: 0 for a process that no earlier
// living process shares its PID with (so that a run without shared PIDs,
// and a restart after a power loss, name their temporary files as
// before), else the process's index.
func (p *proc) Instance() uint64 {
	for _, q := range p.w.procs[:p.idx] {
		if q.pid == p.pid && !q.dead {
			return uint64(p.idx)
		}
	}
	return 0
}

// Go implements lease.Proc.
func (p *proc) Go(name string, f func()) {
	if f == nil {
		panic("go of nil func value") // as the go statement does (spawn's nil is the process's main)
	}
	p.w.porCall()
	a := p.w.cur
	p.w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvSpawn, Text: p.w.tr.Str(name)})
	p.spawn(name, a.t, f)
}

// Role implements lease.Proc.
func (p *proc) Role(r lease.Role) {
	p.w.porCall()
	a := p.w.cur
	p.role = r
	p.w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvRole, Role: r})
}

// Lead implements lease.Proc: it records the epoch and, in true time, the
// local deadline (at the process's current clock rate).
func (p *proc) Lead(epoch int64, deadline time.Duration) {
	p.w.porCall()
	a := p.w.cur
	p.lead.epoch, p.lead.deadline, p.lead.act, p.lead.set = epoch, deadline, int16(a.id), true
	e := trace.Lead(int16(p.idx), int16(a.id), epoch, p.clock.trueAt(int64(deadline)))
	e.B = int64(deadline) // (MonoDeadline: honest-role counts it from a write's start)
	p.w.record(e)
}

// restateLead records the leader's reported deadline again, in true time
// at the clock's new rate, after a drift fault changed it: the deadline
// the algorithm reported is a reading of its own clock, and the true
// instant that reading comes moved. (Without it, honest-role compared a
// context judged on the new rate with a deadline converted at the old.)
func (p *proc) restateLead() {
	if !p.lead.set || p.role != lease.RoleLeader || p.clock.mono(p.w.now) >= int64(p.lead.deadline) {
		return
	}
	e := trace.Lead(int16(p.idx), p.lead.act, p.lead.epoch, p.clock.trueAt(int64(p.lead.deadline)))
	e.B = int64(p.lead.deadline)
	p.w.record(e)
}

// Log implements lease.Proc: a write(2) to stdout or stderr.
func (p *proc) Log(m lease.Msg, x, y int64) {
	a, _ := p.enter(trace.OpLog, 0)
	e := p.call(a, trace.OpLog)
	e.Kind, e.Msg, e.A, e.B = trace.EvLog, m, x, y
	p.done(e)
}

// Exit implements lease.Proc.
func (p *proc) Exit(code int) {
	a, _ := p.enter(trace.OpExit, 0)
	e := p.call(a, trace.OpExit)
	e.N = int64(code)
	p.done(e)
	p.w.kill(p, int64(code))
	panic(errKilled)
}

// AwaitShutdown implements lease.Proc.
func (p *proc) AwaitShutdown() {
	a := p.w.cur
	a.inSim = true // a step that begins and ends in here runs none of the caller's code
	p.NotifyShutdown()
	p.w.touch(objKey{kind: objSignal, id: p.idx}, true)
	if p.sigPending {
		p.sigPending = false
	} else {
		p.sigWaiter = a
		a.block()
	}
	a.inSim = false
	p.w.porUser()
	p.w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvSignal})
}

// BootID implements lease.BootIDer: the machine's boot, counted in power
// losses. It makes no system call (the real one reads a /proc file once).
// On a machine without a boot id (Config.NoBootID) it fails, as the real
// one does where /proc/sys/kernel/random/boot_id is missing.
func (p *proc) BootID() (string, error) {
	p.w.porCall()
	if p.w.cfg.NoBootID || p.w.cfg.Procs[p.idx].NoBootID {
		return "", bootIDErr
	}
	return "boot-" + strconv.Itoa(p.w.boots), nil
}

// NotifyShutdown implements lease.ShutdownNotifier: the sigaction, once.
func (p *proc) NotifyShutdown() {
	if !p.w.cur.inSim {
		p.w.porCall()
	}
	p.w.touch(objKey{kind: objSignal, id: p.idx}, false)
	if p.sigInstalled {
		return
	}
	a, _ := p.enter(trace.OpSigaction, 0)
	p.w.touch(objKey{kind: objSignal, id: p.idx}, true)
	p.sigInstalled = true
	e := p.call(a, trace.OpSigaction)
	e.Kind = trace.EvSignal
	p.done(e)
}
