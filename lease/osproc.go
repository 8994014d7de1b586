package lease

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// osProc is the real runtime: goroutines, timers, os/signal and the OS
// file system.
type osProc struct {
	OSFS
	start     time.Time     // for the log lines' elapsed times
	monoStart time.Duration // monoNow at the start: Mono's origin
	pid       int
	mu        sync.Mutex // guards shutdownCh
	// logOut and logErr write Log's lines to Out and Err: one queue
	// each, so that a stderr whose reader stopped reading holds up no
	// stdout line; one queue for both when they are one file or writer
	// (sameWriter), so that their lines stay in order.
	logOut, logErr *lineWriter
	exit           func(int)
	shutdownCh     chan os.Signal
	selfStopped    func() bool // OSProcOptions.SelfStopped
	// done, when set, makes Exit end only this Proc's goroutines (for
	// tests, where several Procs share one OS process): every blocking
	// call returns through runtime.Goexit once it is closed.
	done     chan struct{}
	doneOnce sync.Once
	note     inotify
	onLead   func(epoch int64, deadline time.Duration)
	crash    *crashPoint // OSProcOptions.CrashAfter (nil: none)
}

// NewOSProc returns the real runtime for this process. Log lines go to out
// (and the startup line to errw) in the post's format, prefixed with the
// seconds elapsed since NewOSProc, written in order by a goroutine of
// their own, so that a writer that blocks stalls nothing (LogFlusher).
func NewOSProc(out, errw io.Writer) Proc {
	return NewOSProcOptions(OSProcOptions{Out: out, Err: errw})
}

// OSProcOptions configure the real runtime.
type OSProcOptions struct {
	Out, Err io.Writer
	// ID is the holder id written in the lease (0: the process id).
	ID int
	// BeforeExit runs when the algorithm exits the process with code (to
	// stop a command it runs, say), and returns the status to exit with;
	// the log's queued lines are written after it, before the exit.
	BeforeExit func(code int) int
	// OnLead, when set, is told of every leadership term and renewal the
	// algorithm reports (Proc.Lead): the epoch and the local deadline, on
	// this Proc's Mono clock (a flock leader's never passes). leaselab run
	// hands it to the supervisor of its command, which stops the command
	// at that deadline even while this process is stopped.
	OnLead func(epoch int64, deadline time.Duration)
	// CrashAfter, if set, is a crash point, "KIND:N" (ParseCrashPoint):
	// the process SIGKILLs itself right after its Nth call of that kind.
	// It is for testing; an invalid one is ignored (check it first).
	CrashAfter string
	// SelfStopped, when set, reports whether the program is ending the
	// run itself (leaselab run: its command exited), not on a signal: a
	// shutdown's line (MsgShutdown) is then MsgStopping's, which names no
	// signal (a probe read "Received shutdown signal" of a run whose
	// command had exited).
	SelfStopped func() bool
}

// NewOSProcOptions returns the real runtime configured by o.
func NewOSProcOptions(o OSProcOptions) Proc {
	id := o.ID
	if id == 0 {
		id = os.Getpid()
	}
	p := &osProc{start: time.Now(), monoStart: monoNow(), pid: id, onLead: o.OnLead, selfStopped: o.SelfStopped}
	p.logOut = &lineWriter{w: o.Out}
	p.logErr = p.logOut
	if !sameWriter(o.Out, o.Err) {
		p.logErr = &lineWriter{w: o.Err}
	}
	p.exit = func(code int) {
		if o.BeforeExit != nil {
			code = o.BeforeExit(code)
		}
		p.flushLog(logFlushWait)
		os.Exit(code)
	}
	if kind, n, err := ParseCrashPoint(o.CrashAfter); o.CrashAfter != "" && err == nil {
		p.crash = &crashPoint{kind: kind, nth: n}
	}
	return p
}

func (p *osProc) Now() time.Time { return time.Now() }

// Mono reads monoNow (CLOCK_BOOTTIME on Linux: it counts the time the
// machine spends suspended, as a lease server's clock does) since the
// Proc's start.
func (p *osProc) Mono() time.Duration { return monoNow() - p.monoStart }

