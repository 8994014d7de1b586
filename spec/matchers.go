package spec

import (
	"iter"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// hasFault reports whether a fault of kind k fired in the run (planned in
// the setup or injected by an exploration).
func hasFault(tr *trace.Trace, k trace.FaultKind) bool {
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == k && !e.Missed() {
			return true
		}
	}
	return false
}

func lockEmpty(tr *trace.Trace) bool {
	for _, f := range tr.Files {
		if f.Name == tr.Run.LockPath {
			return len(f.Data) == 0
		}
	}
	return false
}

func countLogs(tr *trace.Trace, m lease.Msg) int {
	n := 0
	for _, e := range tr.Events {
		if e.Kind == trace.EvLog && e.Msg == m {
			n++
		}
	}
	return n
}

// emptyLeftBy matches a run that ends with an empty lock file whose last
// writer died right after one of the given calls ("close-after-create" is
// the close that follows the O_EXCL create).
func emptyLeftBy(calls ...string) func(*trace.Trace, *Violation) bool {
	return func(tr *trace.Trace, v *Violation) bool {
		if !lockEmpty(tr) {
			return false
		}
		for p := range tr.Procs {
			var last, prev *trace.Event
			var in trace.StoreOp // the store operation its last call was made in
			dead := false
			for i := range tr.Events {
				e := &tr.Events[i]
				if int(e.Proc) != p {
					continue
				}
				if e.Kind == trace.EvExit && e.ExitCode() == trace.ExitKilled {
					dead = true
				}
				if e.Kind == trace.EvStoreCall {
					in = e.Store
				}
				if e.Kind == trace.EvSyscall {
					prev, last = last, e
				}
			}
			if !dead || last == nil || last.Errno != 0 || last.Op == trace.OpClose && (prev == nil || prev.Errno != 0) {
				continue // its last call failed: it created nothing
			}
			for _, c := range calls {
				switch {
				case c == "open-excl" && last.Op == trace.OpOpen && last.Flag&int32(lease.O_EXCL) != 0,
					// A renewal's os.WriteFile, not an acquisition's: a crash
					// there, after the O_EXCL create, is the post's own
					// create-then-write bug (a probe, helper-110: the bug
					// table's replay line for the renewal's wedge was a
					// crash 24 ms into the run, in the first acquisition).
					c == "open-trunc" && last.Op == trace.OpOpen && last.Flag&int32(lease.O_TRUNC) != 0 && in == trace.StoreRenew,
					c == "create-open-trunc" && last.Op == trace.OpOpen && last.Flag&int32(lease.O_TRUNC) != 0 && (in == trace.StoreCreate || in == trace.StoreTakeover),
					c == "close-after-create" && last.Op == trace.OpClose && prev != nil && prev.Op == trace.OpOpen && prev.Flag&int32(lease.O_EXCL) != 0:
					return true
				}
			}
		}
		return false
	}
}

// recreatedAfterRelease reports whether a process, after its release
// removed the lock file, made the lock path exist again: an open with
// O_CREAT (the seed's os.WriteFile) or a rename or link onto it (the
// proposed fixes' renewal).
func recreatedAfterRelease(tr *trace.Trace) bool {
	removed := map[int16]bool{}
	lock := tr.Run.LockPath
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.EvStore && e.Store == trace.StoreRelease && e.Res == trace.ResOK:
			removed[e.Proc] = true
		case e.Kind != trace.EvSyscall || !removed[e.Proc] || e.Errno != 0:
		case e.Op == trace.OpOpen && e.Flag&int32(lease.O_CREATE) != 0 && tr.S(e.Path) == lock,
			(e.Op == trace.OpRename || e.Op == trace.OpLink) && tr.S(e.Path2) == lock:
			return true
		}
	}
	return false
}

