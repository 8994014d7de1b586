package sim

import (
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// NoticeFates are the fates a Notice fault gives the notices it touches.
var NoticeFates = []string{"lost", "delayed", "duplicated", "early"}

// The fault model. Every fault lands at a scheduling point: between two
// system calls of the process it hits, never inside one.
//
//   - Kill is SIGKILL: every activity of the process stops where it is, its
//     descriptors are closed, and its files stay exactly as they are.
//   - Term is SIGTERM: delivered to the program's handler if it has
//     installed one (AwaitShutdown), otherwise the default action kills.
//   - Stop is SIGSTOP, followed by SIGCONT after Dur: the process takes no
//     step meanwhile; its timers keep running and fire late.
//   - Suspend is the machine of one process suspended for Dur (a laptop's
//     lid, a paused VM; over a lease server shared by several machines,
//     or for a file variant a process on another machine sharing the
//     directory, as Skew): the process takes no step meanwhile, as under
//     Stop, and its clocks then read as Linux's do after a resume. Its
//     wall clock and Mono, which lease.Clock requires to count suspension
//     (CLOCK_BOOTTIME), ran on; CLOCK_MONOTONIC did not, which only a
//     runtime that reads it sees (Suspended). Only searches that name it
//     draw it (OptInFaults).
//   - Skew changes one process's wall-clock offset by Delta (a process in
//     another time namespace, or on another machine sharing the directory).
//   - Drift sets one process's clock rate error to PPM parts per million.
//   - Jump steps the machine's wall clock by Delta for every process at once
//     (NTP or an operator); monotonic clocks do not move.
//   - FSError makes the process's Nth system call of kind Call fail with
//     Errno (EIO, ENOSPC) without effect.
//   - Power is the whole machine losing power: every process dies at once,
//     and the file system keeps only what was durable (see
//     FileSystem.PowerLoss), unsynced data dropped, torn or kept as the
//     run chooses. Processes configured to start later start on what is
//     left: the machine's restart. With Dur set, the machine restarts Dur
//     after the loss, wherever it fell (a loss aimed after a call has no
//     time known in advance): every program of the config starts again
//     once, with its configuration, each within Delta of that instant (one
//     whose launch was still to come starts then instead: World.restart).
//     A loss aimed after a call (After) with At set falls at At if the
//     call has not come by then (its kind may be one the variant never
//     makes).
//   - DiskFull is a stretch of Dur during which the machine's disk is
//     full: every write, every open that creates a file and every link,
//     of every process, fails with ENOSPC without effect (truncation,
//     reads, renames and removals still work). With Call DiskNoBlocks
//     only its blocks are gone: writes fail, while creates (an empty file
//     needs only an inode) and links succeed; with DiskNoInodes only its
//     inodes are: creates fail, while writes and links succeed. DiskEIO
//     is the first stretch with EIO. A server variant's store is no file:
//     for it a DiskFull stretch is a full server (Redis at maxmemory,
//     etcd's space alarm, a database's full disk), refusing every write
//     request with ENOSPC before it takes effect while reads succeed, and
//     a DiskEIO stretch is the server unreachable: every request fails
//     with EIO, before or after it took effect (the run chooses), as a
//     connection dropped mid-request.
//   - Lose is the lease server restarted without its data (Redis without
//     persistence): its record and its version counter are gone, and
//     every subscriber's feed reconnects (a change notice, no release).
//     Only the server variants draw it, when it is named (OptInFaults).
//   - Stall is a stretch of Dur during which no process of the machine
//     takes a step, with no signal sent (a loaded VM whose virtual CPUs do
//     not run): timers keep running and fire late, as under SIGSTOP, and a
//     process that starts or is woken meanwhile runs when the stall ends.
//     A process also stopped by SIGSTOP stays stopped until its SIGCONT.
//   - EMFile is a stretch of Dur during which one process is out of file
//     descriptors (a leak elsewhere in its program, a low ulimit -n):
//     every open it makes, every read of a whole file and every listing
//     of a directory fails with EMFILE, while the other processes' calls succeed and the
//     descriptors it holds keep working. A leader that cannot renew while
//     its watchers can take over is where a deadline's margins are tested.
//   - Notice is a stretch of Dur during which every change notice a lease
//     server sends one process (variants whose claims say Pushed) meets
//     the fate Call names: "lost" (never delivered), "delayed" (by
//     Delta), "duplicated" (delivered, and again Delta later) or "early"
//     (delivered when the request that makes the change is sent, before
//     it takes effect, and not after). Each notice it touches is a fault
//     event of its own.
//
// A stretch's start is a fault event with the stretch as its pause
// (Event.PauseFor); its end is an End event (Event.Ended), as a Stop's
// SIGCONT is. Stretches of the same kind may overlap: the disk is full,
// or the machine stalled, until the last of them ends.
//
// A fault fires at true time At, or, when After is set, right after the
// process's Nth system call of kind After: "crash after the O_EXCL create,
// before the write" is {Kind: Kill, Proc: i, After: "open-excl", Nth: 1}.
// With Proc Leader, After counts the calls of that kind made by whichever
// process leads when it makes them (World.leads: it holds a leader
// context its user's code was given, or none does and its role report
// says leader), and the fault hits the process that made the Nth:
// "SIGTERM the leader right after its second renewal's link", wherever
// that falls in the run.
// A flock that waits counts once, when it returns; a signal can hit the
// process while it waits (a SIGKILL then releases whatever it holds, and
// it never gets the lock it waited for).

// The spaces a DiskFull stretch may lack alone (Fault.Call); "" is both.
const (
	DiskNoBlocks = "blocks" // writes fail; creates and links succeed
	DiskNoInodes = "inodes" // creates fail; writes and links succeed
)

// DiskSpaces are the values of a DiskFull fault's Call.
var DiskSpaces = []string{"", DiskNoBlocks, DiskNoInodes}

// Leader as a Fault's Proc means whichever process leads when the fault
// fires, by what its user's code was given (a live leader context) before
// what it reports (its role); if none does, the fault does nothing.
const Leader = -1

// Fault is one injected fault.
type Fault struct {
	Kind  trace.FaultKind
	At    time.Duration // true time of the fault, when After is empty
	Proc  int           // index into Config.Procs, or Leader
	After string        // fire right after the process's Nth call of this kind
	Nth   int           // 1-based; 0 means 1
	Dur   time.Duration // Stop, Suspend: how long the process is paused; Power: the restart's delay (World.restart); a stretch: its length
	Delta time.Duration // Skew, Jump: the step; Power with Dur: the spread of the processes' restarts
	PPM   int64         // Drift: the new rate error
	Call  string        // FSError: the kind of call that fails; DiskFull: the space it lacks alone (DiskSpaces)
	Errno syscall.Errno // FSError: the error it fails with
	// Follows, if set, chains the fault to another: the 1-based index in
	// Config.Faults of the fault it follows. With Proc zero it follows a
	// signal (SIGTERM or a pause) and fires right after the Nth system call,
	// of any kind, or reading of a clock (proc.aim), that the process the
	// signal hit makes after it: a pause or a crash in the middle of
	// handling a SIGTERM, or just after a SIGCONT. An injected error
	// (FSError, Proc zero) may also follow an injected error or a process's
	// running out of descriptors, and fails the Nth call that can fail (of
	// kind Call) the process makes after the fault it follows fires: errors
	// in a burst, or in a process's way back from a fault. With Proc Leader
	// it follows any fault that hits one process (a signal, a clock's
	// change, an I/O error, running out of descriptors) and fires at the
	// instant that fault fires, at whichever process leads then (an
	// aftershock: the leader fails while another process is in the middle of
	// recovering from its own fault; Nth must be zero). At must be zero.
	Follows int

	ends    trace.FaultKind // End: the kind of stretch that ends
	deliver *remote         // a notice delayed by a Notice fault, delivered to this client at At
	release bool            // that notice announces a release (lease.ReleaseHint)
	expire  *server         // etcd's expiry of this server's record at At, if it is still the one that ends then
	// lose, for a test, is a kind of server that restarts at At without
	// its data (Redis without persistence): the record and the counter
	// are gone, and each subscriber's feed reconnects (a change notice,
	// not a release).
	lose string
	idx  int // 1 + its index in Config.Faults (0: injected by the explorer), for Trace.Setup
	// aimed, on the timed copy of a power loss aimed after a call with
	// At set, is its trigger: the loss falls at At unless that has fired
	// (aimedRef).
	aimed *aimedRef
}

// aimedRef names the trigger of a power loss aimed after a call: the
// process whose triggers hold it, or Leader, and its index there.
type aimedRef struct{ proc, i int }

// FaultFate is what became of a configured fault in a run, as
// Trace.Setup reports it and Fates returns it.
type FaultFate uint8

// The fates of a configured fault.
const (
	// NeverFired: its time or call never came while its process lived
	// (the process had died, or the call it waited for was never made).
	NeverFired FaultFate = iota
	// Fired: it hit its process, or the machine.
	Fired
	// NoLeader: it was aimed at the leader and came while no process
	// led: no effect.
	NoLeader
)

const (
	neverFired = NeverFired
	fired      = Fired
	noLeader   = NoLeader
)

// Call kinds, as After and Call name them. An open matches "open" and, by
// its flags, "open-excl", "open-trunc" or "open-create".
// "any" is a call of any kind, or a reading of a clock (proc.aim; for an
// FSError, of any kind that can fail).
var callKinds = []string{"open", "open-excl", "open-trunc", "open-create", "write", "fsync", "close", "read", "stat", "remove", "rename", "link", "log", "flock", "rpc", "readdir", "any"}

func validCall(k string) bool {
	for _, c := range callKinds {
		if c == k {
			return true
		}
	}
	return false
}

// matches reports whether a call of op with flag is of kind k.
func matches(k string, op trace.Op, flag int) bool {
	switch k {
	case "open":
		return op == trace.OpOpen
	case "open-excl":
		return op == trace.OpOpen && flag&syscall.O_EXCL != 0
	case "open-trunc":
		return op == trace.OpOpen && flag&syscall.O_TRUNC != 0
	case "open-create":
		return op == trace.OpOpen && flag&syscall.O_CREAT != 0 && flag&syscall.O_EXCL == 0
	case "any":
		return true
	}
	return op.String() == k
}

func (f Fault) String() string {
	who := "leader"
	if f.Proc != Leader {
		who = "proc " + strconv.Itoa(f.Proc)
	}
	when := "at " + trace.Secs(int64(f.At))
	if f.After != "" {
		when = fmt.Sprintf("after %s #%d", f.After, max(f.Nth, 1))
	}
	if f.Follows > 0 && f.Proc == Leader {
		when = fmt.Sprintf("at once when fault %d fires", f.Follows)
	} else if f.Follows > 0 {
		who, when = "its process", fmt.Sprintf("after call #%d following fault %d", max(f.Nth, 1), f.Follows)
	}
	switch f.Kind {
	case trace.Stop, trace.Suspend:
		return fmt.Sprintf("%s %s %s for %v", f.Kind, who, when, f.Dur)
	case trace.Skew:
		return fmt.Sprintf("skew %s %s by %v", who, when, f.Delta)
	case trace.Drift:
		if f.Proc == Leader {
			return fmt.Sprintf("drift leader %s to %d ppm, every other process to %d ppm", when, f.PPM, -f.PPM)
		}
		return fmt.Sprintf("drift %s %s to %d ppm", who, when, f.PPM)
	case trace.Jump:
		if f.After != "" {
			when += " of " + who // (a step aimed after a call: whose call)
		}
		return fmt.Sprintf("jump wall clock %s by %v", when, f.Delta)
	case trace.Power:
		if f.After != "" && f.At > 0 {
			when += fmt.Sprintf(" (else at %s)", trace.Secs(int64(f.At)))
		}
		switch {
		case f.Dur > 0 && f.Delta > 0:
			return fmt.Sprintf("power loss %s, restart %v later (within %v)", when, f.Dur, f.Delta)
		case f.Dur > 0:
			return fmt.Sprintf("power loss %s, restart %v later", when, f.Dur)
		}
		return fmt.Sprintf("power loss %s", when)
	case trace.Lose:
		return fmt.Sprintf("the lease server loses its data %s", when)
	case trace.DiskFull, trace.DiskEIO, trace.Stall:
		return fmt.Sprintf("%s %s for %v", diskName(f.Kind, f.Call), when, f.Dur)
	case trace.EMFile:
		return fmt.Sprintf("emfile %s %s for %v", who, when, f.Dur)
	case trace.FSError:
		if f.Follows > 0 {
			return fmt.Sprintf("fserr its process: %s #%d following fault %d fails with %s", f.Call, max(f.Nth, 1), f.Follows, trace.ErrnoName(f.Errno))
		}
		return fmt.Sprintf("fserr %s: %s #%d fails with %s", who, f.Call, max(f.Nth, 1), trace.ErrnoName(f.Errno))
	case trace.Notice:
		fate := f.Call
		if f.Call == "delayed" || f.Call == "duplicated" {
			fate += " by " + f.Delta.String()
		}
		return fmt.Sprintf("notices to %s %s for %v: %s", who, when, f.Dur, fate)
	}
	return fmt.Sprintf("%s %s %s", f.Kind, who, when)
}

func (f Fault) validate(nprocs int, faults []Fault) error {
	if (f.Kind < trace.Kill || f.Kind > trace.Stall) && f.Kind != trace.EMFile && f.Kind != trace.Notice && f.Kind != trace.Lose && f.Kind != trace.Suspend {
		return fmt.Errorf("fault %d: unknown kind", f.Kind)
	}
	if f.Follows != 0 {
		if f.Follows < 0 || f.Follows > len(faults) || faults[f.Follows-1].Follows != 0 {
			return fmt.Errorf("fault %v: follows fault %d, which is not an unchained fault of the config", f.Kind, f.Follows)
		}
		followed := faults[f.Follows-1]
		if f.Proc == Leader {
			if machineWide(followed.Kind) || followed.Kind == trace.Jump || followed.Kind == trace.Power {
				return fmt.Errorf("fault %v: follows a %v, which hits no one process; only a fault of one process has an instant to strike the leader at", f.Kind, followed.Kind)
			}
			if f.Nth != 0 {
				return fmt.Errorf("fault %v: a fault at the leader fires when the fault it follows does: no call count", f.Kind)
			}
		} else if k := followed.Kind; k != trace.Term && !k.IsPause() && (f.Kind != trace.FSError || k != trace.FSError && k != trace.EMFile) {
			return fmt.Errorf("fault %v: follows a %v; only a SIGTERM or a pause (or, for an injected error, an injected error or running out of descriptors) leaves a process to follow", f.Kind, k)
		}
		if f.At != 0 || f.Proc != 0 && f.Proc != Leader {
			return fmt.Errorf("fault %v: a chained fault has its time, and its process unless it strikes the leader, from the fault it follows", f.Kind)
		}
		if f.Kind != trace.Kill && f.Kind != trace.Term && !f.Kind.IsPause() && (f.Kind != trace.FSError || f.Proc == Leader) || f.After != "" {
			return fmt.Errorf("fault %v: only a signal, at no call kind, or an injected error of the process can follow another", f.Kind)
		}
	}
	if f.Kind.IsStretch() {
		if f.After != "" {
			return fmt.Errorf("fault %v: a stretch starts at a time, not after a call", f.Kind)
		}
		if f.Dur <= 0 {
			return fmt.Errorf("fault %v: a stretch needs a positive duration", f.Kind)
		}
	}
	if !machineWide(f.Kind) && (f.Proc < Leader || f.Proc >= nprocs) {
		return fmt.Errorf("fault %v: no process %d (have %d)", f.Kind, f.Proc, nprocs)
	}
	if f.After != "" && (f.Proc < Leader || f.Proc >= nprocs) {
		// (A power loss after a call counts one process's calls: an index
		// past the processes was accepted, and New indexed them with it.)
		return fmt.Errorf("fault %v: counts the calls of process %d (have %d)", f.Kind, f.Proc, nprocs)
	}
	if f.After != "" && !validCall(f.After) {
		return fmt.Errorf("fault %v: unknown call kind %q (valid: %v)", f.Kind, f.After, callKinds)
	}
	if f.Kind == trace.FSError && (!validCall(f.Call) || f.Call == "log" || f.Errno == 0) {
		return fmt.Errorf("fserr fault needs a call kind that can fail (valid: %v, not log) and an errno", callKinds)
	}
	if f.Kind == trace.FSError && f.Proc == Leader {
		// (It was accepted, and New indexed the processes with it: a
		// panic, a probe found.)
		return fmt.Errorf("fserr fault: names a process, not the leader (a leader's calls are counted only for a crash point: After)")
	}
	if f.Kind == trace.Notice {
		if f.After != "" || f.Proc == Leader || f.Dur <= 0 {
			return fmt.Errorf("fault %v: notices to one process, from a time, for a positive duration", f.Kind)
		}
		if !slices.Contains(NoticeFates, f.Call) {
			return fmt.Errorf("fault %v: fate %q (valid: %v)", f.Kind, f.Call, NoticeFates)
		}
		if (f.Call == "delayed" || f.Call == "duplicated") && f.Delta <= 0 {
			return fmt.Errorf("fault %v: a %s notice needs a positive delay (Delta)", f.Kind, f.Call)
		}
	}
	if f.Kind == trace.DiskFull && !slices.Contains(DiskSpaces, f.Call) {
		return fmt.Errorf("fault %v: space %q (valid: %q)", f.Kind, f.Call, DiskSpaces)
	}
	if f.Kind == trace.Drift && f.PPM <= -1e6 {
		return fmt.Errorf("fault %v: drift %d ppm would stop the clock", f.Kind, f.PPM)
	}
	if f.Kind == trace.Power && f.Dur == 0 && f.Delta != 0 {
		return fmt.Errorf("fault %v: a restart's spread (Delta) without its delay (Dur)", f.Kind)
	}
	if f.Dur > MaxHorizon || f.Kind == trace.Power && f.Delta > MaxHorizon {
		// (A restart's delay near the largest duration overflowed into
		// processes starting at negative times, judged as leading at 0 s.)
		return fmt.Errorf("fault %v: a duration over %v", f.Kind, MaxHorizon)
	}
	if f.At < 0 || f.Dur < 0 || f.Kind == trace.Power && f.Delta < 0 {
		return fmt.Errorf("fault %v: negative time", f.Kind)
	}
	return nil
}

// machineWide reports whether faults of kind k hit the whole machine, not
// one process: their Proc is ignored.
func machineWide(k trace.FaultKind) bool {
	return k == trace.Jump || k == trace.Power || k == trace.Lose || k.IsStretch() && k != trace.EMFile
}

// CallKind names a call of op with flag as a fault's After and Call do:
// an open by its flags ("open-excl", "open-trunc", "open-create", or
// "open"), any other call by its name ("write", "rename").
func CallKind(op trace.Op, flag int) string {
	if op == trace.OpOpen {
		for _, k := range []string{"open-excl", "open-trunc", "open-create"} {
			if matches(k, op, flag) {
				return k
			}
		}
	}
	return op.String()
}
