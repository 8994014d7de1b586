package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// ProcSpec is one process of a run.
type ProcSpec struct {
	PID      int
	Start    time.Duration // true time at which the process starts
	Skew     time.Duration // its wall clock's offset from the machine's
	DriftPPM int64         // its clocks' rate error, parts per million
}

// File is a file that exists before the run starts.
type File struct {
	Path string
	Data string
}

// Config determines a run completely, together with Seed.
type Config struct {
	Variant  string
	Lease    lease.Config
	Procs    []ProcSpec
	LockPath string
	// Horizon is the true time at which the run stops.
	Horizon time.Duration
	// Seed drives every random choice the run makes: system-call latency,
	// timer lateness and, unless Scheduler is set, the order of steps
	// ready at the same instant.
	Seed uint64
	// WallBase is the machine's wall-clock time at true time 0.
	WallBase time.Time
	Faults   []Fault
	Files    []File
	// SyscallMin and SyscallMax bound a system call's latency: after a
	// call takes effect its caller resumes a uniform draw later.
	SyscallMin, SyscallMax time.Duration
	// TimerLateMax bounds how late a timer fires.
	TimerLateMax time.Duration
	// Scheduler orders steps ready at the same instant (default: Random
	// from Seed, or Chooser when that is set).
	Scheduler Scheduler
	// Chooser, if set, makes every random choice instead of Seed.
	Chooser Chooser
	// Explore, if set, makes the run one branch of a systematic search.
	Explore *Explore
}

// Defaults used by Normalize.
const (
	DefaultLockPath = "/tmp/leader.lock"
	DefaultHorizon  = 60 * time.Second
)

// DefaultWallBase is the wall-clock time at true time 0 unless set: the
// instant the post's kill-leader experiment started (21:14:38).
var DefaultWallBase = time.Date(2025, 10, 14, 21, 14, 38, 0, time.UTC)

