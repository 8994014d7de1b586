package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A history is what a real process tells leaselab torture about itself:
// one line per event, stamped with CLOCK_MONOTONIC, which every process on
// the machine shares, so the harness can merge the processes' histories
// into one trace and judge it with the checks the simulator's runs get.
//
// Lines, each written with one write(2) so that a SIGKILL loses whole
// lines only (T is CLOCK_MONOTONIC in ns):
//
//	T start PID
//	T role ROLE
//	T lead EPOCH DEADLINE      deadline as CLOCK_MONOTONIC ns
//	T log MSG A B
//	T call ACT OP A B HOLDER   a Store operation was called
//	T ret ACT OP RES A B ERRNO  and returned
//	T exit CODE
type history struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	// acts in use by outstanding store operations: each concurrent
	// operation gets the lowest free slot, so that one slot's operations
	// are sequential, as porcupine needs of a client.
	busy []bool
}

// monoNow reads CLOCK_MONOTONIC.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // cannot fail on Linux with a valid clock id
	}
	return ts.Nano()
}

func (h *history) emit(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf = strconv.AppendInt(h.buf[:0], monoNow(), 10)
	h.buf = append(h.buf, ' ')
	h.buf = fmt.Appendf(h.buf, format, args...)
	h.buf = append(h.buf, '\n')
	h.w.Write(h.buf)
}

func (h *history) acquire() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.busy {
		if !b {
			h.busy[i] = true
			return i
		}
	}
	h.busy = append(h.busy, true)
	return len(h.busy) - 1
}

func (h *history) release(act int) {
	h.mu.Lock()
	h.busy[act] = false
	h.mu.Unlock()
}

// histProc is a real Proc that also reports its roles, leadership terms
// and log lines to a history.
type histProc struct {
	lease.Proc
	h *history
	// exiting, when set, is told the algorithm's exit code as the process
	// exits and returns the status it really exits with (leaselab run's
	// runner: the command's, when the command's exit ended run), which
	// the exit line records.
	exiting func(code int) int
}

func (p histProc) Role(r lease.Role) {
	p.h.emit("role %d", r)
	p.Proc.Role(r)
}

func (p histProc) Lead(epoch int64, deadline time.Duration) {
	// The deadline is on the process's monotonic clock; translate it to
	// CLOCK_MONOTONIC, which the harness shares.
	abs := monoNow() + int64(deadline-p.Proc.Mono())
	p.h.emit("lead %d %d", epoch, abs)
	p.Proc.Lead(epoch, deadline)
}

func (p histProc) BootID() (string, error) {
	if b, ok := p.Proc.(lease.BootIDer); ok {
		return b.BootID()
	}
	return "", errors.New("this runtime cannot tell its boot")
}

var _ lease.FlockFS = histProc{}

// Flock forwards flock(2) to the wrapped runtime (the real one has it), so
// that the flock election still finds a lease.FlockFS.
func (p histProc) Flock(fd lease.FD, how int) error {
	if f, ok := p.Proc.(lease.FlockFS); ok {
		return f.Flock(fd, how)
	}
	return &fs.PathError{Op: "flock", Path: "fd " + strconv.Itoa(int(fd)), Err: syscall.ENOSYS}
}

func (p histProc) NotifyShutdown() {
	if n, ok := p.Proc.(lease.ShutdownNotifier); ok {
		n.NotifyShutdown()
	}
}

var _ lease.ContextWaiter = histProc{}

// SleepContext forwards to the wrapped runtime's ContextWaiter, so that
// lease.Run still returns at once when its context ends.
func (p histProc) SleepContext(ctx context.Context, d time.Duration) {
	if c, ok := p.Proc.(lease.ContextWaiter); ok {
		c.SleepContext(ctx, d)
		return
	}
	p.Proc.Sleep(d)
}

// WaitChangeContext forwards to the wrapped runtime's ContextWaiter.
func (p histProc) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	if c, ok := p.Proc.(lease.ContextWaiter); ok {
		return c.WaitChangeContext(ctx, dir, token, until)
	}
	if n, ok := p.Proc.(lease.Notifier); ok {
		return n.WaitChange(dir, token, until)
	}
	p.SleepContext(ctx, until-p.Proc.Mono())
	return false
}

func (p histProc) Exit(code int) {
	if p.exiting != nil {
		code = p.exiting(code)
	}
	p.h.emit("exit %d", code)
	p.Proc.Exit(code)
}

func (p histProc) Log(m lease.Msg, a, b int64) {
	p.h.emit("log %d %d %d", m, a, b)
	p.Proc.Log(m, a, b)
}

// histNotifyProc keeps the real runtime's Notifier visible through the
// wrapper, so the reference variant still waits on inotify.
type histNotifyProc struct {
	histProc
	n lease.Notifier
}

func (p histNotifyProc) ChangeToken(dir string) uint64 { return p.n.ChangeToken(dir) }

// WatchName forwards lease.NameWatcher: without it, every file written
// beside the lease woke the watchers of a history's run (-events), as
// before the real runtime knew the lease's names.
func (p histNotifyProc) WatchName(path string) {
	if w, ok := p.n.(lease.NameWatcher); ok {
		w.WatchName(path)
	}
}

