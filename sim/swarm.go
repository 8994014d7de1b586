package sim

import (
	"fmt"
	"math/bits"
	"slices"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// only returns the kinds of kinds that are among want, in kinds' order:
// the signals on (SIGKILL, SIGTERM, pause), which an aftershock may be;
// the pauses and crashes on, which a fault chained to a signal may be.
func only(kinds []trace.FaultKind, want ...trace.FaultKind) []trace.FaultKind {
	var out []trace.FaultKind
	for _, k := range kinds {
		if slices.Contains(want, k) {
			out = append(out, k)
		}
	}
	return out
}

// chooserRand gives a Chooser the methods of math/rand that SetupFrom uses.
type chooserRand struct{ c Chooser }

func (r chooserRand) IntN(n int) int { return r.c.Choose(n) }

func (r chooserRand) Int64N(n int64) int64 { return int64(r.c.Choose(int(n))) }

// Swarm is what a run's swarm draw turned on (SetupFrom): the fault kinds
// it may get, a nonempty subset of those asked for (every kind off cannot
// be drawn), how many faults at most, and the scale of their magnitudes.
type Swarm struct {
	Kinds     []trace.FaultKind
	MaxFaults int // the run gets 1 to MaxFaults faults: 2, 4 or 8
	// LogScale draws pauses, clock offsets and jumps log-uniformly over
	// their range (1 us to twice the lease, to the lease), so that every
	// order of magnitude is as likely as the next, instead of uniformly
	// (where a pause under 10 ms is one in 1,800). A range is never cut,
	// only its shape changes: cutting it loses the long pauses that cross
	// a lease.
	LogScale bool
	// Lockstep (one run in four) makes every system call take the same
	// time and every timer fire on time: processes that wake together
	// stay in step, so their calls complete at the same instants and the
	// scheduler, not the jitter, orders them (the races explore finds by
	// running every step at one instant).
	Lockstep bool
	// SlowEvery, when positive (one run in two: 1 in 4 or 1 in 32 calls),
	// gives the run's system calls a long tail (Config.SlowEvery), up to a
	// thousandth of the lease: the preempted process whose slow read lets
	// another's write land in the middle of what it does.
	SlowEvery int
	// Mixed (one run in four) gives each process, with even odds, the
	// run's configuration or another one drawn for the run: the processes
	// of one lock in the middle of a rolling change of -lease, -renew,
	// -watch and the drift bound (drawMix).
	Mixed bool
	// SlowProc (one run in four) makes one process slow
	// (ProcSpec.Slow): every call of it takes up to a ten-thousandth of
	// the lease more (0.9 ms at the post's 9 s: a hand-over's dozen calls
	// stay within the 100 ms a SIGTERM's is allowed), so that its reads
	// are in flight while another's writes, renewals and releases land
	// (a watcher that listed the directory before a release and reads the
	// version after it).
	SlowProc bool
	// NearLease (one run in two) draws one pause in four within a tenth
	// of a lease below or above it (of the run's configuration or a mixed
	// run's other one): the pauses that end just before or just after a
	// record expires, where a deadline's margin is decided, and that a
	// draw over twice the lease reaches one time in ten.
	NearLease bool
}

// drawSwarm draws a run's swarm from the kinds asked for: each kind on
// or off with even odds, conditioned on some kind being on (a uniform draw
// of a nonempty subset), then the rate and the scale.
func drawSwarm(kinds []trace.FaultKind, rng chooserRand) Swarm {
	mask := 1 + rng.IntN(1<<len(kinds)-1)
	var sw Swarm
	for i, k := range kinds {
		if mask&(1<<i) != 0 {
			sw.Kinds = append(sw.Kinds, k)
		}
	}
	sw.MaxFaults = 2 << rng.IntN(3)
	sw.LogScale = rng.IntN(2) == 0
	sw.Lockstep = rng.IntN(4) == 0
	sw.SlowEvery = []int{0, 0, 4, 32}[rng.IntN(4)]
	sw.Mixed = rng.IntN(4) == 0
	sw.SlowProc = rng.IntN(4) == 0
	sw.NearLease = rng.IntN(2) == 0
	return sw
}

// drawMix gives each process of cfg, with even odds, lc or another valid
// configuration for variant v: a lease of a third to three times lc's,
// renewed every third of it, watched every third or ninth of it or at
// lc's watch interval, with lc's drift bound or twice it (never less: a
// bound below the world's drift is a wrong configuration, not a mix). It
// returns the other configuration, or false if v refuses it.
func drawMix(cfg *Config, v lease.Variant, lc lease.Config, rng chooserRand) (lease.Config, bool) {
	f := [][2]int64{{1, 3}, {1, 2}, {2, 3}, {3, 2}, {2, 1}, {3, 1}}[rng.IntN(6)]
	alt := lc
	alt.LeaseDuration = lc.LeaseDuration * time.Duration(f[0]) / time.Duration(f[1])
	alt.RenewInterval = alt.LeaseDuration / 3
	alt.WatchInterval = []time.Duration{alt.LeaseDuration / 3, alt.LeaseDuration / 9, lc.WatchInterval}[rng.IntN(3)]
	alt.RenewDeadline = 0 // derived from the lease and drift bound
	if rng.IntN(2) == 0 {
		alt.DriftBoundPPM = 2 * DriftBoundOf(lc)
	}
	if v.CheckConfig(alt) != nil {
		return lease.Config{}, false // (never at the post's intervals: every drawn mix is valid)
	}
	for i := range cfg.Procs {
		if rng.IntN(2) == 0 {
			cfg.Procs[i].Lease = alt
		}
	}
	cfg.Horizon = max(cfg.Horizon, 4*(alt.LeaseDuration+alt.WatchInterval))
	return alt, true
}

// String is the swarm as the setup line prints it:
// "kill,stop,fserr x8 log lockstep".
func (sw Swarm) String() string {
	lock := ""
	if sw.Lockstep {
		lock = " lockstep"
	}
	scale := ""
	if sw.LogScale {
		scale = " log"
	}
	slow := ""
	if sw.SlowEvery > 0 {
		slow = fmt.Sprintf(" slow=1/%d", sw.SlowEvery)
	}
	mixed := ""
	if sw.Mixed {
		mixed = " mixed"
	}
	if sw.SlowProc {
		mixed += " slowproc"
	}
	if sw.NearLease {
		mixed += " nearlease"
	}
	return fmt.Sprintf("%s x%d%s%s%s%s", FaultNames(sw.Kinds), sw.MaxFaults, scale, lock, slow, mixed)
}

// magnitude draws a duration in [1us, max]: uniformly, or, with logScale,
// log-uniformly (each doubling as likely as the next).
func magnitude(rng chooserRand, max time.Duration, logScale bool) time.Duration {
	if !logScale || max <= time.Microsecond {
		return time.Duration(1 + rng.Int64N(int64(max)))
	}
	span := bits.Len64(uint64(max / time.Microsecond)) // doublings from 1us
	lo := time.Microsecond << rng.IntN(span)
	return min(max, lo+time.Duration(rng.Int64N(int64(lo))))
}

// aimStep aims a swarm's wall-clock step f, drawn at an instant and by a
// step up to the lease either way: half of a swarm's steps land right
// after the Nth system call of a process, or of a leader, as half the
// signals do, and by about the lease (within a twentieth), forward or
// back. A step at a uniform instant almost never falls in a narrow window,
// such as the one between a create and the next process's create in
// flight, where a step forward makes a server drop the fresh record
// unseen (CI's property test found that bug once, at a random seed; the
// default command did not, in 10,000 runs). No draw is added: the call
// and the step come from the instant and the step drawn, so that the runs
// of every other swarm are drawn as they were.
func aimStep(f *Fault, lease time.Duration) {
	u := uint64(f.At)
	f.After, f.Nth, f.At = "any", 1+int(u%64), 0
	if u/64%2 == 0 {
		f.Proc = Leader
	}
	near := lease - lease/20 + f.Delta.Abs()%(lease/10+1)
	if f.Delta < 0 {
		near = -near
	}
	f.Delta = near
}

// sharePIDs gives the first n processes of cfg PIDs that repeat, as in
// PID namespaces of their own (containers sharing the lock's directory
// or the lease server): one time in two every process is PID 1 (each
// container's first process), else two drawn processes share the first's
// PID. A process restarted after a power loss (cfg.Procs past n) keeps
// the PID of the one it restarts.
func sharePIDs(cfg *Config, n int, rng chooserRand) {
	if n < 2 {
		return
	}
	cfg.SharedPIDs = true
	old := make([]int, n)
	for i := range n {
		old[i] = cfg.Procs[i].PID
	}
	if rng.IntN(2) == 0 {
		for i := range n {
			cfg.Procs[i].PID = 1
		}
	} else {
		a := rng.IntN(n)
		b := (a + 1 + rng.IntN(n-1)) % n
		cfg.Procs[b].PID = cfg.Procs[a].PID
	}
	for i := n; i < len(cfg.Procs); i++ {
		if j := slices.Index(old, cfg.Procs[i].PID); j >= 0 {
			cfg.Procs[i].PID = cfg.Procs[j].PID
		}
	}
}

// chainErrors chains to one in two of the faults that hit one process (an
// injected error, a SIGTERM, a pause, running out of descriptors) an
// injected error of that process: the Nth call of it that can fail after
// the fault fires, N up to 8, fails with EIO or ENOSPC (Fault.Follows).
// Only in a swarm with injected errors on (kinds holds FSError). Errors
// come in bursts on a failing disk, and a process's way back from a fault
// (the read after a write of unknown outcome, the first calls after a
// SIGCONT or in a SIGTERM's handler) is where a second error decides what
// it does; two errors drawn apart meet a few calls from each other almost
// never (the mutant catalogue: a renewal of unknown outcome whose read
// then failed stepped down with the user's context live, and 10,000 runs
// of -faults all missed it). No draw: the coin, N and the error come from
// a hash of the fault's instant, drawn for every fault, and its place, so
// that every other draw of a run (its boot ids, its shared PIDs) is as
// before.
func chainErrors(cfg *Config, kinds []trace.FaultKind) {
	if !slices.Contains(kinds, trace.FSError) {
		return
	}
	for i, nf := 0, len(cfg.Faults); i < nf; i++ {
		f := cfg.Faults[i]
		if f.Follows != 0 || f.Kind != trace.FSError && f.Kind != trace.Term && !f.Kind.IsPause() && f.Kind != trace.EMFile {
			continue
		}
		h := mix(uint64(f.At) ^ uint64(i+1)*0x9e3779b97f4a7c15) // (splitmix64's finalizer, as a state's name uses)
		if h&1 == 0 {
			continue
		}
		errno := []syscall.Errno{syscall.EIO, syscall.ENOSPC}[h>>1&1]
		cfg.Faults = append(cfg.Faults, Fault{Kind: trace.FSError, Follows: i + 1, Call: "any", Nth: 1 + int(h>>2%8), Errno: errno})
	}
}