// procIndex returns the index in tr.Procs of the process with the given
// pid, or -1. (The first of that PID: the bug catalogue's searches never
// draw samepid, so its runs' PIDs name one process each.)
func procIndex(tr *trace.Trace, pid int) int {
	for i, p := range tr.Procs {
		if p.PID == pid {
			return i
		}
	}
	return -1
}

// pair returns the two processes a violation names, as indices in
// tr.Procs; ok is false unless it names two processes of the run.
func pair(tr *trace.Trace, v *Violation) (a, b int, ok bool) {
	if len(v.PIDs) != 2 {
		return 0, 0, false
	}
	a, b = procIndex(tr, v.PIDs[0]), procIndex(tr, v.PIDs[1])
	return a, b, a >= 0 && b >= 0
}

// bothSawNoLockFile matches naive-race: each of the two leaders led
// through a create whose stat found no lock file, and both stats came
// before either create returned, so each checked, saw no file, and
// created its own.
func bothSawNoLockFile(tr *trace.Trace, v *Violation) bool {
	a, b, ok := pair(tr, v)
	if !ok {
		return false
	}
	statA, doneA, okA := createAfterNoFile(tr, a, int64(v.At))
	statB, doneB, okB := createAfterNoFile(tr, b, int64(v.At))
	return okA && okB && max(statA, statB) < min(doneA, doneB)
}

// createAfterNoFile returns the event indices of process p's last
// successful create up to true time t: the stat in it that found no lock
// file, and the create's return. ok is false if p made no successful
// create up to t, or made it without such a stat.
func createAfterNoFile(tr *trace.Trace, p int, t int64) (stat, done int, ok bool) {
	lock := tr.Run.LockPath
	stat, sawNone := -1, false
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T > t {
			break
		}
		if int(e.Proc) != p {
			continue
		}
		switch {
		case e.Kind == trace.EvStoreCall:
			sawNone = false
		case e.Kind == trace.EvSyscall && e.Op == trace.OpStat && e.Errno.Sys() == syscall.ENOENT && tr.S(e.Path) == lock:
			stat, sawNone = i, true
		case e.Kind == trace.EvStore && e.Store == trace.StoreCreate && e.Res == trace.ResOK:
			done, ok = i, sawNone
		}
	}
	return stat, done, ok
}

// resumedAt returns when the process that the Stop fault at event i
// paused was continued: its next SIGCONT, or the end of the run if none
// came.
func resumedAt(tr *trace.Trace, i int) int64 {
	p := tr.Events[i].Proc
	for j := i + 1; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; e.Proc == p && e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
			return e.T
		}
	}
	return int64(tr.End)
}

// pausedPastLease matches paused-leader: one of the two leaders (the
// paused one) was paused (SIGSTOP) after it computed the expiry of a lease
// and before that lease ran out, in true time; a watcher found the lease
// run out and called Takeover on it, and the other leader has led since
// that call (the watcher itself, or a process that found the lock file
// gone). The paused one, resumed, still believes it leads on that lease:
// it has no local deadline to tell it otherwise, and a renewal after the
// pause writes over the new leader's lease.
func pausedPastLease(tr *trace.Trace, v *Violation) bool {
	a, b, ok := pair(tr, v)
	if !ok {
		return false
	}
	lease, at := int64(tr.Run.Lease.LeaseDuration), int64(v.At)
	iv := tr.Leadership()
	fromA, fromB := leadingSince(iv, a, at), leadingSince(iv, b, at)
	if fromA < 0 || fromB < 0 {
		return false
	}
	for c, w := range takeoverCalls(tr, at) {
		call := &tr.Events[c]
		paused := int(tr.Events[w].Proc)
		pausedFrom, otherFrom := fromA, fromB
		switch paused {
		case a:
		case b:
			pausedFrom, otherFrom = fromB, fromA
		default:
			continue
		}
		read, judged := lastWallReading(tr, paused, w), lastWallReading(tr, int(call.Proc), c)
		if read < 0 || judged < 0 {
			continue
		}
		ran := tr.Events[read].T + lease // when the lease ran out
		if tr.Events[judged].T < ran || otherFrom < call.T || pausedFrom > max(call.T, tr.Events[w].T) {
			continue // taken while live, the other led before, or the paused one leads on a later lease
		}
		for i := read + 1; i < len(tr.Events) && tr.Events[i].T < ran; i++ {
			if e := &tr.Events[i]; int(e.Proc) == paused && e.Kind == trace.EvFault && e.FaultKind().IsPause() && !e.Missed() {
				return true
			}
		}
	}
	return false
}

