package lease

import (
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
	// All of a process's activities die together.
	Go(name string, f func())
	// NewHandoff returns an unbuffered channel of empty values between
	// activities of this process.
	NewHandoff() Handoff
	// AwaitShutdown installs a handler for SIGTERM and SIGINT, as
	// signal.Notify does, and blocks until one arrives. Before the first
	// call a SIGTERM kills the process outright, as the default action does.
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

// Msg is a log line of the post's program, kept as a number and two
// arguments so that the simulator records it without formatting; the trace
// printer formats it only when asked.
type Msg uint8

// The post's log lines. Arguments a and b are process ids or whole Unix
// seconds, as each line's comment says.
const (
	MsgStarted           Msg = iota // (stderr, println) Process started with id:  a
	MsgAcquired                     // [LEADER] Acquired lease at a, valid until b
	MsgWatchUnreadable              // [WATCHER] Could not read lease file, will retry
	MsgExpired                      // [WATCHER] Lease held by a expired at b, attempting takeover
	MsgRemoveFailed                 // [WATCHER] Failed to remove expired lease, will retry
	MsgLostRace                     // [WATCHER] Lost takeover race, another process acquired first
	MsgWriteFailed                  // [WATCHER] Failed to write new lease, will retry
	MsgTakeover                     // [WATCHER] Takeover successful, now leader until a
	MsgHeld                         // [WATCHER] Lease held by a, valid until b
	MsgStepDown                     // [LEADER] Lease file unreadable, stepping down
	MsgRenewUnreadable              // [LEADER] Could not read lease file, will retry
	MsgTaken                        // [LEADER] Lease taken by a, stepping down to watcher
	MsgRenewFailed                  // [LEADER] Failed to renew lease, will retry
	MsgRenewed                      // [LEADER] Lease renewed, valid until a
	MsgShutdown                     // Received shutdown signal, releasing lease
	MsgReleased                     // Lease released
	MsgRefAcquired                  // [LEADER] Acquired lease, epoch a (version b)
	MsgRefRenewed                   // [LEADER] Lease renewed, version a
	MsgRefDeadline                  // [LEADER] Local deadline passed without a renewal, stepping down
	MsgRefLost                      // [LEADER] Lease version a taken by b, stepping down
	MsgRefHeld                      // [WATCHER] Lease held by a, version b
	MsgRefExpired                   // [WATCHER] Lease held by a unchanged for the lease duration, taking over
	MsgRefTakeover                  // [WATCHER] Takeover successful, epoch a
	MsgRefUnreadable                // [WATCHER] Lease version a unreadable, waiting it out
	MsgRefReleaseSkipped            // Lease no longer ours, nothing to release
	MsgFlockAcquired                // [LEADER] Acquired flock, epoch a
	MsgFlockWaiting                 // [WATCHER] Lock held by another process, waiting
	MsgFlockOpenFailed              // [WATCHER] Could not open lock file, will retry
	MsgFlockLockFailed              // [WATCHER] Could not lock lock file, will retry
	MsgFlockRecordFailed            // [WATCHER] Could not read or write lease record, unlocking, will retry
	MsgFlockUnreadable              // [WATCHER] Lease record unreadable, taking epoch a from the wall clock
	MsgRefNotLeading                // Not leading, nothing to release
	numMsgs
)

// Arg kinds of a message's arguments.
const (
	argNone = iota
	argPID
	argTime
	argNum
)

var msgs = [numMsgs]struct {
	text   string
	a, b   uint8
	stderr bool
}{
	MsgStarted:           {text: "Process started with id:  %", a: argPID, stderr: true},
	MsgAcquired:          {text: "[LEADER] Acquired lease at %, valid until %", a: argTime, b: argTime},
	MsgWatchUnreadable:   {text: "[WATCHER] Could not read lease file, will retry"},
	MsgExpired:           {text: "[WATCHER] Lease held by % expired at %, attempting takeover", a: argPID, b: argTime},
	MsgRemoveFailed:      {text: "[WATCHER] Failed to remove expired lease, will retry"},
	MsgLostRace:          {text: "[WATCHER] Lost takeover race, another process acquired first"},
	MsgWriteFailed:       {text: "[WATCHER] Failed to write new lease, will retry"},
	MsgTakeover:          {text: "[WATCHER] Takeover successful, now leader until %", a: argTime},
	MsgHeld:              {text: "[WATCHER] Lease held by %, valid until %", a: argPID, b: argTime},
	MsgStepDown:          {text: "[LEADER] Lease file unreadable, stepping down"},
	MsgRenewUnreadable:   {text: "[LEADER] Could not read lease file, will retry"},
	MsgTaken:             {text: "[LEADER] Lease taken by %, stepping down to watcher", a: argPID},
	MsgRenewFailed:       {text: "[LEADER] Failed to renew lease, will retry"},
	MsgRenewed:           {text: "[LEADER] Lease renewed, valid until %", a: argTime},
	MsgShutdown:          {text: "Received shutdown signal, releasing lease"},
	MsgReleased:          {text: "Lease released"},
	MsgRefAcquired:       {text: "[LEADER] Acquired lease, epoch % (version %)", a: argNum, b: argNum},
	MsgRefRenewed:        {text: "[LEADER] Lease renewed, version %", a: argNum},
	MsgRefDeadline:       {text: "[LEADER] Local deadline passed without a renewal, stepping down"},
	MsgRefLost:           {text: "[LEADER] Lease version % taken by %, stepping down", a: argNum, b: argPID},
	MsgRefHeld:           {text: "[WATCHER] Lease held by %, version %", a: argPID, b: argNum},
	MsgRefExpired:        {text: "[WATCHER] Lease held by % unchanged for the lease duration, taking over", a: argPID},
	MsgRefTakeover:       {text: "[WATCHER] Takeover successful, epoch %", a: argNum},
	MsgRefUnreadable:     {text: "[WATCHER] Lease version % unreadable, waiting it out", a: argNum},
	MsgRefReleaseSkipped: {text: "Lease no longer ours, nothing to release"},
	MsgFlockAcquired:     {text: "[LEADER] Acquired flock, epoch %", a: argNum},
	MsgFlockWaiting:      {text: "[WATCHER] Lock held by another process, waiting"},
	MsgFlockOpenFailed:   {text: "[WATCHER] Could not open lock file, will retry"},
	MsgFlockLockFailed:   {text: "[WATCHER] Could not lock lock file, will retry"},
	MsgFlockRecordFailed: {text: "[WATCHER] Could not read or write lease record, unlocking, will retry"},
	MsgFlockUnreadable:   {text: "[WATCHER] Lease record unreadable, taking epoch % from the wall clock", a: argNum},
	MsgRefNotLeading:     {text: "Not leading, nothing to release"},
}

// Stderr reports whether the line goes to standard error (the program's
// println) rather than standard output.
func (m Msg) Stderr() bool { return m < numMsgs && msgs[m].stderr }

// Format renders the line as the post shows it: Unix seconds as HH:MM:SS
// in loc. (The program prints RFC 3339; the post shortened the times to
// HH:MM:SS and so do we.)
func (m Msg) Format(a, b int64, loc *time.Location) string {
	if m >= numMsgs {
		return "Msg(" + strconv.Itoa(int(m)) + ")"
	}
	d := msgs[m]
	out := make([]byte, 0, len(d.text)+16)
	args := [2]struct {
		kind uint8
		v    int64
	}{{d.a, a}, {d.b, b}}
	i := 0
	for j := 0; j < len(d.text); j++ {
		if d.text[j] != '%' {
			out = append(out, d.text[j])
			continue
		}
		switch arg := args[i]; arg.kind {
		case argPID, argNum:
			out = strconv.AppendInt(out, arg.v, 10)
		case argTime:
			out = time.Unix(arg.v, 0).In(loc).AppendFormat(out, "15:04:05")
		}
		i++
	}
	return string(out)
}