// Normalize fills in defaults and validates the config.
func (c *Config) Normalize() error {
	if c.Variant == "" {
		c.Variant = "seed"
	}
	if _, err := lease.LookupVariant(c.Variant); err != nil {
		return err
	}
	if c.Lease.LeaseDuration == 0 && c.Lease.RenewInterval == 0 && c.Lease.WatchInterval == 0 {
		cb := c.Lease.Callbacks
		c.Lease = lease.DefaultConfig()
		c.Lease.Callbacks = cb
	}
	v, _ := lease.LookupVariant(c.Variant)
	if err := v.CheckConfig(c.Lease); err != nil {
		return err
	}
	if len(c.Procs) == 0 {
		return errors.New("a run needs at least one process")
	}
	// PIDs are distinct among the processes that can run at once: after a
	// power loss, the machine's restart may give a program its old PID.
	var power []time.Duration
	for _, f := range c.Faults {
		if f.Kind == trace.Power {
			power = append(power, f.At)
		}
	}
	boot := func(start time.Duration) int {
		n := 0
		for _, at := range power {
			if at < start {
				n++
			}
		}
		return n
	}
	type bootPID struct{ boot, pid int }
	pids := map[bootPID]bool{}
	for _, p := range c.Procs {
		k := bootPID{boot(p.Start), p.PID}
		if p.PID <= 0 || pids[k] {
			return fmt.Errorf("process ids must be positive and distinct (got %d)", p.PID)
		}
		pids[k] = true
		if p.Start < 0 {
			return fmt.Errorf("process %d starts at negative time %v", p.PID, p.Start)
		}
		if p.DriftPPM <= -1e6 {
			return fmt.Errorf("process %d: drift %d ppm would stop its clock", p.PID, p.DriftPPM)
		}
	}
	if c.LockPath == "" {
		c.LockPath = DefaultLockPath
	}
	if !strings.HasPrefix(c.LockPath, "/") {
		return fmt.Errorf("lock path %q must be absolute", c.LockPath)
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.WallBase.IsZero() {
		c.WallBase = DefaultWallBase
	}
	if c.SyscallMax < c.SyscallMin || c.SyscallMin < 0 || c.TimerLateMax < 0 {
		return fmt.Errorf("latency bounds out of order: syscall %v..%v, timer late %v", c.SyscallMin, c.SyscallMax, c.TimerLateMax)
	}
	for _, f := range c.Faults {
		if err := f.validate(len(c.Procs)); err != nil {
			return err
		}
	}
	return nil
}

// World is one simulated run in progress.
type World struct {
	boots    int           // power losses so far: the machine's boot number (BootID)
	servers  []namedServer // lease servers (Dialer), in order of first use
	cfg      Config
	variant  lease.Variant
	choose   Chooser
	sched    Scheduler
	fs       *FileSystem
	procs    []*proc
	queue    actHeap
	now      int64
	seq      uint64
	cur      *activity
	base     int64 // WallBase in Unix ns
	steps    []wallStep
	faults   []Fault // timed faults not yet fired, ordered by At
	reap     []*activity
	cands    []Candidate
	candAct  []*activity
	tr       *trace.Trace
	setup    *setup // tr.Run.Setup
	syscalls int
	// limit, when positive, stops the run after that many system calls
	// (for the benchmark, whose unit is one system call).
	limit int
	// noFastPath sends every step through the scheduler (for the test that
	// the fast path changes nothing).
	noFastPath bool
	// fenceMax is the highest epoch the fenced resource has accepted.
	fenceMax int64
	// watchers are activities waiting for a change notification.
	watchers []watcher
	// ex is the run's use of its Explore budgets.
	ex exploreState
	// changes counts the changes to each directory, for notifications (a
	// slice: a run has one or two directories).
	changes []dirChanges
	// lockWaiters are activities waiting in flock for an inode's lock, in
	// the order they began to wait.
	lockWaiters []lockWaiter
}

// lockWaiter is an activity waiting in a blocking flock.
type lockWaiter struct {
	a   *activity
	ino *inode
}

// unlocked wakes every activity waiting for ino's flock lock, a
// system-call latency from now, all at the same instant: each retries, and
// the scheduler's choice among same-instant steps decides which one takes
// the lock (the others wait again). A waiter whose process is paused is
// woken too, and retries when it is continued.
func (w *World) unlocked(ino *inode) {
	at := int64(-1)
	kept := w.lockWaiters[:0]
	for _, x := range w.lockWaiters {
		if x.ino != ino {
			kept = append(kept, x)
			continue
		}
		if at < 0 {
			at = w.now + w.latency()
		}
		w.wake(x.a, at)
	}
	clear(w.lockWaiters[len(kept):])
	w.lockWaiters = kept
}

type dirChanges struct {
	dir string
	n   uint64
}

func (w *World) changesOf(dir string) uint64 {
	for _, c := range w.changes {
		if c.dir == dir {
			return c.n
		}
	}
	return 0
}

// watcher is an activity in WaitChange.
type watcher struct {
	a   *activity
	dir string
}

func (w *World) unwatch(a *activity) {
	for i, x := range w.watchers {
		if x.a == a {
			w.watchers = append(w.watchers[:i], w.watchers[i+1:]...)
			return
		}
	}
}

// notify delivers a change to path's directory to every activity waiting
// for one: it wakes a system-call latency from now, unless it would wake
// sooner anyway.
func (w *World) notify(path string) {
	dir := dirOf(path)
	found := false
	for i := range w.changes {
		if w.changes[i].dir == dir {
			w.changes[i].n++
			found = true
		}
	}
	if !found {
		w.changes = append(w.changes, dirChanges{dir, 1})
	}
	if len(w.watchers) == 0 {
		return
	}
	at := w.now + w.latency()
	for _, x := range w.watchers {
		a := x.a
		if x.dir != dir || a.changed || a.p.dead {
			continue
		}
		a.changed = true
		if a.ready <= at {
			continue
		}
		a.ready = at
		if a.hidx >= 0 {
			w.queue.remove(a)
			a.seq = w.seq
			w.seq++
			w.queue.push(a)
		}
	}
}

// Run runs cfg to its horizon and returns the trace.
func Run(cfg Config) (*trace.Trace, error) {
	w, err := New(cfg)
	if err != nil {
		return nil, err
	}
	w.Run()
	return w.tr, nil
}

// New prepares a run.
func New(cfg Config) (*World, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	v, _ := lease.LookupVariant(cfg.Variant)
	w := &World{
		cfg:     cfg,
		variant: v,
		choose:  cfg.Chooser,
		sched:   cfg.Scheduler,
		fs:      NewFileSystem(),
		base:    cfg.WallBase.UnixNano(),
		tr:      trace.New(),
	}
	if cfg.Explore != nil {
		w.noFastPath = true
		w.sched = delayBounded{w}
	}
	switch {
	case w.choose == nil:
		w.choose = NewPCG(cfg.Seed, 0x1ea5e1ab)
		if w.sched == nil {
			w.sched = NewRandom(cfg.Seed)
		}
	case w.sched == nil:
		w.sched = chooserScheduler{w.choose}
	}
	w.fs.unlocked = w.unlocked
	w.fs.MkdirAll(dirOf(cfg.LockPath))
	for _, f := range cfg.Files {
		w.fs.MkdirAll(dirOf(f.Path))
		if err := w.fs.Place(f.Path, []byte(f.Data), 0o644); err != nil {
			return nil, fmt.Errorf("setup file %s: %w", f.Path, err)
		}
	}
	w.tr.Base = cfg.WallBase
	w.setup = &setup{cfg: cfg}
	w.tr.Run = trace.Run{Variant: cfg.Variant, Lease: cfg.Lease, LockPath: cfg.LockPath, Server: v.Claims.Handover == lease.ServerExpiry, Setup: w.setup}
	for i, ps := range cfg.Procs {
		p := &proc{w: w, idx: i, pid: ps.PID, fds: w.fs.NewFDTable(), clock: newProcClock(ps.DriftPPM, int64(ps.Skew))}
		w.procs = append(w.procs, p)
		w.tr.Procs = append(w.tr.Procs, trace.ProcInfo{PID: ps.PID, Start: ps.Start})
		w.tr.Acts = append(w.tr.Acts, nil)
	}
	if len(cfg.Faults) > 0 {
		w.setup.fates = make([]uint8, len(cfg.Faults))
	}
	for i, f := range cfg.Faults {
		f.idx = i + 1
		if f.After != "" || f.Kind == trace.FSError {
			p := w.procs[f.Proc]
			p.triggers = append(p.triggers, trigger{f: f})
			continue
		}
		w.faults = append(w.faults, f)
	}
	sort.SliceStable(w.faults, func(i, j int) bool { return w.faults[i].At < w.faults[j].At })
	for _, f := range w.faults {
		if f.Kind == trace.Power {
			w.fs.TrackDurability() // everything placed before the run is durable
			break
		}
	}
	for i, p := range w.procs {
		p.spawn("main", int64(cfg.Procs[i].Start), p.main)
	}
	return w, nil
}

func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// Run runs the world to its horizon.
func (w *World) Run() {
	horizon := int64(w.cfg.Horizon)
	for {
		next := w.queue.peek()
		if len(w.faults) > 0 && int64(w.faults[0].At) <= horizon && (next == nil || int64(w.faults[0].At) <= next.ready) {
			f := w.faults[0]
			w.faults = w.faults[1:]
			w.now = max(w.now, int64(f.At))
			w.fire(f, nil)
			continue
		}
		if next == nil || next.ready > horizon || w.limit > 0 && w.syscalls >= w.limit {
			break
		}
		a := w.pick()
		if a.p.stopped {
			a.p.parked = append(a.p.parked, a)
			continue
		}
		w.now = a.ready
		if w.cfg.Explore != nil {
			if !w.exploreStep(a) {
				continue
			}
			w.ex.last = a
		}
		w.step(a)
	}
	w.now = max(w.now, horizon)
	w.tr.End = time.Duration(w.now)
	// Unwind every activity still suspended and return its worker.
	for _, p := range w.procs {
		for _, a := range p.acts {
			if a.state != actDone {
				a.killed = true
				w.finish(a)
			}
		}
	}
	w.tr.Files = w.fs.Files()
}

// runsNext reports whether activity a, ready at true time ready, is
// certainly the next step the run loop would take: strictly before every
// queued step and every pending fault, within the horizon, and its process
// running.
func (w *World) runsNext(a *activity, ready int64) bool {
	if w.noFastPath || a.p.stopped || ready > int64(w.cfg.Horizon) || w.limit > 0 && w.syscalls >= w.limit {
		return false
	}
	if next := w.queue.peek(); next != nil && next.ready <= ready {
		return false
	}
	return len(w.faults) == 0 || int64(w.faults[0].At) > ready
}

// pick pops the next activity to step: the earliest ready one, or the
// scheduler's choice among those ready at the same instant.
func (w *World) pick() *activity {
	a := w.queue.pop()
	if next := w.queue.peek(); next == nil || next.ready != a.ready {
		return a
	}
	w.candAct = append(w.candAct[:0], a)
	for next := w.queue.peek(); next != nil && next.ready == a.ready; next = w.queue.peek() {
		w.candAct = append(w.candAct, w.queue.pop())
	}
	sort.Slice(w.candAct, func(i, j int) bool {
		x, y := w.candAct[i], w.candAct[j]
		return x.p.idx < y.p.idx || x.p.idx == y.p.idx && x.id < y.id
	})
	w.cands = w.cands[:0]
	for _, c := range w.candAct {
		w.cands = append(w.cands, Candidate{Proc: c.p.idx, Act: c.id})
	}
	k := w.sched.Pick(w.cands)
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
	w.cur = a
	a.state = actRunning
	alive := a.wk.resume()
	w.cur = nil
	if !alive {
		a.state = actDone
		putWorker(a.wk)
		a.wk = nil
	}
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
		putWorker(wk) // its body never ran: nothing to unwind
		return
	}
	prev := w.cur
	w.cur = a
	if wk.resume() {
		panic("sim: a killed activity kept running")
	}
	w.cur = prev
	putWorker(wk)
}