// AfterMono implements MonoTimer on Mono's clock: on Linux a timerfd on
// CLOCK_BOOTTIME, which fires at once on a resume that finds its instant
// passed (afterMono); elsewhere a runtime timer.
//
// After move(-1) returns, f is called no more, except by a call that fell
// due before and may still be starting or running in its goroutine
// (move(-1) does not wait for f, which may take locks its caller holds):
// time.Timer.Stop's guarantee for time.AfterFunc, which this runtime used
// before.
func (p *osProc) AfterMono(at time.Duration, f func()) func(time.Duration) {
	return p.afterMono(at, f)
}

// runtimeTimer is time.AfterFunc: a runtime timer, on CLOCK_MONOTONIC.
func runtimeTimer(d time.Duration, f func()) *time.Timer { return time.AfterFunc(d, f) }

func (p *osProc) PID() int              { return p.pid }
func (p *osProc) Go(_ string, f func()) { go f() }
func (p *osProc) Role(Role)             {}
func (p *osProc) NewHandoff() Handoff   { return handoff{make(chan struct{}), p.done} }
func (p *osProc) NewTicker(d time.Duration) Ticker {
	return osTicker{time.NewTicker(d), p.done}
}

func (p *osProc) Lead(epoch int64, deadline time.Duration) {
	if p.onLead != nil {
		p.onLead(epoch, deadline)
	}
}

// Sleep, SleepContext and the tickers wait on runtime timers, on
// CLOCK_MONOTONIC, not on Mono's CLOCK_BOOTTIME: across a suspension of
// the machine they wake late by it, which only delays a renewal or a look
// at the store (and a renewal that starts late finds its deadline passed,
// by Mono). Ending the term at its deadline is AfterMono's timer's job,
// and that timer counts the suspension.
func (p *osProc) Sleep(d time.Duration) {
	if p.done == nil {
		time.Sleep(d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.done:
		runtime.Goexit()
	}
}

// SleepContext implements ContextWaiter.
func (p *osProc) SleepContext(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-p.done:
		runtime.Goexit()
	}
}

var _ ContextWaiter = (*osProc)(nil)

func (p *osProc) Exit(code int) {
	if p.done == nil {
		p.exit(code)
	}
	p.flushLog(logFlushWait)
	p.doneOnce.Do(func() { close(p.done) })
	runtime.Goexit()
}

// NotifyShutdown implements ShutdownNotifier.
func (p *osProc) NotifyShutdown() { p.notifyShutdown() }

func (p *osProc) notifyShutdown() chan os.Signal {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdownCh == nil {
		p.shutdownCh = make(chan os.Signal, 1)
		// Not SIGINT if the process was started with it ignored (a shell's
		// "&" without job control): Notify would take it back.
		if signal.Ignored(syscall.SIGINT) {
			signal.Notify(p.shutdownCh, syscall.SIGTERM)
		} else {
			signal.Notify(p.shutdownCh, syscall.SIGTERM, syscall.SIGINT)
		}
	}
	return p.shutdownCh
}

func (p *osProc) AwaitShutdown() {
	ch := p.notifyShutdown()
	select {
	case <-ch:
	case <-p.done:
		runtime.Goexit()
	}
}

func (p *osProc) Log(m Msg, a, b int64) {
	if m == MsgShutdown && p.selfStopped != nil && p.selfStopped() {
		m = MsgStopping
	}
	el := time.Since(p.start)
	line := fmt.Sprintf("%d.%02ds [Process: %d] %s\n", el/time.Second, el%time.Second/(10*time.Millisecond), p.pid, m.Format(a, b, time.Local))
	p.LogText(m.Stderr(), line)
}

// logFlushWait is how long an exiting process waits for its log's reader
// to take the lines still queued.
const logFlushWait = time.Second

// LogFlusher is a Proc whose log lines are written after Log returns (the
// real runtime's, NewOSProc: a log reader that stops reading must stall
// nothing). A program that ends other than through Proc.Exit, which
// flushes, calls FlushLog first.
type LogFlusher interface {
	// FlushLog waits until every line logged so far is written, at most d.
	FlushLog(d time.Duration)
}

