package lease

import (
	"context"
	"sync"
)

// The seed program's log lines (the post's), which the other algorithms
// reuse where they say the same thing. Arguments a and b are process ids
// or whole Unix seconds, as each line's comment says.
const (
	MsgStarted         Msg = seedBase + iota // (stderr, println) Process started with id:  a
	MsgAcquired                              // [LEADER] Acquired lease at a, valid until b
	MsgWatchUnreadable                       // [WATCHER] Could not read lease file, will retry
	MsgExpired                               // [WATCHER] Lease held by a expired at b, attempting takeover
	MsgRemoveFailed                          // [WATCHER] Failed to remove expired lease, will retry
	MsgLostRace                              // [WATCHER] Lost takeover race, another process acquired first
	MsgWriteFailed                           // [WATCHER] Failed to write new lease, will retry
	MsgTakeover                              // [WATCHER] Takeover successful, now leader until a
	MsgHeld                                  // [WATCHER] Lease held by a, valid until b
	MsgStepDown                              // [LEADER] Lease file unreadable, stepping down
	MsgRenewUnreadable                       // [LEADER] Could not read lease file, will retry
	MsgTaken                                 // [LEADER] Lease taken by a, stepping down to watcher
	MsgRenewFailed                           // [LEADER] Failed to renew lease, will retry
	MsgRenewed                               // [LEADER] Lease renewed, valid until a
	MsgShutdown                              // Received shutdown signal, releasing lease
	MsgReleased                              // Lease released
	seedEnd
)

var seedMsgs = [...]msgText{
	MsgStarted - seedBase:         {text: "Process started with id:  %", a: argPID, stderr: true},
	MsgAcquired - seedBase:        {text: "[LEADER] Acquired lease at %, valid until %", a: argTime, b: argTime},
	MsgWatchUnreadable - seedBase: {text: "[WATCHER] Could not read lease file, will retry"},
	MsgExpired - seedBase:         {text: "[WATCHER] Lease held by % expired at %, attempting takeover", a: argPID, b: argTime},
	MsgRemoveFailed - seedBase:    {text: "[WATCHER] Failed to remove expired lease, will retry"},
	MsgLostRace - seedBase:        {text: "[WATCHER] Lost takeover race, another process acquired first"},
	MsgWriteFailed - seedBase:     {text: "[WATCHER] Failed to write new lease, will retry"},
	MsgTakeover - seedBase:        {text: "[WATCHER] Takeover successful, now leader until %", a: argTime},
	MsgHeld - seedBase:            {text: "[WATCHER] Lease held by %, valid until %", a: argPID, b: argTime},
	MsgStepDown - seedBase:        {text: "[LEADER] Lease file unreadable, stepping down"},
	MsgRenewUnreadable - seedBase: {text: "[LEADER] Could not read lease file, will retry"},
	MsgTaken - seedBase:           {text: "[LEADER] Lease taken by %, stepping down to watcher", a: argPID},
	MsgRenewFailed - seedBase:     {text: "[LEADER] Failed to renew lease, will retry"},
	MsgRenewed - seedBase:         {text: "[LEADER] Lease renewed, valid until %", a: argTime},
	MsgShutdown - seedBase:        {text: "Received shutdown signal, releasing lease"},
	MsgReleased - seedBase:        {text: "Lease released"},
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

// SeedProgram runs the post's program over a Store: acquire at start, then a
// renewal routine while leading or a watcher routine while not, and a
// signal handler that releases the lease on SIGTERM. Its structure is the
// program's, activity by activity: the routines hand the role back to the
// main activity over an unbuffered channel, and the signal handler runs
// concurrently with them, so a SIGTERM can land in the middle of a renewal.
type SeedProgram struct {
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

// NewSeedProgram returns an elector for process p over store s.
func NewSeedProgram(p Proc, s Store, cfg Config) (*SeedProgram, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &SeedProgram{p: p, s: s, cfg: cfg, pid: int64(p.PID()), swap: p.NewHandoff()}, nil
}

// Run is the program's main. It returns only through p.Exit.
func (e *SeedProgram) Run() {
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

func (e *SeedProgram) setRole(leading bool) {
	e.mu.Lock()
	e.role = progWatcher
	if leading {
		e.role = progRenewal
	}
	e.mu.Unlock()
}

func (e *SeedProgram) start(leading bool) {
	if leading {
		e.p.Go("renew", e.renewLoop)
	} else {
		e.p.Go("watch", e.watchLoop)
	}
}

// acquire is tryAcquireLease.
func (e *SeedProgram) acquire() error {
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

func (e *SeedProgram) lead(rec Record) {
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

func (e *SeedProgram) stepDown() {
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

func (e *SeedProgram) observe(holder int64) {
	if holder == e.observed {
		return
	}
	e.observed = holder
	if f := e.cfg.Callbacks.OnNewLeader; f != nil {
		f(holder)
	}
}

// watchLoop is watcherRoutine.
func (e *SeedProgram) watchLoop() {
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
func (e *SeedProgram) renewLoop() {
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
func (e *SeedProgram) handleShutdown() {
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
