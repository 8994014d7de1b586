package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// ProcSpec is one process of a run.
type ProcSpec struct {
	PID      int
	Start    time.Duration // true time at which the process starts
	Skew     time.Duration // its wall clock's offset from the machine's
	DriftPPM int64         // its clocks' rate error, parts per million
	// Slow, if positive, makes every system call of this process take up
	// to Slow longer (uniformly): a process on a throttled or overloaded
	// core, whose reads stay in flight while the others' writes land.
	Slow time.Duration
	// Lease, if its LeaseDuration is set, is this process's configuration
	// instead of Config.Lease: the processes of one lock in the middle of a
	// rolling change of -lease, -renew, -watch or the drift bound. Its
	// Callbacks are Config.Lease's.
	Lease lease.Config
	// NoBootID makes this process one that cannot tell its boot (a
	// container without /proc/sys/kernel/random/boot_id) beside processes
	// that can, on one lock directory (Config.NoBootID: the whole machine).
	NoBootID bool
}

// File is a file that exists before the run starts.
type File struct {
	Path string
	Data string
}

// Config determines a run completely, together with Seed.
type Config struct {
	Variant  string
	Lease    lease.Config
	Procs    []ProcSpec
	LockPath string
	// Horizon is the true time at which the run stops, unless Calm makes
	// it go on.
	Horizon time.Duration
	// Calm, if positive, is the fault-free phase every run ends with, as a
	// Jepsen test ends with a final heal: the run goes on until Calm has
	// passed since the last fault that took effect (a signal, a pause's
	// SIGCONT, the end of a stretch) and the last exit, however late a
	// fault drawn to follow a call or another fault fired. Liveness is
	// owed in it: a wedge that a late fault left (an empty lock file) is a
	// stretch longer than any no-wedge bound with nobody leading, not a
	// run that ended first. RandomSetup sets it; hand-made and explored
	// runs stop at their horizon.
	Calm time.Duration
	// Mixed is the scheduler a "mixed" search drew for the run ("random"
	// or "pct"; "" when the search named one).
	Mixed string
	// Swarm is the run's swarm draw, as the setup line prints it ("" for a
	// run over one kind of fault, or none): see Swarm.
	Swarm string
	// Seed drives every random choice the run makes: system-call latency,
	// timer lateness and, unless Scheduler is set, the order of steps
	// ready at the same instant.
	Seed uint64
	// WallBase is the machine's wall-clock time at true time 0.
	WallBase time.Time
	Faults   []Fault
	Files    []File
	// SyscallMin and SyscallMax bound a system call's latency: after a
	// call takes effect its caller resumes a uniform draw later.
	SyscallMin, SyscallMax time.Duration
	// TimerLateMax bounds how late a timer fires.
	TimerLateMax time.Duration
	// SlowEvery, if positive, makes one system call in SlowEvery (drawn
	// per call) slow: its caller resumes up to SlowMax later than the
	// latency above, log-uniformly (each halving of the delay as likely
	// as the next). A process preempted for a scheduler quantum, a page
	// fault, a cold inode: real latency has a long tail, and the narrow
	// windows between another process's calls (a release landing between
	// a watcher's read and what it does next) open only under it.
	SlowEvery int
	SlowMax   time.Duration
	// Scheduler orders steps ready at the same instant (default: Random
	// from Seed, or Chooser when that is set).
	Scheduler Scheduler
	// Chooser, if set, makes every random choice instead of Seed.
	Chooser Chooser
	// Explore, if set, makes the run one branch of a systematic search.
	Explore *Explore
	// NoBootID makes the machine one that cannot tell its boot (no
	// /proc/sys/kernel/random/boot_id): every process's BootID fails.
	NoBootID bool
	// SharedPIDs lets processes share a PID, as in PID namespaces of their
	// own (containers sharing the lock's directory or the lease server):
	// PIDs need only be positive. Without it, the processes of one boot
	// have distinct PIDs.
	SharedPIDs bool
	// MaxSyscalls stops the run, before its horizon, once its processes
	// have made that many system calls (0: DefaultMaxSyscallsPerProc for
	// each process and each SyscallSpan, begun, of the horizon; negative:
	// no limit). A process that retries a failing
	// call in a tight loop makes tens of thousands a simulated second; the
	// limit keeps such a run's cost and trace bounded, and its trace ends
	// where the run stopped (the setup line says so).
	MaxSyscalls int
}

