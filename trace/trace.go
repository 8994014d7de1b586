package trace

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// ProcInfo describes a process of the run.
type ProcInfo struct {
	PID   int
	Start time.Duration
	// Lease is the process's own configuration when it differs from the
	// run's (a rolling change of intervals); zero: Run.Lease.
	Lease lease.Config
	// DriftPPM is its clock's rate error at its start, in parts per
	// million (drift faults change it later: their events say how).
	DriftPPM int64
	// MaxLive is the most of its activities (goroutines) that were alive
	// at once, as the simulator saw them begin and end (0: not known, a
	// recorded trace).
	MaxLive int
	// MaxTimers is the most of its timers (lease.MonoTimer) that were
	// armed at once (0: none, or a recorded trace).
	MaxTimers int
}

// File is a file or directory as the run left it.
type File struct {
	Name string
	Data []byte // a copy; nil for a directory
	Dir  bool
}

// Run is what a trace is a run of: what a check needs to know to judge it.
type Run struct {
	// Variant is the name of the lease.Variant that ran.
	Variant string
	// Lease is its lease configuration.
	Lease lease.Config
	// LockPath is the lock file (or the lease's name on a server).
	LockPath string
	// Server reports whether the store is a server's (Redis, etcd, SQL):
	// it expires records on its own when their TTL runs out, and keeps
	// its state when the clients' machine loses power.
	Server bool
	// Remote reports whether the store's requests cross a network to a
	// server process (Redis, etcd, PostgreSQL; not SQLite, a library in
	// the caller's process, and not the simulator's servers, which apply
	// a request within its call): a request that failed (a timeout, a
	// lost connection) may take effect after its caller gave up. Set by
	// the recorder of a real run.
	Remote bool
	// StopGrace is how long a leader told to go (SIGTERM) may take to
	// stop what it runs before it releases: leaselab run's command's
	// grace, in a recorded run of torture -singleton; the SIGTERM
	// hand-over's bound grows by it. Zero elsewhere.
	StopGrace time.Duration
	// CallMax is the longest one system call or request can take in a
	// simulated run: its latency's upper bound, its slow calls' and its
	// slow process's on top. The liveness bounds grow with it (a hand-over
	// is a few dozen calls), so that a run whose every call is slow is not
	// judged as a fast one. Zero for a recorded trace.
	CallMax time.Duration
	// Capped reports that the simulator stopped the run before its
	// horizon at its default cap on system calls (sim.Config.MaxSyscalls),
	// which no process that waits between attempts comes near: its
	// processes spun, even where each one's spinning kept resetting the
	// others' quiet (two that write in a tight loop). No-busy-loop judges
	// it.
	Capped bool
	// SharedPIDs reports that processes of the run may share a PID (PID
	// namespaces of their own: the simulator's samepid): ProcName tells
	// them apart.
	SharedPIDs bool
	// Setup describes the configuration that produced the run, in the
	// simulator's flag syntax, with what became of each configured fault.
	// Nil for a recorded trace, whose faults are its events.
	Setup fmt.Stringer
}

// Wake is one of Trace.Wakes: activity Act of process Proc woke at true
// time T because a wait on its clock ran out.
type Wake struct {
	T    int64
	Proc int16
	Act  int16
}

// DirCounts is how many names a directory held over a run.
type DirCounts struct {
	// Watched reports whether the directory was counted (a simulated run).
	Watched bool
	// Start is the count before any process ran: names the run's setup
	// placed there, which the processes did not write.
	Start int
	// Peaks are the instants at which the count first exceeded every
	// count before it, in order.
	Peaks []DirPeak
}

// DirPeak is a directory's name count at true time T.
type DirPeak struct {
	T int64
	N int
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
	Files []File // the file system at the end
	// LockDir is how many names the lock's directory held (simulated runs
	// only): at the start, and each time the count rose above every count
	// before it.
	LockDir DirCounts
	// Run is what ran.
	Run Run
	// Recorded marks a trace of real processes (NewRecorded): what a
	// server did on its own, such as expiring a record, is not in it.
	Recorded bool
	// Wakes are the instants at which a process's code woke from a wait
	// on its own clock (a sleep, a ticker's tick, a wait for a change
	// that timed out), as the simulator's clock saw them run out, in time
	// order (simulated runs only: a recorded trace has none). They are
	// not steps: a wake is where the step that follows it begins.
	Wakes []Wake

	arena   []byte
	last    string // the string most recently put in the arena
	lastRef Str
}

