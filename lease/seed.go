package lease

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Config holds the post's three intervals and the callbacks.
type Config struct {
	// LeaseDuration is how long a lease stays valid after it is written
	// (the post's LEASE_DURATION, 9 s).
	LeaseDuration time.Duration
	// RenewInterval is how often the leader rewrites the expiry
	// (RENEW_INTERVAL, 3 s). It must be shorter than LeaseDuration.
	RenewInterval time.Duration
	// WatchInterval is how often a watcher reads the lease (WATCH_INTERVAL,
	// 3 s).
	WatchInterval time.Duration
	// RenewDeadline is how long after it starts a successful renewal (or
	// acquisition) a leader may still act; it steps down at this local
	// deadline unless it renews first. Only variants with a local deadline
	// (the reference) use it. 0: derived from LeaseDuration and
	// MaxDriftPPM (see DeadlineFor).
	RenewDeadline time.Duration
	// MaxDriftPPM is the drift bound the algorithm is configured for:
	// how far, in parts per million, two processes' monotonic clocks may
	// disagree on the length of an interval. 0 means the reference's
	// default of 1% (10000 ppm).
	MaxDriftPPM int64
	// Poll makes the reference's watchers poll the store every
	// WatchInterval even when the process can be told of changes to the
	// lock's directory: for stores that are not files there (Redis, etcd,
	// SQL), whose changes no directory notification reports.
	Poll bool
	// Callbacks are told of leadership changes.
	Callbacks Callbacks
}

// DefaultDriftPPM is the drift bound the reference variant assumes unless
// told otherwise: 1%, a hundred times what NTP-disciplined or even free-
// running quartz clocks drift, and still a small margin on a 9 s lease.
const DefaultDriftPPM = 10_000

// deadlineSlack is subtracted from the longest safe deadline, so that a
// leader stops with time to spare for the system call that it stops after.
const deadlineSlack = 50 * time.Millisecond

// drift returns the drift bound in effect.
func (c Config) drift() int64 {
	if c.MaxDriftPPM == 0 {
		return DefaultDriftPPM
	}
	return c.MaxDriftPPM
}

// SafeDeadline is the longest renew deadline that keeps a leader's
// leadership strictly inside the lease as any watcher measures it: a
// watcher takes over LeaseDuration after it saw the leader's write, on a
// clock that may run up to the drift bound fast; the leader's deadline runs
// from before that write, on a clock that may run up to the drift bound
// slow. So deadline/(1-rho) < lease/(1+rho).
func (c Config) SafeDeadline() time.Duration {
	rho := c.drift()
	return time.Duration(int64(c.LeaseDuration) / (1_000_000 + rho) * (1_000_000 - rho))
}

// DeadlineFor returns the renew deadline in effect: RenewDeadline, or the
// safe deadline less a small slack.
func (c Config) DeadlineFor() time.Duration {
	if c.RenewDeadline != 0 {
		return c.RenewDeadline
	}
	return c.SafeDeadline() - deadlineSlack
}

// ValidateDeadline checks the inequalities a variant with a local deadline
// relies on, and names the one that fails.
func (c Config) ValidateDeadline() error {
	if err := c.Validate(); err != nil {
		return err
	}
	rho := c.drift()
	if rho < 0 || rho >= 1_000_000 {
		return fmt.Errorf("drift bound %d ppm must be at least 0 and below 1000000", rho)
	}
	d := c.DeadlineFor()
	switch {
	case d <= 0:
		return fmt.Errorf("drift bound %d ppm leaves no margin: lease %v x (1-rho)/(1+rho) = %v is not longer than the slack %v",
			rho, c.LeaseDuration, c.SafeDeadline(), deadlineSlack)
	case d >= c.SafeDeadline():
		return fmt.Errorf("renew deadline %v must be shorter than lease %v x (1-rho)/(1+rho) = %v for drift bound %d ppm, or a watcher may take over while the leader still acts",
			d, c.LeaseDuration, c.SafeDeadline(), rho)
	case c.RenewInterval >= d:
		return fmt.Errorf("renew interval %v must be shorter than the renew deadline %v, or the leader steps down before it renews", c.RenewInterval, d)
	}
	return nil
}