// DefaultMaxSyscallsPerProc is the system calls a run allows per process
// unless Config.MaxSyscalls says otherwise (or its intervals are short:
// CallsPerTick): over four times the most that
// any process which waits between attempts made in runs RandomSetup drew
// (4,406: the flock variant, intervals of 300 ms, every fault kind and
// stretch, runs of up to three minutes); a process that spins reaches it
// in a simulated second or two. It is the allowance for each SyscallSpan
// of a run's horizon: a reference process that leads makes about 17,000
// an hour at the post's intervals, and a run of two hours under one cap
// stopped after 71 minutes.
const DefaultMaxSyscallsPerProc = 20_000

// SyscallSpan is the length of horizon that DefaultMaxSyscallsPerProc
// covers: every run RandomSetup draws without SetupOptions.Horizon is
// shorter (its stretches and power losses included), and gets one; a run
// of two hours gets twelve.
const SyscallSpan = 10 * time.Minute

// CallsPerTick is what the cap allows a process for each tick of its
// renewal timer and of its watch timer in a SyscallSpan, when that comes
// to more than DefaultMaxSyscallsPerProc (intervals shorter than about a
// second): a renewal is a dozen calls, a watcher's look a few, a takeover
// under twenty (the reference leading alone at 150 ms intervals made 8 a
// renewal tick). A process that spins makes thousands between ticks.
const CallsPerTick = 32

// syscallLimit is the run's limit on system calls (0: none): for each
// process, DefaultMaxSyscallsPerProc or CallsPerTick a tick of its timers,
// whichever is more, for each SyscallSpan, begun, of the run.
func (c Config) syscallLimit() int {
	switch {
	case c.MaxSyscalls > 0:
		return c.MaxSyscalls
	case c.MaxSyscalls == 0:
		spans := max(1, int((c.Horizon+c.Calm+SyscallSpan-1)/SyscallSpan))
		perSpan := 0
		for i := range c.Procs {
			l := c.ProcLease(i)
			ticks := ticksIn(SyscallSpan, l.RenewInterval) + ticksIn(SyscallSpan, l.WatchInterval)
			perSpan += max(DefaultMaxSyscallsPerProc, CallsPerTick*ticks)
		}
		return perSpan * spans
	}
	return 0
}

// ticksIn is how many ticks of a timer of period d a span holds.
func ticksIn(span, d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(span / d)
}

// Defaults used by Normalize.
const (
	DefaultLockPath = "/tmp/leader.lock"
	DefaultHorizon  = 60 * time.Second
)

// DefaultWallBase is the wall-clock time at true time 0 unless set: the
// instant the post's kill-leader experiment started (21:14:38).
var DefaultWallBase = time.Date(2025, 10, 14, 21, 14, 38, 0, time.UTC)

