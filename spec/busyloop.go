package spec

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// NoBusyLoop is the property that no process spins: while nothing in the
// world changes, a process makes at most BusyBound system calls (and
// FailBound failed ones) in any simulated second, and wakes on its own
// clock no more often than its timers allow (WakeBase, WakeRate,
// ActWakeRate, RetryWakeBound).
const NoBusyLoop = "no-busy-loop"

// CallsPerWake is what BusyBound allows a process each time it wakes on
// its own: the costliest step of any variant is a takeover after a read
// (the reference: a stat or two and a read, then a temporary file's
// open, write and close, the link, the remove, the directory's open,
// fsync and close, and its log lines), under twenty calls; a process that
// starts, or wakes after a while, stats every version published since the
// last it knew, one call each. Sixty-four is a few of those.
const CallsPerWake = 64

// BusyBound is the most system calls a process of variant v with config c
// may make in one simulated second while nothing changes: no fault, no
// process starting or ending, no other process's write. Between changes a
// correct process wakes only on its own timers, and a second holds at most
// 1s/RenewInterval + 1 ticks of its renewal timer and 1s/WatchInterval + 1
// of its watch timer; add one wake-up for its reaction to the change that
// opened the quiet stretch, and two one-off timers (a local deadline, a
// lease's expiry). A variant that backs off after an error (flock: 1 ms,
// doubling, up to WatchInterval) may retry log2(WatchInterval/1ms) + 1
// times more within a second. Each wake-up may make CallsPerWake calls.
//
// With the post's intervals (3 s) that is 5 wake-ups, 320 calls a second
// (flock: 18, 1,152); a process that retries a failing call without
// waiting makes one every few tens of microseconds, thousands a second.
func BusyBound(v lease.Variant, c lease.Config) int {
	wakes := perSecond(c.RenewInterval) + perSecond(c.WatchInterval) + 3
	if v.Claims.Handover == lease.KernelLock {
		wakes += backoffTries(c.WatchInterval)
	}
	return CallsPerWake * wakes
}

// FailsPerWake is what FailBound allows a process each time it wakes on
// its own: the calls of one attempt that can fail before it gives up
// and waits (a takeover's temporary file: its open, its write; a log
// line of the failure). Two: most attempts stop at their first failure.
const FailsPerWake = 2

// FailBound is the most failed system calls a process of variant v with
// config c may make in one simulated second while nothing changes (see
// BusyBound): a correct process waits after a failure, and a back-off
// from 1 ms, doubling up to WatchInterval, adds log2(WatchInterval/1ms) +
// 1 wake-ups to BusyBound's, whatever the variant. A failure is an error
// other than ENOENT and EEXIST, which are answers (no record yet, a
// lock file another process created), not failures. With the post's
// intervals that is 2 x 18, 36 a second; a process that retries a
// failing read every 10 ms fails 100 times a second, within BusyBound's
// 320 calls (a probe's mutant: a watcher told its user of 2,243 errors
// in 31 s of EMFILE).
func FailBound(v lease.Variant, c lease.Config) int {
	wakes := perSecond(c.RenewInterval) + perSecond(c.WatchInterval) + 3 + backoffTries(c.WatchInterval)
	return FailsPerWake * wakes
}

// perSecond is how many ticks of a timer of period d one second can hold.
func perSecond(d time.Duration) int {
	if d <= 0 {
		return 1
	}
	return int(time.Second/d) + 1
}

// backoffTries is how many tries a back-off from 1 ms, doubling up to
// limit, makes before it reaches limit: log2(limit/1ms) + 1, rounded up.
func backoffTries(limit time.Duration) int {
	ms := max(limit/time.Millisecond, 1)
	return bits.Len64(uint64(ms-1)) + 1
}

// change is an instant at which the world changed, by process by (-1:
// for every process: a fault).
type change struct {
	t  int64
	by int16
}