// FlushLog implements LogFlusher.
func (p *osProc) FlushLog(d time.Duration) { p.flushLog(d) }

// flushLog waits until every line logged so far is written, at most d in
// all.
func (p *osProc) flushLog(d time.Duration) {
	end := time.Now().Add(d)
	p.logOut.flush(d)
	if p.logErr != p.logOut {
		p.logErr.flush(time.Until(end))
	}
}

// sameWriter reports whether a and b are one writer, or two files open on
// one file (stdout and stderr dup'ed to one pipe: 2>&1), whose lines one
// queue keeps in order. Writers it cannot compare count as one.
func sameWriter(a, b io.Writer) (same bool) {
	fa, okA := a.(*os.File)
	fb, okB := b.(*os.File)
	if okA && okB && fa != nil && fb != nil {
		sa, errA := fa.Stat()
		sb, errB := fb.Stat()
		if errA == nil && errB == nil {
			return os.SameFile(sa, sb)
		}
	}
	defer func() {
		if recover() != nil { // a == b of one uncomparable type
			same = true
		}
	}()
	return a == b
}

// TextLogger is a Proc that writes a program's own lines (a diagnostic of
// leaselab run's, say) in order with its log lines and, like them,
// without waiting for the log's reader (the real runtime's: LogFlusher).
type TextLogger interface {
	// LogText queues line, which ends in a newline, for standard error
	// (stderr) or standard output, as it is.
	LogText(stderr bool, line string)
}

// LogText implements TextLogger.
func (p *osProc) LogText(stderr bool, line string) {
	if stderr {
		p.logErr.write(line)
	} else {
		p.logOut.write(line)
	}
}

// maxLogQueue is how many lines a log whose reader has stopped reading
// holds before it drops lines.
const maxLogQueue = 4096

// lineWriter writes log lines from a goroutine of its own, in order, so
// that a reader that stops reading (a full pipe: a stalled log shipper, a
// terminal's scroll lock) stalls neither the renewals nor the shutdown of
// the process writing them: a line never waits for its write. Lines past
// maxLogQueue are dropped, and counted in a line of their own once the
// reader takes lines again. A write that fails (a closed pipe) loses its
// line.
type lineWriter struct {
	w       io.Writer
	mu      sync.Mutex
	queue   []string
	dropped int
	running bool          // the goroutine is writing
	idle    chan struct{} // closed when the queue empties (nil: it is empty)
}

func (l *lineWriter) write(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) >= maxLogQueue {
		l.dropped++
		return
	}
	if l.dropped > 0 {
		l.queue = append(l.queue, fmt.Sprintf("[%d log lines dropped: the log's reader fell behind]\n", l.dropped))
		l.dropped = 0
	}
	l.queue = append(l.queue, line)
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	if !l.running {
		l.running = true
		go l.run()
	}
}

// run writes the queue's lines until it is empty, then ends.
func (l *lineWriter) run() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running = false
			close(l.idle)
			l.idle = nil
			l.mu.Unlock()
			return
		}
		next := l.queue[0]
		l.queue[0] = ""
		l.queue = l.queue[1:]
		l.mu.Unlock()
		io.WriteString(l.w, next)
	}
}

// flush waits until every queued line is written, at most d.
func (l *lineWriter) flush(d time.Duration) {
	l.mu.Lock()
	idle := l.idle
	l.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

type handoff struct{ ch, done chan struct{} }

func (h handoff) Send() {
	select {
	case h.ch <- struct{}{}:
	case <-h.done:
		runtime.Goexit()
	}
}

func (h handoff) Recv() {
	select {
	case <-h.ch:
	case <-h.done:
		runtime.Goexit()
	}
}

type osTicker struct {
	t    *time.Ticker
	done chan struct{}
}

func (t osTicker) Wait() {
	select {
	case <-t.t.C:
	case <-t.done:
		runtime.Goexit()
	}
}

func (t osTicker) Stop() { t.t.Stop() }
