package storetest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Proc is the real runtime (lease.NewOSProcOptions: real clocks, files,
// goroutines and log lines) with a made-up pid, for running an elector
// inside a test: Stop ends only this Proc's activities, as SIGKILL would
// end a process, so that a test can run several and end them. It records
// every Lead call (each term's epoch and local deadline) and has no
// Notifier: over a server store, watchers poll.
type Proc struct {
	lease.Proc
	log *SyncBuffer

	done     chan struct{}
	stopOnce sync.Once
	term     chan struct{}
	termOnce sync.Once

	mu    sync.Mutex
	leads []Lead
}

// Lead is one call of Proc.Lead: a leadership term's epoch and its local
// deadline on the Proc's monotonic clock, and when the call was made.
type Lead struct {
	Epoch    int64
	Deadline time.Duration
	At       time.Duration
}

// NewProc returns a test Proc with holder id pid.
func NewProc(pid int) *Proc {
	log := &SyncBuffer{}
	return &Proc{
		Proc: lease.NewOSProcOptions(lease.OSProcOptions{Out: log, Err: log, ID: pid}),
		log:  log,
		done: make(chan struct{}),
		term: make(chan struct{}),
	}
}

// Stop ends the Proc's activities at their next wait, leaving the store as
// it is (SIGKILL, as far as one test binary can).
func (p *Proc) Stop() { p.stopOnce.Do(func() { close(p.done) }) }

// Terminate delivers a SIGTERM to the Proc's AwaitShutdown.
func (p *Proc) Terminate() { p.termOnce.Do(func() { close(p.term) }) }

// Logs returns the Proc's log lines so far.
func (p *Proc) Logs() string { return p.log.String() }

// Leads returns the Lead calls so far.
func (p *Proc) Leads() []Lead {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Lead(nil), p.leads...)
}

// Lead records the term's deadline.
func (p *Proc) Lead(epoch int64, deadline time.Duration) {
	p.mu.Lock()
	p.leads = append(p.leads, Lead{Epoch: epoch, Deadline: deadline, At: p.Mono()})
	p.mu.Unlock()
}

func (p *Proc) wait(c <-chan time.Time) {
	select {
	case <-c:
	case <-p.done:
		runtime.Goexit()
	}
}

// Sleep sleeps for d, or ends the activity if the Proc is stopped.
func (p *Proc) Sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	p.wait(t.C)
}

// NewTicker returns a ticker whose Wait ends the activity if the Proc is
// stopped.
func (p *Proc) NewTicker(d time.Duration) lease.Ticker { return ticker{time.NewTicker(d), p} }

type ticker struct {
	t *time.Ticker
	p *Proc
}

func (t ticker) Wait() { t.p.wait(t.t.C) }
func (t ticker) Stop() { t.t.Stop() }

// NewHandoff returns an unbuffered channel whose ends end the activity if
// the Proc is stopped.
func (p *Proc) NewHandoff() lease.Handoff { return handoff{make(chan struct{}), p} }

type handoff struct {
	ch chan struct{}
	p  *Proc
}

func (h handoff) Send() {
	select {
	case h.ch <- struct{}{}:
	case <-h.p.done:
		runtime.Goexit()
	}
}

func (h handoff) Recv() {
	select {
	case <-h.ch:
	case <-h.p.done:
		runtime.Goexit()
	}
}

// AwaitShutdown waits for Terminate (no signal handler is installed).
func (p *Proc) AwaitShutdown() {
	select {
	case <-p.term:
	case <-p.done:
		runtime.Goexit()
	}
}

// Exit ends the Proc's activities; it does not exit the test binary.
func (p *Proc) Exit(int) {
	p.Stop()
	runtime.Goexit()
}