// changes returns the instants at which the world changed, in time order:
// every fault (a stretch's start and end included) and a server's expiry
// of a record, which change the world for every process; and every
// process's start and end and every write of a process that took effect
// (a store write that succeeded, a mutating system call that succeeded),
// which change it for the others only: a process's own writes are what it
// does, not what it reacts to, and one that writes in a tight loop is
// spinning too. A store write that failed part-way (ENOSPC, EIO: an
// unknown outcome) changed the world only through the system calls that
// succeeded in it.
func changes(tr *trace.Trace) []change {
	var out []change
	for i, p := range tr.Procs {
		out = append(out, change{int64(p.Start), int16(i)})
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		switch {
		case e.Kind == trace.EvFault && !e.Missed():
			out = append(out, change{e.T, -1})
		case e.Kind == trace.EvExit:
			out = append(out, change{e.T, e.Proc})
		case e.Kind == trace.EvStore && e.Store == trace.StoreExpire:
			out = append(out, change{e.T, -1})
		case e.Kind == trace.EvStore && e.Store != trace.StoreRead && e.Res == trace.ResOK:
			out = append(out, change{e.T, e.Proc})
		case e.Kind == trace.EvSyscall && e.Errno == 0 && mutates(e):
			out = append(out, change{e.T, e.Proc})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

// mutates reports whether a system call changes what other processes can
// see: the file system's names or contents, a flock lock, a server's
// record (a request that may write: not a read, or processes polling a
// server in a tight loop would keep resetting each other's quiet).
func mutates(e *trace.Event) bool {
	switch e.Op {
	case trace.OpOpen:
		return int(e.Flag)&(lease.O_CREATE|lease.O_TRUNC) != 0
	case trace.OpRPC:
		return e.Flag&trace.RPCWrite != 0
	case trace.OpWrite, trace.OpRename, trace.OpLink, trace.OpRemove, trace.OpFlock:
		return true
	}
	return false
}

// isCall reports whether the event is one of its process's system calls:
// a file system call, a request to a server, a log line (a write(2) to
// stdout), a sigaction or an exit. Clock reads (vDSO) and the fenced
// workload's actions are not.
func isCall(e *trace.Event) bool {
	return e.Proc >= 0 && (e.Kind == trace.EvSyscall || e.Kind == trace.EvLog || e.Kind == trace.EvSignal && e.Op == trace.OpSigaction)
}

// CheckNoBusyLoop reports the first simulated second in which a process
// made more than BusyBound system calls while nothing in the world
// changed (see changes): a process that retries a failing call, or polls,
// without waiting.
func CheckNoBusyLoop(tr *trace.Trace) *Violation {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		panic(err) // a trace is made from a valid config
	}
	_, fast := envelope(tr)
	if x := CheckNoBusyLoopBound(tr, BusyBound(v, fast)); x != nil {
		return x
	}
	if x := busySecond(tr, FailBound(v, fast), failedCall, false, "failed system calls"); x != nil {
		return x
	}
	return wakeViolation(tr, fast)
}

// CheckNoBusyLoopBound is CheckNoBusyLoop with the bound given: at most
// bound system calls in any second with no change.
func CheckNoBusyLoopBound(tr *trace.Trace, bound int) *Violation {
	return busySecond(tr, bound, isCall, tr.Run.Capped, "system calls")
}

// busySecond reports the first second in which a process made more than
// bound of the calls counted (isCall's, or failedCall's) while nothing in
// the world changed; and, when capped, a run the simulator stopped at its
// cap with no such second.
func busySecond(tr *trace.Trace, bound int, counted func(*trace.Event) bool, capped bool, what string) *Violation {
	// Most runs end here: no process made more calls than a second
	// allows in the whole run. Count before collecting.
	var counts [64]int
	busy := false
	for i := range tr.Events {
		if e := &tr.Events[i]; counted(e) && int(e.Proc) < len(counts) {
			counts[e.Proc]++
			busy = busy || counts[e.Proc] > bound
		}
	}
	if !busy && !capped && len(tr.Procs) <= len(counts) {
		return nil
	}
	calls := make([][]int, len(tr.Procs)) // indices of each process's calls
	for i := range tr.Events {
		if e := &tr.Events[i]; counted(e) {
			calls[e.Proc] = append(calls[e.Proc], i)
		}
	}
	ch := changes(tr)
	var first *Violation
	for p, idx := range calls {
		if len(idx) <= bound {
			continue
		}
		lo, k := 0, 0 // the window's first call; the next change to pass
		segFrom := int64(-1)
		for j, ev := range idx {
			t := tr.Events[ev].T
			// A change at or before t, by the world or by another process,
			// opens a new quiet stretch: the window starts again.
			for ; k < len(ch) && ch[k].t <= t; k++ {
				if ch[k].by != int16(p) && ch[k].t > segFrom {
					segFrom = ch[k].t
				}
			}
			for lo < j && (tr.Events[idx[lo]].T < segFrom || t-tr.Events[idx[lo]].T >= int64(time.Second)) {
				lo++
			}
			if j-lo+1 <= bound {
				continue
			}
			if first == nil || time.Duration(t) < first.At {
				first = busyViolation(tr, p, idx, lo, segFrom, ch, bound, what)
			}
			break
		}
	}
	if first == nil && capped {
		first = cappedViolation(tr, calls)
	}
	return first
}

// failedCall reports whether the event is one of its process's system
// calls that failed (isCall's), with an error other than ENOENT and
// EEXIST.
func failedCall(e *trace.Event) bool {
	return e.Errno != 0 && e.Errno != enoent && e.Errno != eexist && isCall(e)
}

var enoent, eexist = trace.Errno(syscall.ENOENT), trace.Errno(syscall.EEXIST)

// cappedViolation describes a run the simulator stopped at its cap on
// system calls (trace.Run.Capped) with no busy second found: processes
// that spin while each other's writes keep every quiet second short, such
// as two retrying a contended write without waiting.
func cappedViolation(tr *trace.Trace, calls [][]int) *Violation {
	p := 0
	for q := range calls {
		if len(calls[q]) > len(calls[p]) {
			p = q
		}
	}
	total := 0
	for _, idx := range calls {
		total += len(idx)
	}
	pid := tr.Procs[p].PID
	v := &Violation{Property: NoBusyLoop, At: tr.End, PIDs: []int{pid},
		Detail: fmt.Sprintf("the run was stopped at %s, before its horizon, at the simulator's cap on system calls, which no process that waits between attempts comes near: %d calls in all, %d of them by process %s",
			secs(tr.End), total, len(calls[p]), tr.ProcName(p))}
	if n := len(calls[p]); n > 0 {
		v.Events = []int{calls[p][n-1]}
	}
	return v
}

// busyViolation describes the busy second that starts at process p's call
// idx[lo], in the quiet stretch from segFrom.
func busyViolation(tr *trace.Trace, p int, idx []int, lo int, segFrom int64, ch []change, bound int, what string) *Violation {
	from := tr.Events[idx[lo]].T
	to := from + int64(time.Second)
	for _, c := range ch {
		if c.t > from && c.t < to && c.by != int16(p) {
			to = c.t // the next change ends the quiet stretch
			break
		}
	}
	to = min(to, int64(tr.End)+1)
	n, kinds := 0, map[string]int{}
	last := idx[lo]
	for _, ev := range idx[lo:] {
		e := &tr.Events[ev]
		if e.T >= to {
			break
		}
		n++
		last = ev
		kinds[callName(e)]++
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return kinds[names[i]] > kinds[names[j]] || kinds[names[i]] == kinds[names[j]] && names[i] < names[j]
	})
	var most []string
	for _, k := range names[:min(len(names), 3)] {
		most = append(most, fmt.Sprintf("%s x%d", k, kinds[k]))
	}
	quiet := "since " + secs(time.Duration(segFrom))
	if segFrom < 0 {
		quiet = "from the start"
	}
	pid := tr.Procs[p].PID
	return &Violation{Property: NoBusyLoop, At: time.Duration(tr.Events[idx[lo+bound]].T), PIDs: []int{pid},
		Events: []int{idx[lo], idx[lo+bound], last},
		Detail: fmt.Sprintf("process %s made %d %s from %s to %s (%s) with nothing changed %s: no fault, no start or exit, no other process's write (bound %d a second)",
			tr.ProcName(p), n, what, secs(time.Duration(from)), secs(time.Duration(tr.Events[last].T)), strings.Join(most, ", "), quiet, bound)}
}

// callName names a call for a violation's detail: "open O_EXCL = ENOSPC",
// "log", "stat".
func callName(e *trace.Event) string {
	name := e.Op.String()
	if e.Kind == trace.EvLog {
		name = "log"
	}
	if e.Op == trace.OpOpen && int(e.Flag)&lease.O_EXCL != 0 {
		name += " O_EXCL"
	}
	if e.Errno != 0 {
		name += " = " + e.Errno.String()
	}
	return name
}