// fire applies a fault now. at is the activity that triggered it, if any.
func (w *World) fire(f Fault, by *proc) {
	var p *proc
	switch {
	case f.Kind == trace.Jump || f.Kind == trace.Power:
	case f.Proc == Leader:
		for _, q := range w.procs {
			if !q.dead && q.role == lease.RoleLeader {
				p = q
				break
			}
		}
		if p == nil {
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
	ev := trace.Fault(-1, f.Kind, f.Dur, f.Delta, false, w.tr.Str(f.String()))
	if p != nil {
		ev.Proc = int16(p.idx)
		ev.Text = w.tr.Str(fmt.Sprintf("%s (pid %d)", f, p.pid))
	}
	w.record(ev)
	switch f.Kind {
	case trace.Kill:
		w.kill(p, -9)
	case trace.Term:
		p.signal()
	case trace.Stop:
		p.stopped = true
		w.faults = insertFault(w.faults, Fault{Kind: trace.Cont, At: time.Duration(w.now) + f.Dur, Proc: p.idx})
	case trace.Cont:
		p.cont()
	case trace.Skew:
		p.clock.skew += int64(f.Delta)
	case trace.Drift:
		p.clock.setRate(w.now, f.PPM)
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
		w.boots++
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
func (w *World) kill(p *proc, code int64) {
	if p.dead {
		return
	}
	p.dead = true
	p.role = lease.RoleStarting
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
	w.record(trace.Event{Proc: int16(p.idx), Kind: trace.EvExit, N: code})
}

func (w *World) record(e trace.Event) {
	e.T = w.now
	w.tr.Events = append(w.tr.Events, e)
}

// String prints the config as the flags that reproduce it.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "variant=%s seed=%d lease=%v renew=%v watch=%v horizon=%v", c.Variant, c.Seed,
		c.Lease.LeaseDuration, c.Lease.RenewInterval, c.Lease.WatchInterval, c.Horizon)
	for _, p := range c.Procs {
		fmt.Fprintf(&b, " proc=%d@%v", p.PID, p.Start)
		if p.Skew != 0 {
			fmt.Fprintf(&b, ",skew=%v", p.Skew)
		}
		if p.DriftPPM != 0 {
			fmt.Fprintf(&b, ",drift=%dppm", p.DriftPPM)
		}
	}
	for _, f := range c.Faults {
		fmt.Fprintf(&b, " fault=[%s]", f)
	}
	return b.String()
}

// latency draws a system call's latency.
func (w *World) latency() int64 {
	lo, hi := int64(w.cfg.SyscallMin), int64(w.cfg.SyscallMax)
	if hi <= lo {
		return lo
	}
	return lo + int64(w.choose.Choose(int(hi-lo+1)))
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

// actHeap is a min-heap of activities by (ready, seq).
type actHeap []*activity

func (h actHeap) less(i, j int) bool {
	return h[i].ready < h[j].ready || h[i].ready == h[j].ready && h[i].seq < h[j].seq
}

func (h actHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = i, j
}

func (h *actHeap) push(a *activity) {
	a.hidx = len(*h)
	*h = append(*h, a)
	h.up(a.hidx)
}

func (h actHeap) peek() *activity {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h *actHeap) pop() *activity {
	a := (*h)[0]
	h.removeAt(0)
	return a
}

func (h *actHeap) remove(a *activity) {
	if a.hidx >= 0 && a.hidx < len(*h) && (*h)[a.hidx] == a {
		h.removeAt(a.hidx)
	}
}

func (h *actHeap) removeAt(i int) {
	old := *h
	n := len(old) - 1
	a := old[i]
	if i != n {
		old.swap(i, n)
	}
	*h = old[:n]
	a.hidx = -1
	if i != n {
		h.down(i)
		h.up(i)
	}
}

func (h actHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h actHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