// Normalize fills in defaults and validates the config.
func (c *Config) Normalize() error {
	if c.Variant == "" {
		c.Variant = "seed"
	}
	if _, err := lease.LookupVariant(c.Variant); err != nil {
		return err
	}
	if c.Lease.LeaseDuration == 0 && c.Lease.RenewInterval == 0 && c.Lease.WatchInterval == 0 {
		cb := c.Lease.Callbacks
		c.Lease = lease.DefaultConfig()
		c.Lease.Callbacks = cb
	}
	v, _ := lease.LookupVariant(c.Variant)
	if err := v.CheckConfig(c.Lease); err != nil {
		return err
	}
	if len(c.Procs) == 0 {
		return errors.New("a run needs at least one process")
	}
	for i, p := range c.Procs {
		if p.Lease.LeaseDuration == 0 {
			continue
		}
		if err := v.CheckConfig(p.Lease); err != nil {
			return fmt.Errorf("process %d (pid %d): %w", i, p.PID, err)
		}
	}
	// PIDs are distinct among the processes that can run at once: after a
	// power loss, the machine's restart may give a program its old PID.
	var power []time.Duration
	for _, f := range c.Faults {
		if f.Kind == trace.Power {
			power = append(power, f.At)
		}
	}
	boot := func(start time.Duration) int {
		n := 0
		for _, at := range power {
			if at < start {
				n++
			}
		}
		return n
	}
	type bootPID struct{ boot, pid int }
	pids := map[bootPID]bool{}
	for _, p := range c.Procs {
		k := bootPID{boot(p.Start), p.PID}
		if p.PID <= 0 || pids[k] && !c.SharedPIDs {
			return fmt.Errorf("process ids must be positive and distinct (got %d)", p.PID)
		}
		pids[k] = true
		if p.Start < 0 {
			return fmt.Errorf("process %d starts at negative time %v", p.PID, p.Start)
		}
		if p.DriftPPM <= -1e6 {
			return fmt.Errorf("process %d: drift %d ppm would stop its clock", p.PID, p.DriftPPM)
		}
		if p.Slow < 0 {
			return fmt.Errorf("process %d: negative slowness %v", p.PID, p.Slow)
		}
	}
	if c.LockPath == "" {
		c.LockPath = DefaultLockPath
	}
	if !strings.HasPrefix(c.LockPath, "/") {
		return fmt.Errorf("lock path %q must be absolute", c.LockPath)
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.WallBase.IsZero() {
		c.WallBase = DefaultWallBase
	}
	if c.SlowEvery < 0 || c.SlowEvery > 0 && c.SlowMax <= 0 {
		return fmt.Errorf("slow calls: one in %d, up to %v: both must be positive", c.SlowEvery, c.SlowMax)
	}
	if c.SyscallMax < c.SyscallMin || c.SyscallMin < 0 || c.TimerLateMax < 0 {
		return fmt.Errorf("latency bounds out of order: syscall %v..%v, timer late %v", c.SyscallMin, c.SyscallMax, c.TimerLateMax)
	}
	for _, f := range c.Faults {
		if err := f.validate(len(c.Procs), c.Faults); err != nil {
			return err
		}
	}
	return nil
}

// callMax is the longest a system call can take in the run
// (trace.Run.CallMax): the latency's bound, a slow call's and the slowest
// process's on top.
func (c *Config) callMax() time.Duration {
	d := c.SyscallMax
	if c.SlowEvery > 0 {
		d += c.SlowMax
	}
	var slow time.Duration
	for _, p := range c.Procs {
		slow = max(slow, p.Slow)
	}
	return d + slow
}

// ProcLease is process i's configuration: its own (ProcSpec.Lease), with
// the run's callbacks, or the run's.
func (c *Config) ProcLease(i int) lease.Config {
	if l := c.Procs[i].Lease; l.LeaseDuration != 0 {
		l.Callbacks = c.Lease.Callbacks
		return l
	}
	return c.Lease
}

// String prints the config as the flags that reproduce it.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "variant=%s seed=%d lease=%v renew=%v watch=%v horizon=%v", c.Variant, c.Seed,
		c.Lease.LeaseDuration, c.Lease.RenewInterval, c.Lease.WatchInterval, c.Horizon)
	if c.Calm > 0 {
		fmt.Fprintf(&b, " calm=%v", c.Calm)
	}
	if c.Mixed != "" {
		fmt.Fprintf(&b, " scheduler=%s", c.Mixed)
	}
	if c.Swarm != "" {
		fmt.Fprintf(&b, " swarm=[%s]", c.Swarm)
	}
	if c.NoBootID {
		b.WriteString(" nobootid")
	}
	var some []string
	for i, p := range c.Procs {
		if p.NoBootID {
			some = append(some, strconv.Itoa(i))
		}
	}
	if len(some) > 0 {
		fmt.Fprintf(&b, " nobootid-procs=%s", strings.Join(some, ","))
	}
	if c.SharedPIDs {
		b.WriteString(" samepid")
	}
	for _, p := range c.Procs {
		fmt.Fprintf(&b, " proc=%d@%v", p.PID, p.Start)
		if p.Skew != 0 {
			fmt.Fprintf(&b, ",skew=%v", p.Skew)
		}
		if p.DriftPPM != 0 {
			fmt.Fprintf(&b, ",drift=%dppm", p.DriftPPM)
		}
		if p.Slow != 0 {
			fmt.Fprintf(&b, ",slow=%v", p.Slow)
		}
		if l := p.Lease; l.LeaseDuration != 0 {
			fmt.Fprintf(&b, ",lease=%v/%v/%v", l.LeaseDuration, l.RenewInterval, l.WatchInterval)
			if l.DriftBoundPPM != 0 {
				fmt.Fprintf(&b, "/%dppm", l.DriftBoundPPM)
			}
		}
	}
	for _, f := range c.Faults {
		fmt.Fprintf(&b, " fault=[%s]", f)
	}
	return b.String()
}