func (p histNotifyProc) WaitChange(dir string, token uint64, until time.Duration) bool {
	return p.n.WaitChange(dir, token, until)
}

// withHistory wraps p to report to h; exiting, if not nil, decides the
// status the process exits with (histProc.exiting).
func withHistory(p lease.Proc, h *history, exiting func(int) int) lease.Proc {
	hp := histProc{p, h, exiting}
	if n, ok := p.(lease.Notifier); ok {
		return histNotifyProc{hp, n}
	}
	return hp
}

// histStore reports every Store operation's call and return.
type histStore struct {
	inner lease.Store
	h     *history
}

func (s histStore) call(op trace.StoreOp, in lease.Record, holder int64) int {
	act := s.h.acquire()
	s.h.emit("call %d %d %d %d %d %d %d", act, op, in.Holder, in.Until, in.Epoch, in.Version, holder)
	return act
}

func (s histStore) ret(act int, op trace.StoreOp, out lease.Record, err error) {
	res := trace.Classify(op, err)
	if op == trace.StoreRead && res == trace.ResOK && out.Holder == lease.Unknown {
		res = trace.ResUnknown
	}
	if op != trace.StoreRead && err != nil {
		out = lease.Record{} // what a failed write sent is not what the store holds (as sim's recStore)
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	s.h.emit("ret %d %d %d %d %d %d %d %d", act, op, res, out.Holder, out.Until, out.Epoch, out.Version, int(errno))
	s.h.release(act)
}

func (s histStore) Read() (lease.Record, error) {
	act := s.call(trace.StoreRead, lease.Record{}, 0)
	r, err := s.inner.Read()
	s.ret(act, trace.StoreRead, r, err)
	return r, err
}

func (s histStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	act := s.call(trace.StoreCreate, lease.Record{}, holder)
	r, err := s.inner.Create(holder, ttl)
	s.ret(act, trace.StoreCreate, r, err)
	return r, err
}

func (s histStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	act := s.call(trace.StoreRenew, cur, cur.Holder)
	r, err := s.inner.Renew(cur, ttl)
	s.ret(act, trace.StoreRenew, r, err)
	return r, err
}

func (s histStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	act := s.call(trace.StoreTakeover, stale, holder)
	r, err := s.inner.Takeover(stale, holder, ttl)
	s.ret(act, trace.StoreTakeover, r, err)
	return r, err
}

func (s histStore) Release(cur lease.Record) error {
	act := s.call(trace.StoreRelease, cur, cur.Holder)
	err := s.inner.Release(cur)
	s.ret(act, trace.StoreRelease, lease.Record{}, err)
	return err
}

// procHistory is one real process's parsed history: events on true time
// (ns since the harness's origin), ready to add to a recorded trace.
type procHistory struct {
	events []trace.Event
	texts  map[int]string // events[i]'s text: a line as an -exec program printed it
	exited bool           // it wrote its exit line
	pid    int            // the program's own pid, as it printed it (-exec), or 0
}

// parseHistory reads a process's history lines. A line cut short by a
// SIGKILL, or any line it does not understand, is dropped: a history is
// the process's own account, and an unreadable line says nothing.
func parseHistory(r io.Reader, origin int64, proc int, onEvent func(trace.Event)) procHistory {
	var ph procHistory
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n := make([]int64, len(f))
		ok := true
		for i, s := range f {
			if i == 1 {
				continue
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				ok = false
				break
			}
			n[i] = v
		}
		if !ok {
			continue
		}
		e := trace.Event{T: n[0] - origin, Proc: int16(proc)}
		arg := func(i int) int64 {
			if i < len(n) {
				return n[i]
			}
			ok = false
			return 0
		}
		switch f[1] {
		case "start":
			continue
		case "role":
			e.Kind, e.Role = trace.EvRole, lease.Role(arg(2))
		case "lead":
			e = withT(trace.Lead(e.Proc, 0, arg(2), arg(3)-origin), e.T)
		case "log":
			e.Kind, e.Op, e.Msg, e.A, e.B = trace.EvLog, trace.OpLog, lease.Msg(arg(2)), arg(3), arg(4)
		case "call":
			rec := lease.Record{Holder: arg(4), Until: arg(5), Epoch: arg(6), Version: arg(7)}
			e = withT(trace.StoreCall(e.Proc, int16(arg(2)+1), trace.StoreOp(arg(3)), rec, arg(8)), e.T)
		case "ret":
			rec := lease.Record{Holder: arg(5), Until: arg(6), Epoch: arg(7), Version: arg(8)}
			e = withT(trace.StoreReturn(e.Proc, int16(arg(2)+1), trace.StoreOp(arg(3)), trace.StoreRes(arg(4)), rec, syscall.Errno(arg(9))), e.T)
		case "exit":
			e = withT(trace.Exit(e.Proc, arg(2)), e.T)
			ph.exited = true
		default:
			continue
		}
		if !ok {
			continue
		}
		ph.events = append(ph.events, e)
		if onEvent != nil {
			onEvent(e)
		}
	}
	return ph
}

// withT returns e at true time t.
func withT(e trace.Event, t int64) trace.Event {
	e.T = t
	return e
}

// Unwrap returns the store histStore reports on, whose notices (a
// server's lease.ChangeFeed) the reference finds through it.
func (s histStore) Unwrap() lease.Store { return s.inner }
