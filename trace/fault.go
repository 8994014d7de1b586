package trace

import (
	"fmt"
	"time"
)

// FaultKind is the kind of a fault (the simulator's fault model, and the
// signals leaselab torture sends real processes).
type FaultKind uint8

// The fault kinds.
const (
	Kill    FaultKind = iota + 1 // SIGKILL
	Term                         // SIGTERM
	Stop                         // SIGSTOP, followed by SIGCONT
	Skew                         // one process's wall clock steps
	Drift                        // one process's clock rate changes
	Jump                         // the machine's wall clock steps
	FSError                      // a system call fails with an errno
	Power                        // the machine loses power
	// DiskFull is a stretch during which the machine's file system is
	// full: every write, every open that would create a file and every
	// link fails with ENOSPC, for every process, until the stretch ends.
	DiskFull
	// DiskEIO is the same stretch with EIO: a disk that fails every write.
	DiskEIO
	// Stall is a stretch during which every process of the machine takes
	// no step at once, and is sent no signal: a loaded virtual machine
	// whose virtual CPUs do not run. Timers keep running and fire late,
	// as under SIGSTOP.
	Stall
	// NoBootID is not an event: a setup whose machine cannot tell its boot
	// (no /proc/sys/kernel/random/boot_id), so that every process's BootID
	// fails. The simulator's setup line says so.
	NoBootID
	// EMFile is a stretch during which one process has run out of file
	// descriptors (a leak elsewhere in its program, or a low ulimit -n):
	// every open it makes, every read of a whole file and every listing
	// of a directory fails with EMFILE, while the other processes' calls succeed. Descriptors it
	// already holds keep working.
	EMFile
	// Notice is a stretch during which a lease server's change notices
	// to one process (an etcd watch's events, a Redis channel's messages,
	// PostgreSQL's NOTIFY) are lost, delayed, duplicated, or delivered
	// before the change they announce: a reconnect, a server restart. It
	// does not end with an End event: each notice it touches is an event
	// of its own kind, by which the checker knows the feed misled.
	Notice
	// MemberKill is one member of a replicated lease server (an etcd
	// cluster's) SIGKILLed, and restarted on its own data a while later
	// (Event.PauseFor: the outage planned; an End event, whose Ended is
	// MemberKill, when it serves again). Leaselab torture inflicts it on
	// a cluster it controls; the simulator's servers have no members.
	MemberKill
	// MemberStop is one member of a replicated lease server SIGSTOPped,
	// and continued after Event.PauseFor (an End event when it is).
	MemberStop
	// Lose is the lease server restarted without its data (Redis without
	// persistence): the record and the version counter are gone, and
	// every subscriber's feed reconnects (a change notice, no release).
	Lose
	// SamePID is not an event: a setup whose processes run in PID
	// namespaces of their own (containers sharing the lock's directory or
	// the lease server), so that PIDs repeat: every process is PID 1, or
	// two share one. The simulator's setup line shows the PIDs.
	SamePID
	// Suspend is the machine of one process suspended (a laptop's lid
	// closed, a virtual machine paused), and resumed after
	// Event.PauseFor: the process takes no step meanwhile, as under Stop,
	// and then runs on, its clocks as Linux keeps them across a suspend:
	// CLOCK_BOOTTIME and the wall clock counted the time suspended,
	// CLOCK_MONOTONIC did not. A Cont ends it, as it ends a Stop.
	Suspend
	// Cont is SIGCONT. A Stop schedules it; it is not injected alone.
	Cont FaultKind = 100
	// End is the end of a stretch (DiskFull, DiskEIO, Stall, EMFile): the event
	// that a stretch's start schedules, as Stop schedules Cont. Its
	// Event.Ended names the kind of stretch that ended.
	End FaultKind = 101
)

var faultNames = [...]string{Kill: "kill", Term: "term", Stop: "stop", Skew: "skew", Drift: "drift", Jump: "jump", FSError: "fserr", Power: "power",
	DiskFull: "diskfull", DiskEIO: "eio", Stall: "stall", NoBootID: "nobootid", EMFile: "emfile", Notice: "notice",
	MemberKill: "member-kill", MemberStop: "member-stop", Lose: "lose", SamePID: "samepid", Suspend: "suspend"}

