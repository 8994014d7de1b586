package spec

import (
	"fmt"
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
	}
	return nil
}
