package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// SetupOptions are the knobs of a random search; together with a run's
// seed they determine its setup (RandomSetup).
type SetupOptions struct {
	Variant string
	// Procs is the number of processes; 0 draws 2 to 5.
	Procs int
	// Faults are the kinds of fault a run may get.
	Faults []trace.FaultKind
	// MaxDriftPPM bounds drift rates (default 1000: 0.1%).
	MaxDriftPPM int64
	// Lease holds the intervals (zero: the post's).
	Lease lease.Config
	// Scheduler is "random" (default) or "pct".
	Scheduler string
}

// FaultKinds are the faults of a running machine, in the order names list
// them: "all" means these.
var FaultKinds = []trace.FaultKind{trace.Kill, trace.Term, trace.Stop, trace.Skew, trace.Drift, trace.Jump, trace.FSError}

// MachineFaults are the faults of the whole machine, chosen by name only
// ("all,power", "all,diskfull,eio,stall"), so that what "all" draws, and
// every replay line that names it, stays as it was: a power loss ends
// every process and needs a setup with the machine's restart; a full disk
// (diskfull) or a failing one (eio) lasts seconds to minutes; a stall
// stops every process for 1 to 3 s. "nobootid" is a machine without a
// boot id: half of the runs that name it get one (Config.NoBootID).
var MachineFaults = []trace.FaultKind{trace.Power, trace.DiskFull, trace.DiskEIO, trace.Stall, trace.NoBootID}

// faultChoices names every kind ParseFaults reads, for its error: the
// kinds that came first as they always read, then the stretches and
// nobootid.
func faultChoices() string {
	names := func(ks []trace.FaultKind) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.String())
		}
		return out
	}
	first := append(names(FaultKinds), names(MachineFaults[:1])...)
	return strings.Join(append(first, "all", "none"), ", ") + "; and " + strings.Join(names(MachineFaults[1:]), ", ")
}