// SyncBuffer is a buffer that one goroutine may write while another reads
// it: a process's output, as exec's copying goroutine writes it and a test
// polls it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ServerLoss is the failure test: a real lease.Reference leads over Store;
// then Kill takes the server away (SIGKILL, or SIGSTOP for a hung server)
// while it holds the lease. The leader must stop acting at its local
// deadline (Term.Valid false from then on, its context cancelled) and
// step down (OnStoppedLeading) no later than the deadline plus one
// operation timeout; no process may lead while the server is gone; and the
// store must have reported its errors.
type ServerLoss struct {
	// Store is the leader's store, on the server Kill takes away.
	Store lease.Store
	// Config is the elector's (lease 1 s, renew 200 ms, watch 200 ms if
	// zero).
	Config lease.Config
	// Kill takes the server away.
	Kill func()
	// OpTimeout is the store's per-operation timeout: a call under way at
	// the deadline may delay the step-down by that much.
	OpTimeout time.Duration
	// Errors returns the errors the store has reported so far (its OnError
	// hook); nil: not checked.
	Errors func() []error
}

// slack is what a loaded machine may add to the instant of a step it
// takes (a goroutine waiting for a core): the bounds on when something
// happened allow it, the bounds on what may never happen (an action with
// an invalid term, a step-down before the deadline) do not.
const slack = 250 * time.Millisecond

// Measured is what ServerLoss saw, on the leader's monotonic clock.
type Measured struct {
	Started     time.Duration // OnStartedLeading
	Renewals    int           // successful renewals before the kill
	Killed      time.Duration // Kill returned
	LastWrite   time.Duration // the last successful write started (deadline - renew deadline)
	Deadline    time.Duration // the local deadline then in effect
	LastAct     time.Duration // the workload's last action with a valid term
	CtxDone     time.Duration // the term's context was cancelled
	Stopped     time.Duration // OnStoppedLeading
	StoreErrors int           // errors the store reported
	FirstError  string
}

