package spec

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// BoundedFiles is the property that the lock's directory never holds more
// names than the variant states (lease.Claims.Files) for the run's
// processes, on top of what was there before the run: a store that leaves
// a file behind per write, or per restart, breaks it in a long enough run.
// Nor does a process hold more than MaxOpenFiles descriptors at once: one
// left open per write wedges a leader at its descriptor limit.
const BoundedFiles = "bounded-files"

// FileBound is the most names the lock's directory of a run of variant v
// with procs processes may hold, before the names placed there by the
// setup, and whether v states a bound at all.
func FileBound(v lease.Variant, procs int) (int, bool) {
	if v.Claims.Files == nil {
		return 0, false
	}
	return v.Claims.Files.Of(procs), true
}

// CheckBoundedFiles reports the first instant at which the lock's
// directory held more names than its variant's bound for the run's
// processes (every process that ran: restarts after a power loss count)
// plus the names there at the start.
func CheckBoundedFiles(tr *trace.Trace) *Violation {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		panic(err) // a trace is made from a valid config
	}
	bound, ok := FileBound(v, len(tr.Procs))
	if !ok || !tr.LockDir.Watched {
		return nil
	}
	if v := checkDescriptors(tr); v != nil {
		return v
	}
	if v := checkLeftBehind(tr, *v.Claims.Files); v != nil {
		return v
	}
	limit := bound + tr.LockDir.Start
	for _, p := range tr.LockDir.Peaks {
		if p.N > limit {
			start := ""
			if tr.LockDir.Start > 0 {
				start = fmt.Sprintf(", and %d there before the run", tr.LockDir.Start)
			}
			return &Violation{Property: BoundedFiles, At: time.Duration(p.T),
				Detail: fmt.Sprintf("the lock's directory holds %d names: the variant's bound is %d for %d processes%s",
					p.N, bound, len(tr.Procs), start)}
		}
	}
	return nil
}

// MaxOpenFiles is the most descriptors a simulated process of a variant
// with a file bound may hold at once (every variant holds at most 3;
// 2026-12-06, 3,000 runs of each with every fault). A probe's mutant of
// the reference that left each write's descriptor open passed 20,000
// runs; on the real kernel with ulimit -n 64 it wedged its leader after
// 53 renewals, and at the default 1,024 and 3 s renewals it would in under
// an hour.
const MaxOpenFiles = 8

// firstDescriptor is the first descriptor a process's open gets: 0, 1 and
// 2 are its standard streams.
const firstDescriptor = 3

// checkDescriptors reports the first open that gave a process a
// descriptor past MaxOpenFiles: the kernel hands out the lowest free
// descriptor, so descriptor n says that n-firstDescriptor others of its
// process are open. (Not on recorded traces, whose descriptors are the
// real runtime's own too.)
func checkDescriptors(tr *trace.Trace) *Violation {
	if tr.Recorded {
		return nil
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.EvSyscall || e.Op != trace.OpOpen || e.Proc < 0 || int(e.FD) < firstDescriptor+MaxOpenFiles {
			continue
		}
		return &Violation{Property: BoundedFiles, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{i},
			Detail: fmt.Sprintf("process %s was given descriptor %d: it holds %d at once, more than %d (a descriptor left open per write wedges a leader at its limit)",
				tr.ProcName(int(e.Proc)), e.FD, int(e.FD)-firstDescriptor+1, MaxOpenFiles)}
	}
	return nil
}

// BoundedActivities is the property that no process has more than
// MaxActivities activities (goroutines) alive at once, as the simulator
// saw them begin and end (trace.ProcInfo.MaxLive): a goroutine left
// behind per renewal or per watch grows without bound in a process that
// runs for days, and nothing else a run shows changes.
const BoundedActivities = "bounded-activities"

// MaxActivities is the most activities a simulated process may have alive
// at once: every variant has at most 4 (its main loop, its renewal or
// watch loop, its signal handler, the workload's look at a leader
// context; 2026-12-06, 3,000 runs of each with every fault).
const MaxActivities = 8

// CheckBoundedActivities reports a process that had more than
// MaxActivities activities alive at once. A recorded trace, whose
// processes' goroutines nobody counted, is not judged.
func CheckBoundedActivities(tr *trace.Trace) *Violation {
	for p, info := range tr.Procs {
		if info.MaxLive > MaxActivities {
			return &Violation{Property: BoundedActivities, At: tr.End, PIDs: []int{info.PID},
				Detail: fmt.Sprintf("process %s had %d activities (goroutines) alive at once, more than %d: every variant needs at most 4, so one is left behind per renewal or per watch", tr.ProcName(p), info.MaxLive, MaxActivities)}
		}
		if info.MaxTimers > MaxTimers {
			return &Violation{Property: BoundedActivities, At: tr.End, PIDs: []int{info.PID},
				Detail: fmt.Sprintf("process %s had %d timers armed at once, more than %d: every variant arms at most one (its term's deadline), so one is left armed per renewal or per term", tr.ProcName(p), info.MaxTimers, MaxTimers)}
		}
	}
	return nil
}

