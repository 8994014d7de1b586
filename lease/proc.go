package lease

import (
	"context"
	"strconv"
	"time"
)

// Proc is everything a lease process may do to the world: read clocks and
// wait, make file system calls, start concurrent activities, hand off
// between them, wait for a shutdown signal, write log lines and exit.
//
// The algorithms in this package use nothing else: no go statement, no
// timer, no channel and no signal handler of their own. The real runtime
// ([NewOSProc]) maps these onto goroutines, timers and os/signal; the
// simulator maps them onto coroutines it schedules one step at a time, so
// that every system call, log line and hand-off is a point where another
// process may run or this one may die.
type Proc interface {
	Clock
	FS
	// PID is the process id, the holder id the post's program writes.
	PID() int
	// Go starts f as a concurrent activity of this process (a goroutine).
	// All of a process's activities die together. f's code up to its
	// first call of a Proc method must touch nothing another activity
	// writes (each variant's activities begin with one): the simulator's
	// partial-order reduction takes an activity's first step to commute
	// with its process's other activities.
	Go(name string, f func())
	// NewHandoff returns an unbuffered channel of empty values between
	// activities of this process.
	NewHandoff() Handoff
	// AwaitShutdown installs a handler for SIGTERM and SIGINT, as
	// signal.Notify does, and blocks until one arrives. Before the first
	// call a SIGTERM kills the process outright, as the default action does.
	// (On the OS, SIGINT is left ignored if the process was started with it
	// ignored, as a shell's "&" without job control starts it.)
	AwaitShutdown()
	// Log writes one line to standard output: a write(2), so a scheduling
	// point. The line is m formatted with a and b (see [Msg.Format]); the
	// runtime prefixes it with the elapsed time.
	Log(m Msg, a, b int64)
	// Role records what the algorithm now believes it is. It makes no
	// system call; the simulator keeps it in the trace, from which the
	// checker derives leadership intervals.
	Role(r Role)
	// Lead records that this process leads with fencing epoch epoch until
	// its monotonic clock reads deadline, unless it renews first. Like Role
	// it makes no system call; the checker ends a leadership interval at
	// the deadline even if the process cannot run (paused).
	Lead(epoch int64, deadline time.Duration)
	// Exit ends the process (exit_group): every activity stops, descriptors
	// are closed and files stay as they are. It does not return.
	Exit(code int)
}

// Notifier is an optional ability of a Proc: waiting for a change to the
// directory that holds the lease, instead of polling it (inotify on a real
// file system). Algorithms fall back to polling without it.
//
// As with inotify, a watcher takes a token before it reads and waits for
// changes after the token, so that a change between its read and its wait
// is not lost.
type Notifier interface {
	// ChangeToken returns a token for the changes to dir so far.
	ChangeToken(dir string) uint64
	// WaitChange blocks until a file in dir has been created, renamed,
	// linked or removed since token, or until the monotonic clock reads
	// until, and reports whether a change woke it.
	WaitChange(dir string, token uint64, until time.Duration) bool
}

// NameWatcher is an optional ability of a Notifier: telling a lease's
// files from the other files of its directory. After WatchName(path) the
// changes that wake the waiters of path's directory are those of path
// itself, of its versions (path.N) and of its boot records (path.boot.K),
// beside those of any other lease named so in that directory; another
// file's (a log written beside the lease) wake nobody: each woke every
// watcher and cut its back-off short (a probe: a watcher whose reads
// failed read again for each line of that log, a CPU's worth). The
// reference names its store's lock path. A Proc that wraps a Notifier
// forwards it.
type NameWatcher interface {
	WatchName(path string)
}

// ShutdownNotifier is an optional ability of a Proc: installing the
// SIGTERM/SIGINT handler at once, as signal.Notify does, so that a
// signal arriving before the handling activity first waits is held for it
// rather than killing the process. AwaitShutdown then only waits. An
// algorithm that starts its handler as a concurrent activity calls it
// before it first writes a lease: otherwise an early SIGTERM kills the
// process with a lease that must then expire.
type ShutdownNotifier interface {
	NotifyShutdown()
}

// MonoTimer is an optional ability of a Proc: a function called at an
// instant of its monotonic clock whatever its activities are doing. The
// reference ends a leader's context at its local deadline with it, even
// while a store call hangs, so that a context derived from it
// (context.WithTimeout, an HTTP request's) is done then too. Both
// runtimes have it: the OS runtime's is a timerfd on CLOCK_BOOTTIME on
// Linux (a runtime timer elsewhere), which, like Mono, counts the time the
// machine spends suspended, as a lease server's clock does: a deadline
// that passed during a suspension fires as the machine resumes, not a
// suspension later. The simulator's fires before the first step of the
// process at or after the instant (and, for a process paused across it,
// when it resumes).
type MonoTimer interface {
	// AfterMono calls f, in a goroutine of its own, once Mono() reaches
	// at; move(at) moves that instant (calling f again if it has already
	// been called), move(-1) cancels it: once move(-1) has returned no
	// call of f starts but one that fell due before it (the OS runtime's
	// may still be starting then, as time.Timer.Stop allows of
	// time.AfterFunc's; move(-1) does not wait for f).
	AfterMono(at time.Duration, f func()) (move func(at time.Duration))
}

// ContextWaiter is an optional ability of a Proc: waits that end early
// when a context is done, so that [Run] returns promptly when its context
// ends instead of at its next wake-up (up to a renew or watch interval, or
// a lease for a watcher waiting on a [Notifier]). Both runtimes have it.
type ContextWaiter interface {
	// SleepContext is Clock.Sleep that returns as soon as ctx is done.
	SleepContext(ctx context.Context, d time.Duration)
	// WaitChangeContext is Notifier.WaitChange that returns as soon as
	// ctx is done, reporting false (no change woke it). Only a Proc that
	// is a Notifier is asked for it.
	WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool
}

// Handoff is an unbuffered channel of struct{}: Send blocks until Recv takes.
type Handoff interface {
	Send()
	Recv()
}

// Role is what a process believes it is.
type Role uint8

// The roles. The post's program calls the leader's role "renewal".
const (
	RoleStarting Role = iota
	RoleWatcher
	RoleLeader
)

var roleNames = [...]string{"starting", "watcher", "leader"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}