// Callbacks follow client-go's leaderelection. They are called from the
// elector's own activities and must not block: start work with [Proc.Go].
type Callbacks struct {
	// OnStartedLeading is called when this process becomes leader. ctx is
	// cancelled when leadership ends.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called when this process stops leading.
	OnStoppedLeading func()
	// OnNewLeader is called when the observed holder changes, this process
	// included.
	OnNewLeader func(holder int64)
	// OnError is called (by the reference algorithm) with every store error
	// that is none of the contract's outcomes (no record, a record exists,
	// a conflict): an I/O error, an unreachable, hung or refusing server.
	// op is the Store method. The algorithm goes on: it retries, and a
	// leader that cannot renew steps down at its local deadline. It must
	// not block.
	OnError func(op string, err error)
}

// DefaultConfig returns the post's intervals: a 9 s lease renewed every 3 s,
// watched every 3 s.
func DefaultConfig() Config {
	return Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	switch {
	case c.LeaseDuration <= 0 || c.RenewInterval <= 0 || c.WatchInterval <= 0:
		return fmt.Errorf("lease, renew and watch intervals must be positive (got lease %v, renew %v, watch %v)",
			c.LeaseDuration, c.RenewInterval, c.WatchInterval)
	case c.LeaseDuration <= c.RenewInterval:
		return fmt.Errorf("lease %v must be longer than the renew interval %v, or the lease lapses between renewals",
			c.LeaseDuration, c.RenewInterval)
	}
	return nil
}

// maxReadFailures is how many consecutive unreadable reads make the seed's
// leader step down.
const maxReadFailures = 3

// role values of the program's currentRole, which its signal handler reads.
const (
	progUnknown = iota
	progWatcher
	progRenewal
)

// Elector runs the post's program over a Store: acquire at start, then a
// renewal routine while leading or a watcher routine while not, and a
// signal handler that releases the lease on SIGTERM. Its structure is the
// program's, activity by activity: the routines hand the role back to the
// main activity over an unbuffered channel, and the signal handler runs
// concurrently with them, so a SIGTERM can land in the middle of a renewal.
type Elector struct {
	p    Proc
	s    Store
	cfg  Config
	pid  int64
	swap Handoff

	mu   sync.Mutex // guards role, held and cancel, as the program's mu does
	role int
	held Record // the last record this process wrote while leading

	cancel   context.CancelFunc
	observed int64
}

// NewElector returns an elector for process p over store s.
func NewElector(p Proc, s Store, cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Elector{p: p, s: s, cfg: cfg, pid: int64(p.PID()), swap: p.NewHandoff()}, nil
}

// Run is the program's main. It returns only through p.Exit.
func (e *Elector) Run() {
	p := e.p
	p.Log(MsgStarted, e.pid, 0)
	leading := e.acquire() == nil
	if !leading {
		e.p.Role(RoleWatcher)
	}
	e.setRole(leading)
	e.start(leading)
	p.Go("signal", e.handleShutdown)
	for {
		e.swap.Recv()
		e.mu.Lock()
		leading = e.role != progRenewal
		e.mu.Unlock()
		e.setRole(leading)
		e.start(leading)
	}
}

func (e *Elector) setRole(leading bool) {
	e.mu.Lock()
	e.role = progWatcher
	if leading {
		e.role = progRenewal
	}
	e.mu.Unlock()
}

func (e *Elector) start(leading bool) {
	if leading {
		e.p.Go("renew", e.renewLoop)
	} else {
		e.p.Go("watch", e.watchLoop)
	}
}

// acquire is tryAcquireLease.
func (e *Elector) acquire() error {
	rec, err := e.s.Create(e.pid, e.cfg.LeaseDuration)
	if err != nil {
		return err
	}
	e.lead(rec)
	// The program reads the clock twice more for its log line.
	at := e.p.Now().Unix()
	until := e.p.Now().Add(e.cfg.LeaseDuration).Unix()
	e.p.Log(MsgAcquired, at, until)
	return nil
}

func (e *Elector) lead(rec Record) {
	e.p.Role(RoleLeader)
	ctx, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.held, e.cancel = rec, cancel
	e.mu.Unlock()
	e.observe(e.pid)
	if f := e.cfg.Callbacks.OnStartedLeading; f != nil {
		f(ctx)
	}
}

