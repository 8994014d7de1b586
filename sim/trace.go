package sim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Kind is the kind of a trace event.
type Kind uint8

// The event kinds.
const (
	EvSyscall   Kind = iota + 1 // a system call (Op says which); log lines are EvLog
	EvLog                       // a write of a log line to stdout or stderr
	EvClock                     // a clock read: N is the reading in ns (wall: Unix ns)
	EvRole                      // the process now believes it is Role
	EvSpawn                     // an activity started (Path is its name)
	EvSend                      // a hand-off between activities
	EvRecv                      // the other side of a hand-off
	EvSignal                    // a signal handler was installed (Op OpSigaction) or ran
	EvFault                     // a fault fired: N is its FaultKind, A its Dur (-1: no target), B its Delta; Path describes it
	EvExit                      // the process ended (N: exit code, -9 for SIGKILL)
	EvStore                     // a Store operation returned: Store, Res, record in A, B
	EvStoreCall                 // a Store operation was called: Store, input record in A, B, holder in N
	EvLead                      // the process leads with epoch N until true time A (its local deadline)
	EvFence                     // the process acted on the fenced resource with epoch N; A is 1 if accepted
	EvBlock                     // a system call (Op, FD, Flag) must wait: a blocking flock on a lock held elsewhere
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
	OpRPC       // a request to a lease server (Path: server, lease and operation; Data: the reply)
)

var opNames = [...]string{OpOpen: "open", OpWrite: "write", OpFsync: "fsync", OpClose: "close", OpRead: "read",
	OpStat: "stat", OpRemove: "remove", OpRename: "rename", OpLink: "link", OpSigaction: "sigaction",
	OpExit: "exit", OpLog: "log", OpFence: "fence", OpClockWall: "now", OpClockMono: "mono", OpFlock: "flock", OpRPC: "rpc"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

// Event is one step of a run. Fields beyond T, Proc, Act and Kind depend on
// the kind; unused ones are zero.
type Event struct {
	T     int64 // true time in ns since the start of the run
	Proc  int16 // process index, -1 for the world
	Act   int16 // activity number within the process
	Kind  Kind
	Op    Op
	Role  lease.Role
	Msg   lease.Msg
	Store StoreOp  // EvStoreCall, EvStore
	Res   StoreRes // EvStore
	Errno syscall.Errno
	Flag  int32
	FD    int32
	N     int64 // bytes, result, clock reading, exit code
	A, B  int64 // log arguments; store record fields
	Path  Str   // file, activity name or fault description
	Path2 Str   // rename/link target
	Data  Str   // bytes written or read
}

// Str is a string kept in its trace's arena (see Trace.S), so that events
// hold no pointers and the garbage collector never scans a trace: a run
// records several events per system call, and this is its hot path.
type Str struct{ off, n uint32 }

// ProcInfo describes a process of the run.
type ProcInfo struct {
	PID   int
	Start time.Duration
}

// Trace is everything that happened in a run, in order.
type Trace struct {
	Events []Event
	Procs  []ProcInfo
	Acts   [][]string // activity names per process
	// Base is the wall-clock time at true time 0, the origin of the
	// post's elapsed-seconds column.
	Base time.Time
	// End is the true time at which the run stopped.
	End   time.Duration
	Files []FileState // the file system at the end

	arena   []byte
	last    string // the string most recently put in the arena
	lastRef Str
	// Config is the normalized configuration that produced the run.
	Config Config
	// Recorded marks a trace of real processes (NewRecordedTrace): what a
	// server did on its own, such as expiring a record, is not in it.
	Recorded bool

	fates []uint8 // per Config.Faults: neverFired, fired or noLeader
}

// fate records what became of the configured fault f.
func (tr *Trace) fate(f Fault, what uint8) {
	if f.idx > 0 && f.idx <= len(tr.fates) {
		tr.fates[f.idx-1] = what
	}
}

// S returns the string s refers to.
func (tr *Trace) S(s Str) string { return string(tr.arena[s.off : s.off+s.n]) }

// str puts s in the arena. Paths repeat, so the last one is remembered.
func (tr *Trace) str(s string) Str {
	if s == "" {
		return Str{}
	}
	if s == tr.last {
		return tr.lastRef
	}
	r := Str{uint32(len(tr.arena)), uint32(len(s))}
	tr.arena = append(tr.arena, s...)
	tr.last, tr.lastRef = s, r
	return r
}

// bytes puts b in the arena.
func (tr *Trace) bytes(b []byte) Str {
	r := Str{uint32(len(tr.arena)), uint32(len(b))}
	tr.arena = append(tr.arena, b...)
	return r
}

// secs prints true ns as seconds with six decimals.
func secs(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	return fmt.Sprintf("%s%d.%06ds", neg, ns/1e9, ns%1e9/1e3)
}

// elapsed prints true ns as the post does: seconds with two decimals
// (truncated, as a clock display is).
func elapsed(ns int64) string {
	return fmt.Sprintf("%d.%02ds", ns/1e9, ns%1e9/1e7)
}

// WriteLog writes the run as the post shows it: the lines the processes
// wrote to standard output, each prefixed with the elapsed time and
// process id.
func (tr *Trace) WriteLog(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == EvLog && !e.Msg.Stderr() {
			fmt.Fprintf(bw, "%s [Process: %d] %s\n", elapsed(e.T), tr.Procs[e.Proc].PID, e.Msg.Format(e.A, e.B, time.UTC))
		}
	}
	return bw.Flush()
}