// MaxTimers is the most timers (lease.MonoTimer) a simulated process may
// have armed at once: every variant arms at most one, its term's
// deadline (3,000 runs of -faults all of each, 2026-12-07; a review:
// 25,000 more). A probe's reference that armed a day-long watchdog at each
// renewal and never stopped it passed every property; on the real runtime
// each is memory until it fires. (At 4, a review's timer left per term
// was caught only in runs of four terms or more: 0 of 20,000.)
const MaxTimers = 2

// checkLeftBehind judges what the lock's directory holds when the run
// ends, by name: at most bound.Boots boot records once a process has
// written since the machine's last boot (one more before, or after a
// failed call), and
// (bound.Sweeps) no temporary file of a dead process that a live
// process's two writes since its death should have swept. The count's bound allows five names for
// every process that ever ran, the dead included, which hid a store that
// leaves a file per crash or per boot (a probe: a sweep that kept other
// processes' stale temporary files, and one that kept every boot record,
// passed 20,000 runs each; a crash-looping service grows without bound).
// Not on recorded traces (no file system at the end).
func checkLeftBehind(tr *trace.Trace, bound lease.FileBound) *Violation {
	if tr.Recorded || bound.Boots == 0 && !bound.Sweeps || tr.Run.LockPath == "" {
		return nil
	}
	dir, base := path.Dir(tr.Run.LockPath), path.Base(tr.Run.LockPath)
	boots := 0
	type temp struct {
		name string
		pid  int
	}
	var stale []temp
	for _, f := range tr.Files {
		if f.Dir || path.Dir(f.Name) != dir {
			continue
		}
		n := path.Base(f.Name)
		if k, ok := strings.CutPrefix(n, base+".boot."); ok && isDecimal(k) {
			boots++
		}
		if rest, ok := strings.CutPrefix(n, base+".tmp."); ok && bound.Sweeps {
			if pid, seq, ok := strings.Cut(rest, "."); ok && isDecimal(pid) && isDecimal(seq) {
				n, _ := strconv.Atoi(pid)
				stale = append(stale, temp{path.Base(f.Name), n})
			}
		}
	}
	if allowed := bound.Boots + bootSlack(tr); bound.Boots > 0 && boots > allowed {
		return &Violation{Property: BoundedFiles, At: tr.End,
			Detail: fmt.Sprintf("the lock's directory holds %d boot records when the run ends: the variant keeps %d once a process has written since the machine's last boot (one more before, or after a failed call)", boots, bound.Boots)}
	}
	for _, s := range stale {
		if at, by, ok := sweptBy(tr, s.pid); ok {
			return &Violation{Property: BoundedFiles, At: time.Duration(at),
				Detail: fmt.Sprintf("the lock's directory still holds %s when the run ends, a temporary file of process %d, dead since before two writes of a live process (the second, by process %s); a sweep removes what the dead leave, or a crash-looping service leaves a file per crash", s.name, s.pid, tr.ProcName(by))}
		}
	}
	return nil
}

// bootSlack is 1 if no write was acknowledged since the run's last power
// loss (or none at all), or a system call failed since (an old boot
// record's removal is tried once a boot: one that failed leaves it until
// the next; a review scripted it), else 0.
func bootSlack(tr *trace.Trace) int {
	written, failed := false, false
	for i := range tr.Events {
		e := &tr.Events[i]
		switch {
		case e.Kind == trace.EvFault && e.FaultKind() == trace.Power:
			written, failed = false, false
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes():
			written = true
		case failedCall(e):
			failed = true
		}
	}
	if written && !failed {
		return 0
	}
	return 1
}

// sweptBy reports whether every process of PID pid had died, and a
// process alive at the run's end then made two writes the store
// acknowledged, each called after the last of those deaths, with none of
// its system calls failing from the first on (a sweep whose look at the
// file, or its removal, failed leaves it for the next: explore found the
// correct reference's second sweep hindered so); and when the second
// returned, and by which process.
func sweptBy(tr *trace.Trace, pid int) (int64, int, bool) {
	death := int64(-1)
	alive := make([]bool, len(tr.Procs))
	for p := range tr.Procs {
		alive[p] = true
	}
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvExit && e.Proc >= 0 {
			alive[e.Proc] = false
			if tr.Procs[e.Proc].PID == pid {
				death = max(death, e.T)
			}
		}
	}
	for p, a := range alive {
		if a && tr.Procs[p].PID == pid {
			return 0, 0, false // (its own, or another's of its PID: alive)
		}
	}
	if death < 0 {
		return 0, 0, false // no process of that PID ran: not the run's
	}
	calls := make([][]int64, len(tr.Procs)) // each activity's last store call's instant
	for p := range calls {
		calls[p] = make([]int64, len(tr.Acts[p]))
	}
	writes := make([]int, len(tr.Procs))
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 || !alive[e.Proc] || int(e.Act) >= len(calls[e.Proc]) {
			continue
		}
		switch {
		case e.T > death && failedCall(e):
			writes[e.Proc] = 0
		case e.Kind == trace.EvStoreCall:
			calls[e.Proc][e.Act] = e.T
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store.Writes() && calls[e.Proc][e.Act] > death:
			if writes[e.Proc]++; writes[e.Proc] == 2 {
				return e.T, int(e.Proc), true
			}
		}
	}
	return 0, 0, false
}

// isDecimal reports whether s is a non-empty string of decimal digits.
func isDecimal(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