// takeoverCalls yields, for each Takeover called by true time at, the
// index of its call event and of the store event that wrote the record
// it expected (skipping calls on a record no event wrote).
func takeoverCalls(tr *trace.Trace, at int64) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		for c := range tr.Events {
			call := &tr.Events[c]
			if call.T > at {
				return
			}
			if call.Kind != trace.EvStoreCall || call.Store != trace.StoreTakeover {
				continue
			}
			if w := recordWrite(tr, call.Record(), c); w >= 0 && !yield(c, w) {
				return
			}
		}
	}
}

// leadingSince returns when process p began the leadership interval that
// holds true time t, or -1 if it did not lead at t.
func leadingSince(iv []trace.Interval, p int, t int64) int64 {
	for _, x := range iv {
		if x.Proc == p && x.From <= t && t <= x.To {
			return x.From
		}
	}
	return -1
}

// takeover is a takeover attempt on a lease still live in true time, as
// event indices: the holder's wall-clock reading for the expiry it wrote,
// and the taker's reading that judged the lease expired.
type takeover struct {
	writerClock, takerClock int
}

// liveTakeover finds a takeover attempt on a lease still live in true
// time that let a second leader in: some process (the taker) judged
// expired a record that its holder had written less than a lease before,
// in true time, and called Takeover on it; and each of the violation's
// two processes leads as that holder or began leading at or after the
// call, while the lease was still live (the taker itself, another
// watcher taking over at the same time, or a process that found the lock
// file gone after the taker removed it).
func liveTakeover(tr *trace.Trace, v *Violation) (takeover, bool) {
	a, b, ok := pair(tr, v)
	if !ok {
		return takeover{}, false
	}
	lease, at := int64(tr.Run.Lease.LeaseDuration), int64(v.At)
	iv := tr.Leadership()
	fromA, fromB := leadingSince(iv, a, at), leadingSince(iv, b, at)
	if fromA < 0 || fromB < 0 {
		return takeover{}, false
	}
	for c, w := range takeoverCalls(tr, at) {
		call := &tr.Events[c]
		holder := int(tr.Events[w].Proc)
		x := takeover{writerClock: lastWallReading(tr, holder, w), takerClock: lastWallReading(tr, int(call.Proc), c)}
		if x.writerClock < 0 || x.takerClock < 0 {
			continue
		}
		live := tr.Events[x.writerClock].T + lease // until when the lease was live
		if tr.Events[x.takerClock].T >= live {
			continue
		}
		in := func(p int, from int64) bool { return p == holder || call.T <= from && from < live }
		if in(a, fromA) && in(b, fromB) {
			return x, true
		}
	}
	return takeover{}, false
}

// recordWrite returns the index of the store event that wrote record r,
// as read at event i: the last create, renew or takeover that returned r
// before i, or else the first after it (the write was visible before the
// call that made it returned); -1 if none did.
func recordWrite(tr *trace.Trace, r lease.Record, i int) int {
	wrote := func(e *trace.Event) bool {
		return e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Record() == r &&
			e.Store.Writes()
	}
	for j := i - 1; j >= 0; j-- {
		if wrote(&tr.Events[j]) {
			return j
		}
	}
	for j := i + 1; j < len(tr.Events); j++ {
		if wrote(&tr.Events[j]) {
			return j
		}
	}
	return -1
}

