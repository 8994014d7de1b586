package lease

import (
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// monoClockID is the clock the real runtime's Mono and AfterMono count
// on: CLOCK_BOOTTIME, which, unlike CLOCK_MONOTONIC (Go's monotonic clock
// and its timers'), goes on while the machine is suspended, as a lease
// server's clock and the other machines' do. A leader whose machine alone
// was suspended past its lease finds its local deadline passed on resume
// (its term's context done at once), rather than late by the suspension.
const monoClockID = unix.CLOCK_BOOTTIME

// monoNow reads CLOCK_BOOTTIME, as a duration since the boot.
func monoNow() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(monoClockID, &ts); err != nil {
		panic("lease: clock_gettime(CLOCK_BOOTTIME): " + err.Error()) // Linux has had it since 2.6.39
	}
	return time.Duration(ts.Nano())
}

// timerFDs counts the timerfds AfterMono holds open, and timerFDMax
// bounds them: a quarter of the process's soft limit on descriptors
// (RLIMIT_NOFILE, which Go raises to the hard limit), at least 16. Past
// it an arming falls back to a runtime timer, so that timers never
// cancelled (a bug: mTimerPerRenewal's) cost memory, as they did on
// runtime timers, not the descriptors the store's own calls need.
var timerFDs, timerFDMax atomic.Int64

func init() {
	var rl unix.Rlimit
	limit := uint64(1 << 12)
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		limit = rl.Cur
	}
	timerFDMax.Store(int64(max(16, min(limit/4, 1<<20))))
}

// newTimerFD makes a timerfd on monoClockID, or fails with EMFILE past
// timerFDMax; closeTimerFD closes it.
func newTimerFD() (int, error) {
	if timerFDs.Add(1) > timerFDMax.Load() {
		timerFDs.Add(-1)
		return -1, unix.EMFILE
	}
	fd, err := unix.TimerfdCreate(monoClockID, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		timerFDs.Add(-1)
	}
	return fd, err
}

// closeTimerFD closes a timerfd of newTimerFD's.
func closeTimerFD(file *os.File) {
	file.Close()
	timerFDs.Add(-1)
}

// afterMono implements AfterMono with a timerfd on CLOCK_BOOTTIME, which
// fires at once when a suspension took the clock past its instant (a Go
// runtime timer counts CLOCK_MONOTONIC, which stops while the machine is
// suspended, and would fire late by the suspension).
//
// Each arming holds a timerfd and a goroutine blocked reading it (through
// the runtime's poller: no thread) until the timer fires, or move(-1)
// cancels it; move(-1) returns once both are gone. A timer that fires
// gives them up before calling f, so that a timer never cancelled holds
// them only while armed, as a runtime timer holds its memory; a move
// after the fire arms it again with a new timerfd. (mTimerPerRenewal's
// timers, armed a day ahead and never cancelled, hold a descriptor and a
// goroutine each for that day, up to timerFDMax of them, then memory:
// that mutant's leak, in this runtime's coin.)
//
// If no timerfd can be made (EMFILE: the process's descriptors are used
// up, or timerFDMax of them are timers), that arming falls back to a
// runtime timer (runtimeTimer) rather than failing the leader: it is late
// only by a suspension of the machine during it, which a machine out of
// descriptors is unlikely to undergo before its next renewal moves the
// timer (a new try at a timerfd) or its term ends.
func (p *osProc) afterMono(at time.Duration, f func()) func(time.Duration) {
	return newBootTimer(p, at, f).move
}

// newBootTimer arms a bootTimer for p's Mono instant at.
func newBootTimer(p *osProc, at time.Duration, f func()) *bootTimer {
	t := &bootTimer{origin: p.monoStart, f: f, mono: p.Mono}
	t.mu.Lock()
	t.armLocked(at)
	t.mu.Unlock()
	return t
}

// bootTimer is one AfterMono timer: at most one arming at a time, on a
// timerfd or, failing one, a runtime timer; each move is a new arming.
type bootTimer struct {
	origin time.Duration        // the Proc's Mono origin, on CLOCK_BOOTTIME
	f      func()               // what the timer calls
	mono   func() time.Duration // the Proc's Mono
	mu     sync.Mutex
	at     time.Duration // the instant of the arming (Mono; -1: none)
	file   *os.File      // the timerfd of the arming, if on one
	fd     int           // file's descriptor (valid while file is set)
	done   chan struct{} // closed when file's reader ends
	rt     *time.Timer   // the fallback's runtime timer, if any
}

// armLocked arms the timer for Mono instant at.
func (t *bootTimer) armLocked(at time.Duration) {
	t.at = at
	if t.rt != nil { // a fallback's arming ends: a new try at a timerfd
		t.rt.Stop()
		t.rt = nil
	}
	if t.file == nil {
		fd, err := newTimerFD()
		if err != nil {
			t.rt = runtimeTimer(at-t.mono(), t.f)
			return
		}
		t.fd, t.file, t.done = fd, os.NewFile(uintptr(fd), "timerfd"), make(chan struct{})
		go t.wait(t.file, t.done)
	}
	t.setLocked()
}

// setLocked sets the arming's timerfd to expire at its instant or, if it
// cannot (which cannot happen with a valid descriptor and time), hands
// the arming to a runtime timer rather than leave it unarmed.
func (t *bootTimer) setLocked() {
	abs := t.origin + max(t.at, 0)
	if t.at > 0 && abs < t.origin { // overflow: never, in effect
		abs = math.MaxInt64
	}
	abs = max(abs, 1) // (an it_value of zero disarms)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(abs))}
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		file, _ := t.dropFileLocked()
		closeTimerFD(file) // its reader ends
		t.rt = runtimeTimer(t.at-t.mono(), t.f)
	}
}

// dropFileLocked detaches the arming's timerfd from the timer; its reader
// ends once the caller closes it.
func (t *bootTimer) dropFileLocked() (*os.File, chan struct{}) {
	file, done := t.file, t.done
	t.file, t.done, t.fd = nil, nil, -1
	return file, done
}

// move is AfterMono's move.
func (t *bootTimer) move(at time.Duration) {
	t.mu.Lock()
	if at >= 0 {
		t.armLocked(at)
		t.mu.Unlock()
		return
	}
	t.at = -1
	if t.rt != nil {
		t.rt.Stop()
	}
	file, done := t.dropFileLocked()
	t.mu.Unlock()
	if file != nil {
		closeTimerFD(file) // wakes its reader; returns once the descriptor is closed
		<-done             // and the reader is gone
	}
}

// wait reads the timerfd file until it expires at the timer's instant,
// then calls f, or until it is closed.
func (t *bootTimer) wait(file *os.File, done chan struct{}) {
	var buf [8]byte // the expirations since the last read
	for {
		_, err := file.Read(buf[:])
		t.mu.Lock()
		switch {
		case t.file != file: // closed: cancelled (move(-1)), or handed to a runtime timer (setLocked)
			t.mu.Unlock()
			close(done)
			return
		case err != nil: // EAGAIN if the poller could not take the descriptor, else never: a runtime timer takes the arming
			t.dropFileLocked()
			t.rt = runtimeTimer(t.at-t.mono(), t.f)
		case t.mono() < t.at: // an expiry that a move to later overtook
			t.setLocked() // (again: were the kernel's expiry ever early, the next read would never end)
			t.mu.Unlock()
			continue
		default: // due: the arming ends here; a move arms anew
			t.dropFileLocked()
		}
		t.mu.Unlock()
		closeTimerFD(file)
		close(done)
		if err == nil {
			t.f()
		}
		return
	}
}