// Setup describes the configuration that produced the run: Run.Setup's
// description, or for a recorded trace its variant, lock and lease.
func (tr *Trace) Setup() string {
	if tr.Run.Setup != nil {
		return tr.Run.Setup.String()
	}
	c := tr.Run.Lease
	return fmt.Sprintf("variant=%s lease=%v renew=%v watch=%v (recorded)", tr.Run.Variant, c.LeaseDuration, c.RenewInterval, c.WatchInterval)
}

// S returns the string s refers to.
func (tr *Trace) S(s Str) string { return string(tr.arena[s.off : s.off+s.n]) }

// Str puts s in the trace's arena and returns its reference. Paths
// repeat, so the last one is remembered.
func (tr *Trace) Str(s string) Str {
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

// Bytes puts b in the arena and returns its reference.
func (tr *Trace) Bytes(b []byte) Str {
	r := Str{uint32(len(tr.arena)), uint32(len(b))}
	tr.arena = append(tr.arena, b...)
	return r
}

// buffers recycles the memory of traces that callers Release: a search
// runs thousands of runs and keeps the traces of few.
var buffers sync.Pool

type memory struct {
	events []Event
	arena  []byte
	wakes  []Wake
}

// New returns an empty trace whose event and string memory may be
// recycled from a trace given back with Release.
func New() *Trace {
	tr := &Trace{}
	if m, ok := buffers.Get().(*memory); ok {
		tr.Events, tr.arena, tr.Wakes = m.events[:0], m.arena[:0], m.wakes[:0]
	} else {
		tr.Events, tr.arena = make([]Event, 0, 256), make([]byte, 0, 4096)
	}
	return tr
}

// Release gives the trace's memory back for reuse by later traces. The
// trace must not be used afterwards.
//
// The memory of a trace larger than a run's usual (a process that spins
// makes a million events) is left to the garbage collector instead: once
// pooled, it would be handed to run after run, each trace of a search's
// window holding a spinning run's worth of memory (a check of a spinning
// variant grew to gigabytes that way).
func (tr *Trace) Release() {
	if tr.Events == nil {
		return
	}
	if cap(tr.Events) <= maxPooledEvents && cap(tr.arena) <= maxPooledArena && cap(tr.Wakes) <= maxPooledEvents {
		buffers.Put(&memory{events: tr.Events, arena: tr.arena, wakes: tr.Wakes})
	}
	tr.Events, tr.arena, tr.Wakes, tr.last = nil, nil, nil, ""
}

// The largest event and string memory Release pools: the 99th
// percentile of a check's runs on the variants with faults (a few hundred
// events for a simulated minute, 2,000 to 5,500 at the 99th). A pooled
// buffer keeps the largest capacity a run grew it to, and a search's
// pooled buffers are live heap that the collector's pacing multiplies:
// at 1<<14 events (1.5 MB) a check of the reference held 220 MB at its
// peak on two cores and touched 52,000 fresh pages; at 1<<12, 119 MB
// and 31,000 (see the README's Performance section).
const (
	maxPooledEvents = 1 << 12
	maxPooledArena  = 1 << 17
)

// ProcName names process p in the checker's words and the trace's
// labels: its PID, and, in a run whose processes may share PIDs, its
// index after a '#' when another process has its PID ("1#2": the third
// process, PID 1).
func (tr *Trace) ProcName(p int) string {
	pid := tr.Procs[p].PID
	name := strconv.Itoa(pid)
	if tr.Run.SharedPIDs {
		for q := range tr.Procs {
			if q != p && tr.Procs[q].PID == pid {
				return name + "#" + strconv.Itoa(p)
			}
		}
	}
	return name
}
