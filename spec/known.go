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
// the leader's PID, the leader's its own. And every OnNewLeader names
// the holder the store last told its process of (and another than the
// process's previous call named: it tells of a change): the holder of the
// record its latest store call that said who holds returned (a read's
// record, or none; a write's own record; a release), so that no process
// is told of a leader, itself included, before the store says so (a
// probe: a process told "you lead" before its takeover's write was
// known to have worked passed the end rule, the next read correcting
// it). What it judges is what the user's callback was told, against
// what the store answered, not the algorithm's log; and, as
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

// checkToldFromStore reports an OnNewLeader call that names another
// holder than the one its process's latest store return that said who
// holds named: a read's record (released: none) or its missing record, a
// write's own record, a release. Other returns (an error, a conflict, an
// existing record, an unreadable version) say nothing of who holds and
// leave the last word standing.
func checkToldFromStore(tr *trace.Trace) *Violation {
	said := make([]int64, len(tr.Procs)) // the holder; -1: the store has said nothing yet
	from := make([]int, len(tr.Procs))   // the event that said it
	told := make([]int, len(tr.Procs))   // the process's last EvNewLeader, plus one
	owed := make([]int, len(tr.Procs))   // a read that named a holder not yet told of, plus one
	leaving := make([]bool, len(tr.Procs))
	for p := range said {
		said[p] = -1
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Proc < 0 || int(e.Proc) >= len(said) {
			continue
		}
		switch e.Kind {
		case trace.EvFault:
			// A process told to stop (SIGTERM) is owed no word of who
			// leads while it leaves: its release's reads show its own
			// record, and it goes.
			leaving[e.Proc] = leaving[e.Proc] || e.FaultKind() == trace.Term && !e.Missed()
		case trace.EvStoreCall:
			if j := owed[e.Proc] - 1; j >= 0 && tr.Events[j].Act == e.Act {
				r := &tr.Events[j]
				return &Violation{Property: LeaderKnown, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{j, i},
					Detail: fmt.Sprintf("process %s read a record of holder %d at %s, and its OnNewLeader was not told of it before its next store call, at %s",
						tr.ProcName(int(e.Proc)), r.Record().Holder, secs(time.Duration(r.T)), secs(time.Duration(e.T)))}
			}
		case trace.EvStore:
			// A read that names a holder other than the one last told of
			// owes an OnNewLeader before the activity's next store call
			// (a probe's mutant told only at the next read that named it,
			// a poll late; a process that dies or stops first, or whose
			// run ends, owes nothing, nor one told to stop).
			if rec := e.Record(); e.Store == trace.StoreRead && e.Res == trace.ResOK && rec.Holder > 0 && rec.Holder != lease.Unknown && !leaving[e.Proc] {
				last := int64(-1)
				if j := told[e.Proc] - 1; j >= 0 {
					last = tr.Events[j].Told()
				}
				owed[e.Proc] = 0
				if rec.Holder != last {
					owed[e.Proc] = i + 1
				}
			}
			holder := int64(-1)
			switch rec := e.Record(); {
			case e.Store == trace.StoreExpire:
			case e.Res == trace.ResNotFound, e.Res == trace.ResOK && e.Store == trace.StoreRelease:
				holder = 0
			case e.Res == trace.ResOK && rec.Holder != lease.Unknown:
				holder = max(rec.Holder, 0)
			}
			if holder >= 0 {
				said[e.Proc], from[e.Proc] = holder, i
			}
		case trace.EvNewLeader:
			if j := told[e.Proc] - 1; j >= 0 && tr.Events[j].Told() == e.Told() {
				// As client-go's: called when the leader changes, not at
				// every read that names it again (a probe's mutant did).
				return &Violation{Property: LeaderKnown, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: []int{j, i},
					Detail: fmt.Sprintf("process %s was told of leader %d (OnNewLeader) at %s, and again at %s, with no other leader told of between",
						tr.ProcName(int(e.Proc)), e.Told(), secs(time.Duration(tr.Events[j].T)), secs(time.Duration(e.T)))}
			}
			told[e.Proc] = i + 1
			owed[e.Proc] = 0 // (told of another holder than the read's: the rule below)
			if h := said[e.Proc]; e.Told() != h {
				what, events := "nothing yet", []int{i}
				switch {
				case h == 0:
					what, events = fmt.Sprintf("no holder, at %s", secs(time.Duration(tr.Events[from[e.Proc]].T))), []int{from[e.Proc], i}
				case h > 0:
					what, events = fmt.Sprintf("holder %d, at %s", h, secs(time.Duration(tr.Events[from[e.Proc]].T))), []int{from[e.Proc], i}
				}
				return &Violation{Property: LeaderKnown, At: time.Duration(e.T), PIDs: []int{tr.Procs[e.Proc].PID}, Events: events,
					Detail: fmt.Sprintf("process %s was told of leader %d (OnNewLeader) at %s, but the store had last told it of %s",
						tr.ProcName(int(e.Proc)), e.Told(), secs(time.Duration(e.T)), what)}
			}
		}
	}
	return nil
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
	viol := checkToldFromStore(tr)
	if viol == nil {
		viol = checkLeaderKnown(tr, iv, b, el)
	}
	return Verdict{Property: LeaderKnown, Applicable: true, Violation: viol}
}