// ParseFaults parses "kill,term", "all", "all,power" or "none".
func ParseFaults(s string) ([]trace.FaultKind, error) {
	switch s {
	case "all":
		return append([]trace.FaultKind(nil), FaultKinds...), nil
	case "none", "":
		return nil, nil
	}
	var out []trace.FaultKind
	seen := map[trace.FaultKind]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		kinds := FaultKinds
		if name != "all" {
			k, ok := faultByName(name)
			if !ok {
				return nil, fmt.Errorf("unknown fault %q (valid: %s)", name, faultChoices())
			}
			kinds = []trace.FaultKind{k}
		}
		for _, k := range kinds {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// FaultNames prints kinds as ParseFaults reads them.
func FaultNames(kinds []trace.FaultKind) string {
	if len(kinds) == 0 {
		return "none"
	}
	all := true
	for _, k := range FaultKinds {
		all = all && slices.Contains(kinds, k)
	}
	var names []string
	if all {
		names = append(names, "all")
	}
	for _, k := range kinds {
		if !all || !slices.Contains(FaultKinds, k) {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, ",")
}

func faultByName(name string) (trace.FaultKind, bool) {
	for _, k := range append(FaultKinds[:len(FaultKinds):len(FaultKinds)], MachineFaults...) {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// Normalize fills in defaults and validates the options.
func (o *SetupOptions) Normalize() error {
	if o.Variant == "" {
		o.Variant = "seed"
	}
	if _, err := lease.LookupVariant(o.Variant); err != nil {
		return err
	}
	if o.Procs < 0 || o.Procs > 64 {
		return fmt.Errorf("-procs %d: want 1 to 64 (0 draws 2 to 5)", o.Procs)
	}
	if o.MaxDriftPPM == 0 {
		o.MaxDriftPPM = 1000
	}
	if o.MaxDriftPPM < 0 || o.MaxDriftPPM >= 1e6 {
		return fmt.Errorf("max drift %d ppm: want 0 to 999999", o.MaxDriftPPM)
	}
	if o.Lease.LeaseDuration == 0 && o.Lease.RenewInterval == 0 && o.Lease.WatchInterval == 0 {
		o.Lease = lease.DefaultConfig()
	}
	v, _ := lease.LookupVariant(o.Variant)
	if err := v.CheckConfig(o.Lease); err != nil {
		return err
	}
	switch o.Scheduler {
	case "":
		o.Scheduler = "random"
	case "random", "pct":
	default:
		return fmt.Errorf("unknown scheduler %q (valid: random, pct)", o.Scheduler)
	}
	return nil
}

// The setup generator draws what makes races reachable (DESIGN.md): start
// offsets that coincide, as when a supervisor starts processes together;
// system calls that take time; timers that fire late. Fault magnitudes are
// the same for every variant, so results compare: pauses up to twice the
// lease, clock offsets and jumps up to plus or minus the lease, drift up to
// MaxDriftPPM.

// crashCalls are the call kinds a crash point may follow.
var crashCalls = []string{"open-excl", "open-create", "open-trunc", "write", "close", "fsync", "read", "stat", "remove", "rename", "link", "log"}

// errCalls are the call kinds an injected I/O error may hit.
var errCalls = []string{"open-excl", "open-create", "open-trunc", "write", "close", "fsync", "read", "remove", "rename", "link"}

// With flock: the same, and flock itself. (Separate lists, so that the
// setups drawn for the other variants, and their replay lines, stay as
// they were.)
var (
	crashCallsFlock = append(crashCalls[:len(crashCalls):len(crashCalls)], "flock")
	errCallsFlock   = append(errCalls[:len(errCalls):len(errCalls)], "flock")
	// A server variant's requests: a crash right after one (the request
	// took effect, its caller never learned) and a connection that breaks
	// during one.
	crashCallsServer = []string{"rpc", "log"}
	errCallsServer   = []string{"rpc"}
)

// RandomSetup returns the setup of the run with the given seed: a pure
// function of (o, seed), so that a run found by a search is replayed from
// its seed alone. o must be normalized.
func RandomSetup(o SetupOptions, seed uint64) Config {
	cfg := SetupFrom(o, NewPCG(seed, 0x5e7))
	cfg.Seed = seed // the run's own choices: another stream of the same seed
	return cfg
}

// SetupFrom draws a setup from c. The run's own choices (latencies,
// lateness, step order) are left to the caller: RandomSetup seeds them,
// a property test sets Config.Chooser so that one Chooser makes them all.
func SetupFrom(o SetupOptions, c Chooser) (cfg Config) {
	rng := chooserRand{c}
	lc := o.Lease
	lc.Callbacks = lease.Callbacks{}
	cfg = Config{
		Variant: o.Variant,
		Lease:   lc,
		Horizon: 4 * (lc.LeaseDuration + lc.WatchInterval),
	}
	n := o.Procs
	if n == 0 {
		n = 2 + rng.IntN(4)
	}
	// One to three launch instants in the first two seconds; a process
	// starts at one of them, exactly or within 200 µs.
	var launches []time.Duration
	for range 1 + rng.IntN(3) {
		launches = append(launches, time.Duration(rng.IntN(2000))*time.Millisecond)
	}
	for i := range n {
		start := launches[rng.IntN(len(launches))]
		if rng.IntN(2) == 0 {
			start += time.Duration(rng.IntN(200_000))
		}
		cfg.Procs = append(cfg.Procs, ProcSpec{PID: 1000 + 7*i + rng.IntN(7), Start: start})
	}
	cfg.SyscallMin = time.Duration(1+rng.IntN(10)) * time.Microsecond
	cfg.SyscallMax = cfg.SyscallMin + time.Duration(rng.IntN(100))*time.Microsecond
	cfg.TimerLateMax = time.Duration(rng.IntN(1000)) * time.Microsecond
	if o.Scheduler == "pct" {
		cfg.Scheduler = NewPCT(uint64(rng.IntN(1<<62)), 3, 200)
	}
	if len(o.Faults) == 0 {
		return cfg
	}
	// NoBootID is drawn last, from the setup's own stream, so that the
	// faults drawn with it are those drawn without it.
	kinds := o.Faults
	noBoot := slices.Contains(kinds, trace.NoBootID)
	if noBoot {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k trace.FaultKind) bool { return k == trace.NoBootID })
	}
	defer func() {
		if noBoot {
			cfg.NoBootID = rng.IntN(2) == 0
		}
	}()
	if len(kinds) == 0 {
		return cfg
	}
	crashCalls, errCalls := crashCalls, errCalls
	if v, err := lease.LookupVariant(o.Variant); err == nil && v.Claims.Handover == lease.KernelLock {
		crashCalls, errCalls = crashCallsFlock, errCallsFlock
	} else if err == nil && v.Claims.Handover == lease.ServerExpiry {
		crashCalls, errCalls = crashCallsServer, errCallsServer
	}
	lease := lc.LeaseDuration
	span := int64(cfg.Horizon * 3 / 4)
	power := false
	for range 1 + rng.IntN(4) {
		f := Fault{Kind: kinds[rng.IntN(len(kinds))], At: time.Duration(rng.Int64N(span))}
		f.Proc = rng.IntN(n)
		if rng.IntN(2) == 0 && f.Kind != trace.Jump && f.Kind != trace.FSError {
			f.Proc = Leader
		}
		switch f.Kind {
		case trace.Kill, trace.Term, trace.Stop:
			// Half of the signals land right after a given system call of a
			// process, wherever that falls: the narrow windows (between
			// create and write, between a takeover and the role hand-off)
			// that a uniformly drawn instant almost never hits.
			if rng.IntN(2) == 0 {
				f.Proc = rng.IntN(n)
				f.After = crashCalls[rng.IntN(len(crashCalls))]
				f.Nth = 1 + rng.IntN(4)
			}
			if f.Kind == trace.Stop {
				f.Dur = time.Duration(1 + rng.Int64N(int64(2*lease)))
			}
		case trace.Skew, trace.Jump:
			f.Delta = time.Duration(rng.Int64N(int64(2*lease)+1)) - lease
			if f.Kind == trace.Skew && f.Proc == Leader {
				f.Proc = rng.IntN(n)
			}
			if f.Kind == trace.Skew && rng.IntN(2) == 0 {
				f.At = 0 // a process whose clock is off from the start
			}
		case trace.Drift:
			// Half the time at the bound itself: extremes are where a drift
			// bound is crossed first.
			switch rng.IntN(4) {
			case 0:
				f.PPM = o.MaxDriftPPM
			case 1:
				f.PPM = -o.MaxDriftPPM
			default:
				f.PPM = rng.Int64N(2*o.MaxDriftPPM+1) - o.MaxDriftPPM
			}
			if f.Proc == Leader {
				f.Proc = rng.IntN(n)
			}
		case trace.Power:
			// One power loss a run, after the first two seconds; the
			// machine restarts 1 to 2 s later and every program starts
			// again, with its old PID, on what the disk kept.
			if power {
				continue
			}
			power = true
			f.Proc, f.At = 0, 2*time.Second+time.Duration(rng.Int64N(span))
			reboot := f.At + time.Second + time.Duration(rng.Int64N(int64(time.Second)))
			for i := range n {
				cfg.Procs = append(cfg.Procs, ProcSpec{PID: cfg.Procs[i].PID, Start: reboot + time.Duration(rng.Int64N(int64(time.Second)))})
			}
			cfg.Horizon = max(cfg.Horizon, reboot+3*(lc.LeaseDuration+lc.WatchInterval))
		case trace.DiskFull, trace.DiskEIO, trace.Stall:
			// A full or failing disk for seconds to minutes (1 s to 2 min,
			// each doubling of length as likely as the next); a stall of
			// 1 to 3 s, as a loaded VM has. The run goes on for two leases
			// and watches after the stretch ends: liveness is owed then.
			f.Proc = 0
			if f.Kind == trace.Stall {
				f.Dur = time.Second + time.Duration(rng.Int64N(int64(2*time.Second)+1))
			} else {
				base := time.Second << rng.IntN(7)
				f.Dur = base + time.Duration(rng.Int64N(int64(base)))
			}
			cfg.Horizon = max(cfg.Horizon, f.At+f.Dur+2*(lc.LeaseDuration+lc.WatchInterval))
		case trace.FSError:
			f.Call = errCalls[rng.IntN(len(errCalls))]
			f.Nth = 1 + rng.IntN(4)
			f.Errno = []syscall.Errno{syscall.EIO, syscall.ENOSPC}[rng.IntN(2)]
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	return cfg
}

// chooserRand gives a Chooser the methods of math/rand that SetupFrom uses.
type chooserRand struct{ c Chooser }

func (r chooserRand) IntN(n int) int       { return r.c.Choose(n) }
func (r chooserRand) Int64N(n int64) int64 { return int64(r.c.Choose(int(n))) }