// LogLines returns WriteLog's lines.
func (tr *Trace) LogLines() []string {
	var b strings.Builder
	tr.WriteLog(&b)
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// WriteTrace writes every event, one a line, with microsecond times.
func (tr *Trace) WriteTrace(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range tr.Events {
		bw.WriteString(tr.Format(i))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Format renders event i as one trace line.
func (tr *Trace) Format(i int) string {
	e := &tr.Events[i]
	who := "world"
	if e.Proc >= 0 {
		who = fmt.Sprintf("%d/%s", tr.Procs[e.Proc].PID, tr.Acts[e.Proc][e.Act])
	}
	return fmt.Sprintf("%12s %-14s %s", secs(e.T), who, tr.describe(e))
}

func (tr *Trace) describe(e *Event) string {
	path, path2, data := tr.S(e.Path), tr.S(e.Path2), tr.S(e.Data)
	res := func(ok string) string {
		if e.Errno != 0 {
			return errnoName(e.Errno)
		}
		return ok
	}
	switch e.Kind {
	case EvSyscall:
		switch e.Op {
		case OpOpen:
			return fmt.Sprintf("open %s %s = %s", path, flagString(int(e.Flag)), res(fmt.Sprintf("fd %d", e.FD)))
		case OpWrite:
			return fmt.Sprintf("write fd %d %q = %s", e.FD, data, res(strconv.FormatInt(e.N, 10)))
		case OpFsync, OpClose:
			return fmt.Sprintf("%s fd %d = %s", e.Op, e.FD, res("ok"))
		case OpRead:
			return fmt.Sprintf("read %s = %s", path, res(strconv.Quote(data)))
		case OpRename, OpLink:
			return fmt.Sprintf("%s %s %s = %s", e.Op, path, path2, res("ok"))
		case OpExit:
			return fmt.Sprintf("exit %d", e.N)
		case OpRPC:
			return fmt.Sprintf("rpc %s = %s", path, data)
		case OpFlock:
			return fmt.Sprintf("flock fd %d %s = %s", e.FD, flockString(int(e.Flag)), res("ok"))
		}
		return fmt.Sprintf("%s %s = %s", e.Op, path, res("ok"))
	case EvLog:
		stream := "stdout"
		if e.Msg.Stderr() {
			stream = "stderr"
		}
		return fmt.Sprintf("%s %q", stream, e.Msg.Format(e.A, e.B, time.UTC))
	case EvClock:
		if e.Op == OpClockWall {
			return "now " + time.Unix(0, e.N).UTC().Format("15:04:05.000000")
		}
		return "mono " + secs(e.N)
	case EvRole:
		return "role " + e.Role.String()
	case EvSpawn:
		return "go " + path
	case EvSend:
		return "handoff send"
	case EvRecv:
		return "handoff recv"
	case EvSignal:
		if e.Op == OpSigaction {
			return "sigaction SIGTERM SIGINT"
		}
		return "signal delivered to handler"
	case EvFault:
		return "FAULT " + path
	case EvLead:
		return fmt.Sprintf("lead epoch %d until %s", e.N, secs(e.A))
	case EvBlock:
		return fmt.Sprintf("flock fd %d %s blocks", e.FD, flockString(int(e.Flag)))
	case EvFence:
		if e.A == 1 {
			return fmt.Sprintf("fenced action epoch %d accepted", e.N)
		}
		return fmt.Sprintf("fenced action epoch %d REJECTED (stale)", e.N)
	case EvExit:
		if e.N == -9 {
			return "killed"
		}
		return fmt.Sprintf("exited %d", e.N)
	case EvStoreCall:
		switch e.Store {
		case StoreRead:
			return "store read"
		case StoreCreate:
			return fmt.Sprintf("store create holder %d", e.N)
		case StoreTakeover:
			return fmt.Sprintf("store takeover of {%d %d} by %d", e.A, e.B, e.N)
		}
		return fmt.Sprintf("store %s {%d %d}", e.Store, e.A, e.B)
	case EvStore:
		if e.Res == ResOK && e.Store != StoreRelease {
			return fmt.Sprintf("store %s = {%d %d}", e.Store, e.A, e.B)
		}
		if e.Errno == 0 {
			return fmt.Sprintf("store %s = %s", e.Store, e.Res)
		}
		return fmt.Sprintf("store %s = %s %s", e.Store, e.Res, errnoName(e.Errno))
	}
	return fmt.Sprintf("event kind %d", e.Kind)
}

func flagString(f int) string {
	var parts []string
	switch f & (syscall.O_WRONLY | syscall.O_RDWR) {
	case syscall.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case syscall.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_RDONLY")
	}
	for _, fl := range []struct {
		bit  int
		name string
	}{{syscall.O_CREAT, "O_CREAT"}, {syscall.O_EXCL, "O_EXCL"}, {syscall.O_TRUNC, "O_TRUNC"}, {syscall.O_NOFOLLOW, "O_NOFOLLOW"}} {
		if f&fl.bit != 0 {
			parts = append(parts, fl.name)
		}
	}
	return strings.Join(parts, "|")
}

// flockString prints flock(2)'s operation as "LOCK_EX|LOCK_NB".
func flockString(how int) string {
	var s string
	switch how &^ lease.LOCK_NB {
	case lease.LOCK_SH:
		s = "LOCK_SH"
	case lease.LOCK_EX:
		s = "LOCK_EX"
	case lease.LOCK_UN:
		s = "LOCK_UN"
	default:
		s = fmt.Sprintf("%#x", how&^lease.LOCK_NB)
	}
	if how&lease.LOCK_NB != 0 {
		s += "|LOCK_NB"
	}
	return s
}

// Excerpt returns the run between true times from and to as the post
// shows it: the processes' stdout lines, with each fault and death marked
// between them.
func (tr *Trace) Excerpt(from, to time.Duration) []string {
	var out []string
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T < int64(from) || e.T > int64(to) {
			continue
		}
		switch {
		case e.Kind == EvLog && !e.Msg.Stderr():
			out = append(out, fmt.Sprintf("%s [Process: %d] %s", elapsed(e.T), tr.Procs[e.Proc].PID, e.Msg.Format(e.A, e.B, time.UTC)))
		case e.Kind == EvFault:
			out = append(out, fmt.Sprintf("%s # FAULT %s", elapsed(e.T), tr.S(e.Path)))
		case e.Kind == EvExit:
			out = append(out, fmt.Sprintf("%s # process %d %s", elapsed(e.T), tr.Procs[e.Proc].PID, tr.describe(e)))
		}
	}
	return out
}
