package trace

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

// Secs prints true ns as seconds with six decimals.
func Secs(ns int64) string {
	// (Without fmt: a run formats every fault that fires, and fmt was a
	// few percent of a short simulated run.)
	var b [32]byte
	out := b[:0]
	if ns < 0 {
		out, ns = append(out, '-'), -ns
	}
	out = strconv.AppendInt(out, ns/1e9, 10)
	us := ns % 1e9 / 1e3
	out = append(out, '.', byte('0'+us/100000), byte('0'+us/10000%10), byte('0'+us/1000%10), byte('0'+us/100%10), byte('0'+us/10%10), byte('0'+us%10), 's')
	return string(out)
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
			fmt.Fprintf(bw, "%s [Process: %d] %s\n", elapsed(e.T), tr.Procs[e.Proc].PID, tr.logText(e))
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
		who = tr.ProcName(int(e.Proc)) + "/" + tr.Acts[e.Proc][e.Act]
	}
	return fmt.Sprintf("%12s %-14s %s", Secs(e.T), who, tr.describe(e))
}

func (tr *Trace) describe(e *Event) string {
	path, path2, data := tr.S(e.Path), tr.S(e.Path2), tr.S(e.Data)
	res := func(ok string) string {
		if e.Errno != 0 {
			return e.Errno.String()
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
		case OpReadDir:
			return fmt.Sprintf("readdir %s = %s", path, res("["+data+"]"))
		case OpFlock:
			return fmt.Sprintf("flock fd %d %s = %s", e.FD, flockString(int(e.Flag)), res("ok"))
		}
		return fmt.Sprintf("%s %s = %s", e.Op, path, res("ok"))
	case EvLog:
		stream := "stdout"
		if e.Msg.Stderr() {
			stream = "stderr"
		}
		return fmt.Sprintf("%s %q", stream, tr.logText(e))
	case EvClock:
		if e.Op == OpClockWall {
			return "now " + time.Unix(0, e.Reading()).UTC().Format("15:04:05.000000")
		}
		return "mono " + Secs(e.Reading())
	case EvRole:
		return "role " + e.Role.String()
	case EvSpawn:
		return "go " + tr.S(e.Text)
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
		return "FAULT " + tr.S(e.Text)
	case EvLead:
		return fmt.Sprintf("lead epoch %d until %s", e.Epoch(), Secs(e.Deadline()))
	case EvStarted:
		return fmt.Sprintf("started leading (user's callback), epoch %d", e.Epoch())
	case EvError:
		if e.Errno != 0 {
			return fmt.Sprintf("told of a %s error, %s (user's callback)", e.Store, e.Errno)
		}
		return fmt.Sprintf("told of a %s error (user's callback)", e.Store)
	case EvNewLeader:
		return fmt.Sprintf("told of leader %d (user's callback)", e.Told())
	case EvStoppedCallback:
		if e.StillLive() {
			return "stopped leading (user's callback), a leader context still live"
		}
		return "stopped leading (user's callback)"
	case EvTermRevived:
		if e.StillLive() {
			return fmt.Sprintf("leader context #%d, seen done before, looks live again (its term's epoch now %d)", e.Context(), e.Epoch())
		}
		return fmt.Sprintf("leader context #%d, seen done before, now says epoch %d", e.Context(), e.Epoch())
	case EvStopped:
		if e.DiedLeading() {
			return fmt.Sprintf("died leading, context last seen live at %s", Secs(e.LastLive()))
		}
		return fmt.Sprintf("leader context seen done, last seen live at %s", Secs(e.LastLive()))
	case EvBlock:
		return fmt.Sprintf("flock fd %d %s blocks", e.FD, flockString(int(e.Flag)))
	case EvFence:
		if e.Accepted() {
			return fmt.Sprintf("fenced action epoch %d accepted", e.Epoch())
		}
		return fmt.Sprintf("fenced action epoch %d REJECTED (stale)", e.Epoch())
	case EvExit:
		if e.ExitCode() == ExitKilled {
			return "killed"
		}
		if e.Text != (Str{}) {
			return fmt.Sprintf("exited %d (%s)", e.ExitCode(), tr.S(e.Text))
		}
		return fmt.Sprintf("exited %d", e.ExitCode())
	case EvStoreCall:
		switch e.Store {
		case StoreRead:
			return "store read"
		case StoreCreate:
			return fmt.Sprintf("store create holder %d", e.Writer())
		case StoreTakeover:
			return fmt.Sprintf("store takeover of %s by %d", short(e.Record()), e.Writer())
		}
		return fmt.Sprintf("store %s %s", e.Store, short(e.Record()))
	case EvStore:
		if e.Res == ResOK && e.Store != StoreRelease {
			return fmt.Sprintf("store %s = %s", e.Store, short(e.Record()))
		}
		if e.Errno == 0 {
			return fmt.Sprintf("store %s = %s", e.Store, e.Res)
		}
		return fmt.Sprintf("store %s = %s %s", e.Store, e.Res, e.Errno)
	}
	return fmt.Sprintf("event kind %d", e.Kind)
}

// short prints a record as the trace line shows it: {holder until} for the
// seed's records, {holder version} for a versioned store's (whose records
// have no Until; their epoch is left out of the line).
func short(r lease.Record) string {
	id := r.Until
	if r.Version != 0 {
		id = r.Version
	}
	return fmt.Sprintf("{%d %d}", r.Holder, id)
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

// logText is a log line's text: the line itself if it was read from a
// program as it printed it (a recorded trace of a program run by torture
// -exec: Event.Text), otherwise its message formatted.
func (tr *Trace) logText(e *Event) string {
	if e.Text.n > 0 {
		return tr.S(e.Text)
	}
	return e.Msg.Format(e.A, e.B, time.UTC)
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
			out = append(out, fmt.Sprintf("%s [Process: %d] %s", elapsed(e.T), tr.Procs[e.Proc].PID, tr.logText(e)))
		case e.Kind == EvFault:
			out = append(out, fmt.Sprintf("%s # FAULT %s", elapsed(e.T), tr.S(e.Text)))
		case e.Kind == EvExit:
			out = append(out, fmt.Sprintf("%s # process %s %s", elapsed(e.T), tr.ProcName(int(e.Proc)), tr.describe(e)))
		}
	}
	return out
}

// ErrnoName names an errno as the trace prints it: "EIO", "ENOSPC", "ok".
func ErrnoName(e syscall.Errno) string {
	switch e {
	case syscall.EIO:
		return "EIO"
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EBADF:
		return "EBADF"
	case syscall.EISDIR:
		return "EISDIR"
	case syscall.EWOULDBLOCK:
		return "EWOULDBLOCK"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ELOOP:
		return "ELOOP"
	case syscall.EMFILE:
		return "EMFILE"
	case 0:
		return "ok"
	}
	return fmt.Sprintf("errno %d", uintptr(e))
}