// lastWallReading returns the index of process p's last wall-clock
// reading before event i, or -1.
func lastWallReading(tr *trace.Trace, p int, i int) int {
	for j := i - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockWall {
			return j
		}
	}
	return -1
}

// wallOffset is how far the wall-clock reading at event i was ahead of
// the machine's wall clock as it would read with no fault (tr.Base plus
// the true time). An EvClock event's N is its reading (trace.EvClock).
func wallOffset(tr *trace.Trace, i int) time.Duration {
	e := &tr.Events[i]
	return time.Duration(e.Reading() - tr.Base.UnixNano() - e.T)
}

// forwardJumps sums the forward steps of the machine's wall clock after
// event i and before event j.
func forwardJumps(tr *trace.Trace, i, j int) time.Duration {
	var d time.Duration
	for k := i + 1; k < j; k++ {
		if e := &tr.Events[k]; e.Kind == trace.EvFault && e.FaultKind() == trace.Jump && !e.Missed() && e.StepBy() > 0 {
			d += e.StepBy()
		}
	}
	return d
}

// takeoverBySkew matches clock-skew: a watcher took over a lease still
// live in true time, and let a second leader in, because its wall clock,
// when it judged the lease expired, read ahead of the holder's clock, when
// the holder computed the expiry, by more than any step of the machine's
// clock between the two readings explains.
func takeoverBySkew(tr *trace.Trace, v *Violation) bool {
	x, ok := liveTakeover(tr, v)
	return ok && wallOffset(tr, x.takerClock)-wallOffset(tr, x.writerClock) > forwardJumps(tr, x.writerClock, x.takerClock)
}

// takeoverByJump matches clock-jump: a watcher took over a lease still
// live in true time, and let a second leader in, after the machine's wall
// clock stepped forward between the holder's reading for the expiry and
// the watcher's reading that judged it expired.
func takeoverByJump(tr *trace.Trace, v *Violation) bool {
	x, ok := liveTakeover(tr, v)
	return ok && forwardJumps(tr, x.writerClock, x.takerClock) > 0
}

// terminatedByDefault matches term-before-handler: the SIGTERM of the
// leader that the failover violation names ended it with the default
// action (no handler installed yet), so it released nothing and its
// lease was left to expire.
func terminatedByDefault(tr *trace.Trace, v *Violation) bool {
	if len(v.Events) != 1 {
		return false
	}
	i := v.Events[0]
	p := tr.Events[i].Proc
	for j := i; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; e.Proc == p && e.Kind == trace.EvExit {
			return e.ExitCode() == trace.ExitTerminated
		}
	}
	return false
}

// pausedOnEmptyLock matches paused-creator: the wedge falls within the
// pause (SIGSTOP) of a process stopped after its O_EXCL create of the
// lock file and before its write, so that for the whole pause the lock
// file was empty: no lease to read or expire, and no create could succeed.
func pausedOnEmptyLock(tr *trace.Trace, v *Violation) bool {
	at := int64(v.At)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T > at {
			break
		}
		if e.Proc >= 0 && e.Kind == trace.EvFault && e.FaultKind().IsPause() && !e.Missed() &&
			at <= resumedAt(tr, i) && createdUnwritten(tr, int(e.Proc), i) {
			return true
		}
	}
	return false
}

// createdUnwritten reports whether, before event i, process p's last
// successful O_EXCL open of the lock file was followed by no successful
// write of p.
func createdUnwritten(tr *trace.Trace, p int, i int) bool {
	lock := tr.Run.LockPath
	created := false
	for j := range tr.Events[:i] {
		e := &tr.Events[j]
		if int(e.Proc) != p || e.Kind != trace.EvSyscall || e.Errno != 0 {
			continue
		}
		switch {
		case e.Op == trace.OpOpen && e.Flag&int32(lease.O_EXCL) != 0 && tr.S(e.Path) == lock:
			created = true
		case e.Op == trace.OpWrite:
			created = false
		}
	}
	return created
}
