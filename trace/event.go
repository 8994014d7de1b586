package trace

import (
	"strconv"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Kind is the kind of a trace event.
type Kind uint8

// The event kinds.
const (
	EvSyscall         Kind = iota + 1 // a system call (Op says which); log lines are EvLog
	EvLog                             // a write of a log line to stdout or stderr
	EvClock                           // a clock read: N is the reading in ns (wall: Unix ns)
	EvRole                            // the process now believes it is Role
	EvSpawn                           // an activity started (Text is its name)
	EvSend                            // a hand-off between activities
	EvRecv                            // the other side of a hand-off
	EvSignal                          // a signal handler was installed (Op OpSigaction) or ran
	EvFault                           // a fault fired (see Event.FaultKind, Event.Missed; Text describes it)
	EvExit                            // the process ended (see Event.ExitCode)
	EvStore                           // a Store operation returned (Store, Res, Event.Record)
	EvStoreCall                       // a Store operation was called (Store, Event.Record, Event.Writer)
	EvLead                            // the process leads (see Event.Epoch, Event.Deadline)
	EvFence                           // the process acted on the fenced resource (Event.Epoch, Event.Accepted)
	EvBlock                           // a system call (Op, FD, Flag) must wait: a blocking flock on a lock held elsewhere
	EvStarted                         // the user's OnStartedLeading was called (Event.Epoch: its term's, 0 without one)
	EvStopped                         // the user's leader context was seen done, or its process died (Event.LastLive, Event.DiedLeading)
	EvStoppedCallback                 // the user's OnStoppedLeading was called (Event.StillLive)
	EvNewLeader                       // the user's OnNewLeader was called (Event.Told: the holder it was told of)
	EvError                           // the user's OnError was called (Store: the operation it named)
	EvTermRevived                     // a leader context seen done looked live again, or its Term's epoch changed (Event.Context, Event.Epoch, Event.StillLive)
)

// Op is a system call.
type Op uint8

// The system calls.
const (
	OpOpen Op = iota + 1
	OpWrite
	OpFsync
	OpClose
	OpRead
	OpStat
	OpRemove
	OpRename
	OpLink
	OpSigaction
	OpExit
	OpLog       // EvLog: a write(2) of a log line to stdout or stderr
	OpFence     // EvFence: an action on the fenced resource
	OpClockWall // EvClock: a wall-clock read
	OpClockMono // EvClock: a monotonic read
	OpFlock     // flock(2): FD, Flag is the operation
	OpRPC       // a request to a lease server (Path: server, lease and operation; Data: the reply; Flag: RPCWrite unless a read)
	OpReadDir   // getdents(2) of a whole directory (Path: the directory; Data: the names, space-separated)
)

var opNames = [...]string{OpOpen: "open", OpWrite: "write", OpFsync: "fsync", OpClose: "close", OpRead: "read",
	OpStat: "stat", OpRemove: "remove", OpRename: "rename", OpLink: "link", OpSigaction: "sigaction",
	OpExit: "exit", OpLog: "log", OpFence: "fence", OpClockWall: "now", OpClockMono: "mono", OpFlock: "flock", OpRPC: "rpc", OpReadDir: "readdir"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

// Event is one step of a run. Fields beyond T, Proc, Act and Kind depend on
// the kind; unused ones are zero. The numbered fields N, A, B, C and D are
// read through the accessors named for what they hold in each kind
// (Record, FaultKind, ExitCode, Epoch, ...), and written by the simulator
// and the recorders through the same names (SetRecord, ...).
type Event struct {
	T     int64 // true time in ns since the start of the run
	N     int64 // bytes, result, clock reading; see the accessors
	A, B  int64 // log arguments; see the accessors
	C, D  int64 // see the accessors
	Path  Str   // the file a system call names
	Path2 Str   // rename/link target
	Data  Str   // bytes written or read; a server's reply
	Text  Str   // an activity's name (EvSpawn), a fault's description (EvFault)
	Flag  int32
	FD    int32
	Proc  int16 // process index, -1 for the world
	Act   int16 // activity number within the process
	Errno Errno
	Kind  Kind
	Op    Op
	Role  lease.Role
	Msg   lease.Msg
	Store StoreOp  // EvStoreCall, EvStore
	Res   StoreRes // EvStore
}

// RPCWrite is an OpRPC event's Flag when its request may change the
// server's record (any request but a read).
const RPCWrite = 1

// Errno is a system call's error number as a trace keeps it: in two
// bytes, which hold every Linux errno (they are below 4096), so that an
// event stays small.
type Errno uint16

// ErrnoOf returns e as an Errno.
func ErrnoOf(e syscall.Errno) Errno { return Errno(e) }

// Sys returns the error number as a syscall.Errno.
func (e Errno) Sys() syscall.Errno { return syscall.Errno(e) }

// String names the error number as the trace prints it ("EIO", "ok").
func (e Errno) String() string { return ErrnoName(e.Sys()) }

// Exit codes of EvExit events for a process that died of a signal: the
// negated signal number.
const (
	ExitKilled     = -9  // SIGKILL
	ExitTerminated = -15 // SIGTERM's default action: no handler was installed
)

// ExitCode is an EvExit's exit status, or ExitKilled or ExitTerminated.
func (e *Event) ExitCode() int64 { return e.N }

// FaultKind is an EvFault's kind of fault.
func (e *Event) FaultKind() FaultKind { return FaultKind(e.N) }

// Missed reports whether an EvFault aimed at the leader found none and so
// did nothing.
func (e *Event) Missed() bool { return e.A < 0 }

// PauseFor is a pause's length (a Stop or a Suspend fault), or a stretch's.
func (e *Event) PauseFor() time.Duration { return time.Duration(max(e.A, 0)) }

// StepBy is a Skew or Jump fault's step.
func (e *Event) StepBy() time.Duration { return time.Duration(e.B) }

// DriftPPM is a Drift fault's new rate error of its process's clock, in
// parts per million (a split's leader's: every other process gets its
// negation).
func (e *Event) DriftPPM() int64 { return e.C }

// Fault returns an EvFault event of kind k by process proc (-1: the
// world), described by text. pause and step are a Stop's pause and a
// Skew's or Jump's step; missed marks a fault aimed at the leader that
// found none.
func Fault(proc int16, k FaultKind, pause, step time.Duration, missed bool, text Str) Event {
	e := Event{Proc: proc, Kind: EvFault, N: int64(k), A: int64(pause), B: int64(step), Text: text}
	if missed {
		e.A = -1
	}
	return e
}

// Reading is an EvClock's reading in ns: Unix ns for a wall-clock read
// (OpClockWall), the monotonic clock for OpClockMono.
func (e *Event) Reading() int64 { return e.N }

// Started returns an EvStarted event: process proc's (activity act's)
// OnStartedLeading was called, with a context whose term has epoch (0:
// none).
func Started(proc, act int16, epoch int64) Event {
	return Event{Proc: proc, Act: act, Kind: EvStarted, N: epoch}
}

// Stopped returns an EvStopped event: process proc's leader context was
// last seen live at true time lastLive, when the trace held liveSteps
// events (after event liveSteps-1, before event liveSteps), and is now
// seen done, or (died) the process died with it live.
func Stopped(proc int16, lastLive int64, liveSteps int, died bool) Event {
	e := Event{Proc: proc, Kind: EvStopped, A: lastLive, C: int64(liveSteps)}
	if died {
		e.B = 1
	}
	return e
}

// StoppedCallback returns an EvStoppedCallback event: process proc's
// (activity act's) OnStoppedLeading was called; live says a leader
// context it had been given was still live then.
func StoppedCallback(proc, act int16, live bool) Event {
	e := Event{Proc: proc, Act: act, Kind: EvStoppedCallback}
	if live {
		e.A = 1
	}
	return e
}

// TermRevived returns an EvTermRevived event: process proc's nth leader
// context, seen done before, looked again as the process's activity act
// began a new term, and its Term now says epoch, and (live) that the
// context is live again.
func TermRevived(proc, act int16, nth int, epoch int64, live bool) Event {
	e := Event{Proc: proc, Act: act, Kind: EvTermRevived, N: epoch, D: int64(nth)}
	if live {
		e.A = 1
	}
	return e
}

// NewLeader returns an EvNewLeader event: process proc's (activity
// act's) OnNewLeader was called with holder.
func NewLeader(proc, act int16, holder int64) Event {
	return Event{Proc: proc, Act: act, Kind: EvNewLeader, N: holder}
}

// ErrorCallback returns an EvError event: process proc's (activity
// act's) OnError was called for op, with an error of errno (0: none).
func ErrorCallback(proc, act int16, op StoreOp, errno syscall.Errno) Event {
	return Event{Proc: proc, Act: act, Kind: EvError, Store: op, Errno: ErrnoOf(errno)}
}

// StoreOwed is an EvStore event's Flag when its call failed with an error
// that is none of the Store contract's outcomes (OwedError): one its
// caller is owed word of.
const StoreOwed = 1

// Owed reports whether an EvStore event's error is none of the Store
// contract's outcomes (StoreOwed).
func (e *Event) Owed() bool { return e.Kind == EvStore && e.Flag&StoreOwed != 0 }

// Told is the holder an EvNewLeader's OnNewLeader was told of.
func (e *Event) Told() int64 { return e.N }

// StillLive reports whether, when an EvStoppedCallback's OnStoppedLeading
// was called, a leader context its process had been given was still live
// (of an EvTermRevived: whether its context looked live again).
func (e *Event) StillLive() bool { return e.A == 1 }

// LastLive is the last instant, in true time ns, at which an EvStopped's
// context was seen live: where the user's leadership ends (-1: it was
// never seen live).
func (e *Event) LastLive() int64 { return e.A }

// LiveSteps places an EvStopped's LastLive in the run's order of steps:
// the number of events the trace held when the context was last seen
// live (-1: never). Events are appended in step order, so at one instant
// it tells which steps came before that sighting and which after.
func (e *Event) LiveSteps() int { return int(e.C) }

// DiedLeading reports whether an EvStopped's process died with its
// leader context live.
func (e *Event) DiedLeading() bool { return e.B == 1 }

// OfContext returns e, an EvStarted or EvStopped, marked as being about
// its process's nth leader context (1 for the context of its first
// OnStartedLeading): a process can hold more than one at once, and an
// EvStopped ends the EvStarted of its own context, not the first open one.
func (e Event) OfContext(nth int) Event {
	e.D = int64(nth)
	return e
}

// Context is which of its process's leader contexts an EvStarted,
// EvStopped or EvTermRevived is about (OfContext), 0 if the event does
// not say.
func (e *Event) Context() int { return int(e.D) }

// Epoch is the fencing epoch of an EvLead, EvFence or EvStarted event (of
// an EvTermRevived: what its Term says now).
func (e *Event) Epoch() int64 { return e.N }

// Deadline is an EvLead's local deadline, in true time ns: the process
// leads until then unless it renews first.
func (e *Event) Deadline() int64 { return e.A }

// MonoDeadline is an EvLead's local deadline as its process's monotonic
// clock reads it, in ns (the simulator records it; Lead leaves it 0).
func (e *Event) MonoDeadline() int64 { return e.B }

// CallMono is, for an EvStore of a write (create, renew, takeover), its
// process's monotonic clock reading when it called the store, in ns (the
// simulator records it): the latest instant a deadline that write backs
// may count from.
func (e *Event) CallMono() int64 { return e.N }

// Accepted reports whether an EvFence's action was accepted by the fenced
// resource (a stale epoch is rejected).
func (e *Event) Accepted() bool { return e.A == 1 }

// Record is the record of a store event: an EvStoreCall's input record
// (the one the caller expects to be current), an EvStore's result.
func (e *Event) Record() lease.Record {
	return lease.Record{Holder: e.A, Until: e.B, Epoch: e.C, Version: e.D}
}

// SetRecord sets the record of a store event.
func (e *Event) SetRecord(r lease.Record) { e.A, e.B, e.C, e.D = r.Holder, r.Until, r.Epoch, r.Version }

// Writer is the holder an EvStoreCall writes a record for: Create's and
// Takeover's holder, the current holder for Renew and Release; 0 for Read.
func (e *Event) Writer() int64 { return e.N }

// ExpiredAt is the true time at which a server's record expired, for an
// EvStore of StoreExpire.
func (e *Event) ExpiredAt() int64 { return e.N }

// Str is a string kept in its trace's arena (see Trace.S), so that events
// hold no pointers and the garbage collector never scans a trace: a run
// records several events per system call, and this is its hot path.
type Str struct{ off, n uint32 }

// Lead returns an EvLead event: process proc (activity act) leads with
// fencing epoch epoch until true time deadline, unless it renews first.
func Lead(proc, act int16, epoch, deadline int64) Event {
	return Event{Proc: proc, Act: act, Kind: EvLead, N: epoch, A: deadline}
}

// Exit returns an EvExit event: process proc ended with code (ExitKilled,
// ExitTerminated, or its exit status).
func Exit(proc int16, code int64) Event {
	return Event{Proc: proc, Kind: EvExit, N: code}
}

// Fence returns an EvFence event: an action on the fenced resource with
// epoch, accepted or rejected as stale.
func Fence(epoch int64, accepted bool) Event {
	e := Event{Kind: EvFence, Op: OpFence, N: epoch}
	if accepted {
		e.A = 1
	}
	return e
}

// StoreCall returns an EvStoreCall event: process proc (activity act)
// calls op expecting record rec, writing for holder writer.
func StoreCall(proc, act int16, op StoreOp, rec lease.Record, writer int64) Event {
	e := Event{Proc: proc, Act: act, Kind: EvStoreCall, Store: op, N: writer}
	e.SetRecord(rec)
	return e
}

// StoreReturn returns an EvStore event: op returned res with record rec
// (and errno, if an error carried one).
func StoreReturn(proc, act int16, op StoreOp, res StoreRes, rec lease.Record, errno syscall.Errno) Event {
	e := Event{Proc: proc, Act: act, Kind: EvStore, Store: op, Res: res, Errno: ErrnoOf(errno)}
	e.SetRecord(rec)
	return e
}

// Expiry returns the EvStore event of a server expiring record rec at
// true time at, as seen by process proc's activity act (the request that
// found it expired).
func Expiry(proc, act int16, rec lease.Record, at int64) Event {
	e := StoreReturn(proc, act, StoreExpire, ResOK, rec, 0)
	e.N = at
	return e
}