func (k FaultKind) String() string {
	switch k {
	case Cont:
		return "cont"
	case End:
		return "end"
	}
	if int(k) < len(faultNames) && faultNames[k] != "" {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", k)
}

// IsMember reports whether k is a fault of a lease server's member
// (MemberKill, MemberStop): an outage of one server of several, which
// the store's clients ride out by talking to the others. Unlike a
// stretch, it does not excuse no-wedge: its start and its end restart the
// clock, as any fault does. Failover-bound, whose hand-over needs the
// store, does not judge a window that meets one (Trace.MemberOutages).
func (k FaultKind) IsMember() bool { return k == MemberKill || k == MemberStop }

// IsPause reports whether faults of kind k stop one process for a while,
// to be continued (a Cont event) after Event.PauseFor: Stop and Suspend.
func (k FaultKind) IsPause() bool { return k == Stop || k == Suspend }

// IsStretch reports whether faults of kind k last a stretch of time and
// end with an End event: DiskFull, DiskEIO and Stall, which hit the whole
// machine, and EMFile, which hits one process.
func (k FaultKind) IsStretch() bool {
	return k == DiskFull || k == DiskEIO || k == Stall || k == EMFile
}

// FaultEnd returns the EvFault event that ends a stretch of kind k (on
// process proc; -1: the whole machine), described by text.
func FaultEnd(proc int16, k FaultKind, text Str) Event {
	return Event{Proc: proc, Kind: EvFault, N: int64(End), C: int64(k), Text: text}
}

// Ended is the kind of stretch an End event ends.
func (e *Event) Ended() FaultKind { return FaultKind(e.C) }

// Stretch is a stretch fault as a run had it: from its start to its end in
// true time ns, or to the end of the run if it lasted that long.
type Stretch struct {
	Kind     FaultKind
	From, To int64
	Proc     int16 // -1: the whole machine
}

// Stretches returns the run's stretch faults (DiskFull, DiskEIO, Stall,
// EMFile), in the order they started. A stretch's start is an EvFault
// whose PauseFor is its length; it ends then, or with the run.
func (tr *Trace) Stretches() []Stretch {
	var out []Stretch
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != EvFault || e.Missed() || !e.FaultKind().IsStretch() {
			continue
		}
		to := min(e.T+int64(e.PauseFor()), int64(tr.End))
		out = append(out, Stretch{Kind: e.FaultKind(), From: e.T, To: to, Proc: e.Proc})
	}
	return out
}

// In reports whether true time t lies within the stretch: at or after its
// start and before its end.
func (s Stretch) In(t int64) bool { return s.From <= t && t < s.To }

// Len is the stretch's length.
func (s Stretch) Len() time.Duration { return time.Duration(s.To - s.From) }

// MemberOutages returns the outages of the members of the run's store
// (MemberKill, MemberStop), in the order they began: each from its fault
// to the End event of its kind that followed (the member serving again),
// or to the end of the run. A run has them only where a harness controls
// a replicated store's members (leaselab torture over an etcd cluster).
func (tr *Trace) MemberOutages() []Stretch {
	var out []Stretch
	open := map[FaultKind][]int{} // kind -> indices in out still open
	for i := range tr.Events {
		e := &tr.Events[i]
		switch {
		case e.Kind != EvFault || e.Missed():
		case e.FaultKind().IsMember():
			open[e.FaultKind()] = append(open[e.FaultKind()], len(out))
			out = append(out, Stretch{Kind: e.FaultKind(), From: e.T, To: int64(tr.End), Proc: -1})
		case e.FaultKind() == End && e.Ended().IsMember():
			if q := open[e.Ended()]; len(q) > 0 {
				out[q[0]].To = e.T
				open[e.Ended()] = q[1:]
			}
		}
	}
	return out
}