func (e *Elector) stepDown() {
	e.p.Role(RoleWatcher)
	e.mu.Lock()
	cancel := e.cancel
	e.cancel = nil
	e.mu.Unlock()
	if cancel != nil {
		cancel()
		if f := e.cfg.Callbacks.OnStoppedLeading; f != nil {
			f()
		}
	}
}

func (e *Elector) observe(holder int64) {
	if holder == e.observed {
		return
	}
	e.observed = holder
	if f := e.cfg.Callbacks.OnNewLeader; f != nil {
		f(holder)
	}
}

// watchLoop is watcherRoutine.
func (e *Elector) watchLoop() {
	t := e.p.NewTicker(e.cfg.WatchInterval)
	defer t.Stop()
	for {
		t.Wait()
		rec, err := e.s.Read()
		if err != nil {
			// The program treats every read error, a missing file, an
			// empty one or an I/O error, as a chance to acquire; O_EXCL
			// keeps that safe while a valid lease exists. An empty file is
			// not a valid lease, but it defeats O_EXCL all the same.
			if e.acquire() == nil {
				e.swap.Send()
				return
			}
			e.p.Log(MsgWatchUnreadable, 0, 0)
			continue
		}
		e.observe(rec.Holder)
		// Whole seconds and a strict comparison: a lease that expires in
		// the second it is checked is still valid, so the effective lease
		// is up to one second longer than LeaseDuration. The wall clock is
		// the watcher's, the expiry the writer's: skew between them moves
		// the expiry, and a wall-clock step moves it for everyone.
		if rec.Until < e.p.Now().Unix() {
			e.p.Log(MsgExpired, rec.Holder, rec.Until)
			nrec, err := e.s.Takeover(rec, e.pid, e.cfg.LeaseDuration)
			if err != nil {
				switch FailedStep(err) {
				case "remove":
					e.p.Log(MsgRemoveFailed, 0, 0)
				case "create":
					e.p.Log(MsgLostRace, 0, 0)
				default:
					e.p.Log(MsgWriteFailed, 0, 0)
				}
				continue
			}
			e.lead(nrec)
			e.p.Log(MsgTakeover, nrec.Until, 0)
			e.swap.Send()
			return
		}
		e.p.Log(MsgHeld, rec.Holder, rec.Until)
	}
}

// renewLoop is renewalRoutine.
func (e *Elector) renewLoop() {
	failures := 0
	t := e.p.NewTicker(e.cfg.RenewInterval)
	defer t.Stop()
	for {
		t.Wait()
		rec, err := e.s.Read()
		if err != nil {
			failures++
			if failures >= maxReadFailures {
				e.stepDown()
				e.p.Log(MsgStepDown, 0, 0)
				e.swap.Send()
				return
			}
			e.p.Log(MsgRenewUnreadable, 0, 0)
			continue
		}
		failures = 0
		if rec.Holder != e.pid {
			e.stepDown()
			e.p.Log(MsgTaken, rec.Holder, 0)
			e.swap.Send()
			return
		}
		// The leader keeps leading whatever its clock says: it has no local
		// deadline, so a leader paused past its lease still believes it
		// leads when it wakes, and renews over whoever took over meanwhile.
		nrec, err := e.s.Renew(rec, e.cfg.LeaseDuration)
		if err != nil {
			e.p.Log(MsgRenewFailed, 0, 0)
			continue
		}
		e.mu.Lock()
		e.held = nrec
		e.mu.Unlock()
		e.p.Log(MsgRenewed, nrec.Until, 0)
	}
}

// handleShutdown is the program's signal handler goroutine.
func (e *Elector) handleShutdown() {
	e.p.AwaitShutdown()
	e.p.Log(MsgShutdown, 0, 0)
	e.mu.Lock()
	role, held := e.role, e.held
	e.mu.Unlock()
	// The program decides by its role variable, which the main activity
	// sets only after the routine that acquired has handed over: a SIGTERM
	// just after a takeover finds role "watcher" and leaves the fresh lease
	// to expire.
	if role == progRenewal {
		_ = e.s.Release(held) // the program ignores the error
		e.p.Log(MsgReleased, 0, 0)
	}
	e.p.Exit(0)
}
