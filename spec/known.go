package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// LeaderKnown is the property that the user's OnNewLeader tells every
// process who leads, as client-go's OnNewLeader does: once one process
// has led without a break for settle (the no-wedge bound and a watch
// interval, within which every watcher reads the record again), the last
// OnNewLeader of every process that has run unpaused all that while names
// the leader's PID, the leader's its own. What it judges is what the
// user's callback was told, not the algorithm's log; and, as
// OnNewLeader names a holder by PID, it judges PIDs: where processes
// share one (samepid), a hand-over between two of them is one no
// OnNewLeader can tell, and none is owed. Not judged for flock
// (its watchers wait in the kernel for the lock and read no record: they
// cannot know) or on recorded traces (the real processes do not report
// their callbacks). With two leaders at the end, exclusive-leadership
// speaks.
const LeaderKnown = "leader-known"

// checkLeaderKnown reports a process that was last told of another leader,
// or of none, at the run's end.
func checkLeaderKnown(tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) *Violation {
	end := int64(tr.End)
	slow, _ := envelope(tr)
	settle := int64(b.Wedge + slow.WatchInterval)
	var lead *trace.Interval
	for i := range iv {
		if iv[i].Open && !iv[i].EndedByDie {
			if lead != nil {
				return nil
			}
			lead = &iv[i]
		}
	}
	if lead == nil || lead.From > end-settle {
		return nil
	}
	last := make([]int, len(tr.Procs)) // each process's last EvNewLeader, plus one
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvNewLeader {
			last[e.Proc] = i + 1
		}
	}
	want := int64(tr.Procs[lead.Proc].PID)
	for p := range tr.Procs {
		if !throughout(el[p], end-settle, end) {
			continue
		}
		told := "of no leader"
		var events []int
		if i := last[p] - 1; i >= 0 {
			if tr.Events[i].Told() == want {
				continue
			}
			told = fmt.Sprintf("of leader %d, at %s", tr.Events[i].Told(), secs(time.Duration(tr.Events[i].T)))
			events = []int{i}
		}
		return &Violation{Property: LeaderKnown, At: tr.End, PIDs: []int{tr.Procs[p].PID, tr.Procs[lead.Proc].PID}, Events: events,
			Detail: fmt.Sprintf("process %s was last told %s (OnNewLeader), but process %s has led since %s and the run ended at %s",
				tr.ProcName(p), told, tr.ProcName(lead.Proc), secs(time.Duration(lead.From)), secs(tr.End))}
	}
	return nil
}

// throughout reports whether spans cover [from, to).
func throughout(spans []span, from, to int64) bool {
	for _, s := range spans {
		if s.from <= from && s.to >= to {
			return true
		}
	}
	return false
}

// leaderKnownVerdict judges LeaderKnown on a run of v, or says why it
// does not apply.
func leaderKnownVerdict(v lease.Variant, tr *trace.Trace, iv []trace.Interval, b Bounds, el [][]span) Verdict {
	switch {
	case tr.Recorded:
		return Verdict{Property: LeaderKnown, Reason: "a recorded trace: the real processes do not report their callbacks"}
	case v.Claims.Handover == lease.KernelLock:
		return Verdict{Property: LeaderKnown, Reason: "its watchers wait for the kernel's lock and read no record: they cannot know who leads"}
	}
	return Verdict{Property: LeaderKnown, Applicable: true, Violation: checkLeaderKnown(tr, iv, b, el)}
}