// Run runs the failure test and returns its measurements, failing t if
// the leader acted or led past its deadline.
func (l ServerLoss) Run(t *testing.T) Measured {
	t.Helper()
	cfg := l.Config
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration, cfg.RenewInterval, cfg.WatchInterval = time.Second, 200*time.Millisecond, 200*time.Millisecond
	}
	p := NewProc(4242)
	defer p.Stop()
	var (
		mu                 sync.Mutex
		m                  Measured
		started, stopped   = make(chan struct{}, 8), make(chan struct{}, 8)
		startedN, stoppedN int
	)
	cfg.Callbacks.OnStartedLeading = func(ctx context.Context) {
		term, ok := lease.TermOf(ctx)
		if !ok {
			t.Errorf("OnStartedLeading's context carries no term")
			return
		}
		mu.Lock()
		startedN++
		m.Started = p.Mono()
		mu.Unlock()
		started <- struct{}{}
		// The workload: act every 2 ms while the term is valid, as a
		// leader should, until leadership ends.
		p.Go("work", func() {
			for {
				select {
				case <-ctx.Done():
					mu.Lock()
					m.CtxDone = p.Mono()
					mu.Unlock()
					return
				default:
				}
				// The instant is read before the check: a preemption
				// between the two must not date the action late.
				if at := p.Mono(); term.Valid() {
					mu.Lock()
					m.LastAct = at
					mu.Unlock()
				}
				p.Sleep(2 * time.Millisecond)
			}
		})
	}
	cfg.Callbacks.OnStoppedLeading = func() {
		mu.Lock()
		stoppedN++
		m.Stopped = p.Mono()
		mu.Unlock()
		stopped <- struct{}{}
	}
	r, err := lease.NewReference(p, l.Store, "/nonexistent/leaselab.lease", cfg)
	if err != nil {
		t.Fatalf("NewReference: %v", err)
	}
	go r.Run()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatalf("not leading within 5 s; log:\n%s", p.Logs())
	}
	// Lead through a few renewals first.
	for len(p.Leads()) < 4 {
		select {
		case <-stopped:
			t.Fatalf("stepped down before the server was killed; log:\n%s", p.Logs())
		case <-time.After(10 * time.Millisecond):
		}
	}
	before := 0
	if l.Errors != nil {
		before = len(l.Errors())
	}
	l.Kill()
	m.Killed = p.Mono()
	bound := cfg.RenewDeadlineInEffect() + l.OpTimeout + 500*time.Millisecond
	select {
	case <-stopped:
	case <-time.After(bound):
		t.Fatalf("still leading %v after the kill; log:\n%s", bound, p.Logs())
	}
	// Nobody leads while the server is gone: watch for a while.
	time.Sleep(cfg.LeaseDuration / 2)
	p.Stop()
	// A release the server never answered did not happen, and says so: an
	// error of unknown outcome, not success and not a conflict, so that
	// the reference releases again (a probe's mutant, 2026-12-07: a
	// release whose error was reported and then returned as nil; the
	// leader logged a release that never happened, and tried no other).
	if err := l.Store.Release(lease.Record{Holder: 4242, Epoch: 1, Version: 1}); err == nil || errors.Is(err, lease.ErrConflict) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Release with the server gone = %v; want an error of unknown outcome", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The term's last deadline: set by the last successful write, which
	// may have returned just after Kill did (its reply already sent).
	leads := p.Leads()
	last := leads[len(leads)-1]
	m.Renewals = len(leads) - 1
	m.Deadline = last.Deadline
	m.LastWrite = last.Deadline - cfg.RenewDeadlineInEffect()
	if m.LastWrite >= m.Killed {
		t.Errorf("a write that started %v after the server was killed succeeded", m.LastWrite-m.Killed)
	}
	if l.Errors != nil {
		errs := l.Errors()
		m.StoreErrors = len(errs) - before
		if m.StoreErrors == 0 {
			t.Errorf("the store reported no error after its server was killed")
		} else {
			m.FirstError = errs[before].Error()
		}
	}
	switch {
	case startedN != 1 || stoppedN != 1:
		t.Errorf("started leading %d times, stopped %d times; want once each", startedN, stoppedN)
	case m.LastAct >= m.Deadline:
		t.Errorf("acted at %v, at or after the local deadline %v", m.LastAct, m.Deadline)
	case m.Stopped < m.Deadline:
		// Nothing but the deadline can end this term: the server is dead,
		// so no renewal can find a conflict.
		t.Errorf("stepped down at %v, before the deadline %v, with the server dead", m.Stopped, m.Deadline)
	case m.Stopped > m.Deadline+l.OpTimeout+slack:
		t.Errorf("stepped down at %v, %v after the deadline %v (operation timeout %v)", m.Stopped, m.Stopped-m.Deadline, m.Deadline, l.OpTimeout)
	case m.CtxDone == 0 || m.CtxDone < m.Stopped-slack:
		t.Errorf("the term's context was cancelled at %v; stepped down at %v", m.CtxDone, m.Stopped)
	}
	if t.Failed() {
		t.Logf("log:\n%s", p.Logs())
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	t.Logf("leader: %d renewals; killed %s after its last write started; local deadline %s after the kill; "+
		"last action %s before the deadline; stepped down %s after the deadline (context cancelled %s after); %d store errors, first: %s",
		m.Renewals, ms(m.Killed-m.LastWrite), ms(m.Deadline-m.Killed), ms(m.Deadline-m.LastAct),
		ms(m.Stopped-m.Deadline), ms(m.CtxDone-m.Stopped), m.StoreErrors, firstLine(m.FirstError))
	return m
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ErrorLog collects the errors a store reports through its OnError hook,
// for ServerLoss.Errors: pass Add as the store's OnError and Errors as
// ServerLoss.Errors. Safe for concurrent use.
type ErrorLog struct {
	mu   sync.Mutex
	errs []error
}

// Add records err (op is the store method; unused).
func (l *ErrorLog) Add(_ string, err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

// Errors returns the errors recorded so far.
func (l *ErrorLog) Errors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}
