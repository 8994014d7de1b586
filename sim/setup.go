package sim

import (
	"fmt"
	"slices"
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
	// MaxDriftPPM bounds drift rates (default: the drift bound the
	// algorithm is configured for, DriftBoundOf(Lease): 1%).
	MaxDriftPPM int64
	// Lease holds the intervals (zero: the post's).
	Lease lease.Config
	// Scheduler is "random" (default), "pct", or "mixed": each run draws
	// one of the two (Config.Mixed says which), since each finds what the
	// other misses (the mutant catalogue, lease/mutants_test.go: a lost
	// wakeup PCT finds in 80 runs and random search not in 20,000; a
	// release racing a pause that random search finds and PCT does not).
	Scheduler string
	// Horizon is the simulated length of every run (0: four leases and
	// watch intervals, 48 s at the post's intervals). Faults are drawn
	// over its first three quarters; a stretch or a power loss drawn late
	// still lengthens the run, as it does the default's.
	Horizon time.Duration
}

// MaxHorizon is the longest Horizon a setup takes: a day of simulated
// time (a run of the reference makes about 10,000 system calls and keeps
// them all in its trace per process and simulated hour).
const MaxHorizon = 24 * time.Hour

// MinHorizon is the shortest run a search draws: faults are drawn at
// instants within it (a probe's -horizon 1ns drew from an empty range and
// panicked).
const MinHorizon = time.Millisecond

// FaultKinds are the faults of a process or its clock, in the order names
// list them. "emfile" is a stretch of one process's opens failing (it ran
// out of descriptors), lease/64 to eight leases long.
var FaultKinds = []trace.FaultKind{trace.Kill, trace.Term, trace.Stop, trace.Skew, trace.Drift, trace.Jump, trace.FSError, trace.EMFile}

// MachineFaults are the faults of the whole machine: a power loss ends
// every process and needs a setup with the machine's restart; a full disk
// (diskfull) or a failing one (eio) lasts seconds to minutes; a stall
// stops every process for 1 to 3 s. "nobootid" is a machine without a
// boot id: half of the runs that name it get one (Config.NoBootID).
// "samepid" runs the processes in PID namespaces of their own
// (containers): half of the runs that name it give every process PID 1,
// or two processes one PID (sharePIDs).
var MachineFaults = []trace.FaultKind{trace.Power, trace.DiskFull, trace.DiskEIO, trace.Stall, trace.NoBootID, trace.SamePID}

// DesignDriftPPM is the drift bound the design documents, 1%: the world's
// clocks drift up to it when the algorithm's config states none
// (DriftBoundPPM 0), and the checker judges by it. It is not
// lease.DefaultDriftPPM, the algorithm's own default: the world and the
// judge must not follow the code under test (a probe's mutant set that
// default to 0.1%, the world drifted no more, and 20,000 runs passed).
const DesignDriftPPM = 10_000

// DriftBoundOf is the drift bound config c states, or DesignDriftPPM.
func DriftBoundOf(c lease.Config) int64 {
	if c.DriftBoundPPM != 0 {
		return c.DriftBoundPPM
	}
	return DesignDriftPPM
}

// AllFaults is what "all" means: every kind, FaultKinds then
// MachineFaults. A run of a search over several kinds turns a drawn
// subset of them on (Swarm).
var AllFaults = append(append(FaultKinds[:len(FaultKinds):len(FaultKinds)], MachineFaults...), ServerFaults...)

// ServerFaults are the faults of a lease server's change notices
// (Notice): only the variants whose claims say Pushed draw them; a
// search of any other variant leaves them out, and draws as it did
// without them.
var ServerFaults = []trace.FaultKind{trace.Notice}

// OptInFaults are the kinds a search draws only when named ("all" leaves
// them out): Lose, a lease server restarted without its data, which a
// deployment with persistence (etcd, PostgreSQL, Redis with AOF) never
// has, and under which the reference is known to break fencing (epochs
// start again) and, for a process started after the loss, exclusive
// leadership. Only the server variants draw it. And Suspend, one
// process's machine suspended: to code that keeps the lease.Clock
// contract (Mono counts suspension) a pause like Stop, drawn as Stop is
// (a search naming both draws each as often); it tells apart only a
// runtime on CLOCK_MONOTONIC, so that "all" draws as it did before it.
var OptInFaults = []trace.FaultKind{trace.Lose, trace.Suspend}

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
	if o.Lease.LeaseDuration == 0 && o.Lease.RenewInterval == 0 && o.Lease.WatchInterval == 0 {
		o.Lease = lease.DefaultConfig()
	}
	if o.MaxDriftPPM == 0 {
		o.MaxDriftPPM = DriftBoundOf(o.Lease)
	}
	if o.MaxDriftPPM < 0 || o.MaxDriftPPM >= 1e6 {
		return fmt.Errorf("max drift %d ppm: want 0 to 999999", o.MaxDriftPPM)
	}
	v, _ := lease.LookupVariant(o.Variant)
	if err := v.CheckConfig(o.Lease); err != nil {
		return err
	}
	if len(o.Faults) == 1 && o.Faults[0] == trace.Notice && !v.Claims.Pushed {
		return fmt.Errorf("-faults notice: variant %s's store sends no change notices (the server variants' do)", o.Variant)
	}
	if len(o.Faults) == 1 && o.Faults[0] == trace.Lose && v.Claims.Handover != lease.ServerExpiry {
		return fmt.Errorf("-faults lose: variant %s's store is no lease server (the server variants' are)", o.Variant)
	}
	switch o.Scheduler {
	case "":
		o.Scheduler = "random"
	case "random", "pct", "mixed":
	default:
		return fmt.Errorf("unknown scheduler %q (valid: random, pct, mixed)", o.Scheduler)
	}
	if o.Horizon < 0 || o.Horizon > MaxHorizon || o.Horizon > 0 && o.Horizon < MinHorizon {
		return fmt.Errorf("-horizon %v: want a length of simulated time from %v to %v (0: four leases and watch intervals)", o.Horizon, MinHorizon, MaxHorizon)
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

// powerCalls are the call kinds a power loss may be aimed after: those
// that change the disk, whose effect the loss may take back (a server
// variant's: its requests).
var powerCalls = []string{"open-excl", "open-create", "open-trunc", "write", "fsync", "rename", "link", "remove", "close"}

// errCalls are the call kinds an injected I/O error may hit.
var errCalls = []string{"open-excl", "open-create", "open-trunc", "write", "close", "fsync", "read", "remove", "rename", "link"}

// With flock: the same, and flock itself. (Separate lists, so that the
// setups drawn for the other variants, and their replay lines, stay as
// they were.)
var (
	crashCallsFlock = append(crashCalls[:len(crashCalls):len(crashCalls)], "flock")
	errCallsFlock   = append(errCalls[:len(errCalls):len(errCalls)], "flock")
	// The reference's store lists its lock directory (a reader's listing,
	// the listing after a link that says whether the write stands).
	crashCallsListing = append(crashCalls[:len(crashCalls):len(crashCalls)], "readdir")
	errCallsListing   = append(errCalls[:len(errCalls):len(errCalls)], "readdir")
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

// calmFor is the fault-free phase a drawn run ends with (Config.Calm):
// two of its slowest process's leases and watch intervals, more than any
// variant's no-wedge bound (a lease, a watch interval, the variant's
// clock tolerance and the checker's slack), with room for the failover
// the last fault began to be judged in full.
func calmFor(cfg Config) time.Duration {
	l, w := cfg.Lease.LeaseDuration, cfg.Lease.WatchInterval
	for _, p := range cfg.Procs {
		l, w = max(l, p.Lease.LeaseDuration), max(w, p.Lease.WatchInterval)
	}
	return 2 * (l + w)
}

// SetupFrom draws a setup from c. The run's own choices (latencies,
// lateness, step order) are left to the caller: RandomSetup seeds them,
// a property test sets Config.Chooser so that one Chooser makes them all.
func SetupFrom(o SetupOptions, c Chooser) (cfg Config) {
	defer func() {
		// Drawn in leases (a pause up to two, a stretch up to eight), a
		// fault of a long lease may last longer than any run: at most
		// MaxHorizon (a probe's check with -lease 4h, which Validate
		// accepts, stopped at its first run: "fault emfile: a duration
		// over 24h0m0s", exit 1, no replay line).
		for i := range cfg.Faults {
			f := &cfg.Faults[i]
			f.Dur = min(f.Dur, MaxHorizon)
			if f.Kind == trace.Power {
				f.Delta = min(f.Delta, MaxHorizon)
			}
		}
		cfg.Calm = calmFor(cfg)
	}()
	rng := chooserRand{c}
	lc := o.Lease
	lc.Callbacks = lease.Callbacks{}
	cfg = Config{
		Variant: o.Variant,
		Lease:   lc,
		Horizon: min(4*(lc.LeaseDuration+lc.WatchInterval), MaxHorizon),
	}
	if o.Horizon > 0 {
		cfg.Horizon = o.Horizon
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
	pct := o.Scheduler == "pct"
	if o.Scheduler == "mixed" {
		pct, cfg.Mixed = rng.IntN(2) == 0, "random"
		if pct {
			cfg.Mixed = "pct"
		}
	}
	if pct {
		cfg.Scheduler = NewPCT(uint64(rng.IntN(1<<62)), 3, 200)
	}
	if len(o.Faults) == 0 {
		return cfg
	}
	// NoBootID is drawn last, from the setup's own stream, so that the
	// faults drawn with it are those drawn without it.
	kinds := o.Faults
	if v, err := lease.LookupVariant(o.Variant); err == nil {
		// A store that sends no notices draws no Notice; one that is no
		// lease server, no Lose.
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k trace.FaultKind) bool {
			return k == trace.Notice && !v.Claims.Pushed || k == trace.Lose && v.Claims.Handover != lease.ServerExpiry
		})
	}
	// SamePID too, after NoBootID (a deferred call runs after those
	// deferred later).
	if slices.Contains(kinds, trace.SamePID) {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k trace.FaultKind) bool { return k == trace.SamePID })
		defer func() {
			if rng.IntN(2) == 0 {
				sharePIDs(&cfg, n, rng)
			}
		}()
	}
	noBoot := slices.Contains(kinds, trace.NoBootID)
	if noBoot {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k trace.FaultKind) bool { return k == trace.NoBootID })
	}
	defer func() {
		if noBoot {
			// Half of the runs on a machine without a boot id; of the
			// others, half with some processes without one beside others
			// with one (containers on one volume; a probe: the two kinds
			// of epoch base repeated an epoch after a power loss, and no
			// run had both).
			cfg.NoBootID = rng.IntN(2) == 0
			if !cfg.NoBootID && rng.IntN(2) == 0 {
				for i := range cfg.Procs {
					cfg.Procs[i].NoBootID = rng.IntN(2) == 0
				}
			}
		}
	}()
	if len(kinds) == 0 {
		return cfg
	}
	crashCalls, errCalls, powerCalls := crashCalls, errCalls, powerCalls
	if v, err := lease.LookupVariant(o.Variant); err == nil && v.Claims.Handover == lease.KernelLock {
		crashCalls, errCalls = crashCallsFlock, errCallsFlock
	} else if err == nil && v.Claims.Handover == lease.ServerExpiry {
		crashCalls, errCalls, powerCalls = crashCallsServer, errCallsServer, errCallsServer
	} else if err == nil && v.Claims.Handover == lease.Notified && v.Epochs {
		crashCalls, errCalls = crashCallsListing, errCallsListing
	}
	variant, verr := lease.LookupVariant(o.Variant)
	lease := lc.LeaseDuration
	span := int64(cfg.Horizon * 3 / 4)
	power := false
	// Swarm testing (Groce et al., ISSTA 2012): a run over three kinds or
	// more turns on a drawn subset of them, with a drawn rate and shape,
	// so that the kinds that must coincide do in some runs, undiluted by
	// the others. One or two kinds draw as they always did: a user who
	// names a pair wants them together.
	most, logScale, swarm := 4, false, len(kinds) > 2
	leases, nearLease := []time.Duration{lc.LeaseDuration}, false
	if swarm {
		sw := drawSwarm(kinds, rng)
		kinds, most, logScale = sw.Kinds, sw.MaxFaults, sw.LogScale
		cfg.Swarm = sw.String()
		if sw.Lockstep {
			cfg.SyscallMax, cfg.TimerLateMax = cfg.SyscallMin, 0
		}
		if sw.SlowEvery > 0 {
			cfg.SlowEvery, cfg.SlowMax = sw.SlowEvery, max(lease/1000, time.Microsecond)
		}
		if sw.Mixed && verr == nil {
			if alt, ok := drawMix(&cfg, variant, lc, rng); ok {
				lease = max(lease, alt.LeaseDuration)
				leases = append(leases, alt.LeaseDuration)
			}
		}
		if sw.SlowProc {
			cfg.Procs[rng.IntN(n)].Slow = max(lc.LeaseDuration/10000, time.Microsecond)
		}
		nearLease = sw.NearLease
	}
	// pause draws a pause's length: up to twice the longest lease, or,
	// one time in four with NearLease, within a tenth of a lease of it.
	pause := func() time.Duration {
		if nearLease && rng.IntN(4) == 0 {
			l := leases[rng.IntN(len(leases))]
			return l - l/10 + time.Duration(rng.Int64N(int64(l/5)+1))
		}
		return magnitude(rng, 2*lease, logScale)
	}
	for range 1 + rng.IntN(most) {
		f := Fault{Kind: kinds[rng.IntN(len(kinds))], At: time.Duration(rng.Int64N(span))}
		f.Proc = rng.IntN(n)
		coin := rng.IntN(2) == 0 // (drawn for every kind: see the aimed steps below)
		if coin && f.Kind != trace.Jump && f.Kind != trace.FSError {
			f.Proc = Leader
		}
		switch f.Kind {
		case trace.Kill, trace.Term, trace.Stop, trace.Suspend:
			// Half of the signals land right after a given system call of a
			// process, wherever that falls: the narrow windows (between
			// create and write, between a takeover and the role hand-off)
			// that a uniformly drawn instant almost never hits.
			// In a swarm, a signal meant for the leader that lands after a
			// call lands after the Nth such call made by a leader (a
			// renewal's link, the log line of a fresh acquisition): the
			// leader's own windows, whoever leads then. (No draw added:
			// a run outside a swarm is drawn as it always was.)
			// In a swarm the call may also be "any": the Nth system call
			// of any kind, N up to 64, so that every gap between two calls
			// of a process (or of a leader, over its first eight or so
			// renewals) is as likely as the next, wherever its calls of
			// one kind fall.
			if rng.IntN(2) == 0 {
				leader := swarm && f.Proc == Leader
				f.Proc = rng.IntN(n)
				calls := crashCalls
				if swarm {
					calls = append(calls[:len(calls):len(calls)], "any")
				}
				f.After = calls[rng.IntN(len(calls))]
				f.Nth = 1 + rng.IntN(4)
				if f.After == "any" {
					f.Nth = 1 + rng.IntN(64)
				}
				if leader {
					f.Proc = Leader
				}
			}
			if f.Kind.IsPause() {
				f.Dur = pause()
			}
		case trace.Skew, trace.Jump:
			if logScale {
				f.Delta = magnitude(rng, lease, true) * time.Duration(1-2*rng.IntN(2))
			} else {
				f.Delta = time.Duration(rng.Int64N(int64(2*lease)+1)) - lease
			}
			if f.Kind == trace.Jump && swarm && coin {
				aimStep(&f, lease)
			}
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
			// In a swarm a drift meant for the leader is a split: the
			// leader's clock one way, every other's the other, the worst
			// a drift bound allows (a leader whose slow clock keeps its
			// term while a fast watcher's expires it). (No draw added.)
			if f.Proc == Leader && !swarm {
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
			// Half the losses land right after a given system call (the
			// Nth write, fsync, link... of a drawn process, or of whoever
			// leads): the window between a write and the fsync that makes
			// it durable, which an instant drawn uniformly almost never
			// hits (a probe's finding: a torn epoch record after a loss
			// there went unseen in 60,000 runs); if the call never comes,
			// at a drawn instant late in the run. The machine restarts 1 to
			// 2 s after the loss, wherever it falls (Fault.Dur). The coin
			// is the instant drawn above, unused by a loss at a time, so
			// that the other half are drawn as they always were.
			if f.At%2 == 1 {
				// (At: where it falls if its call never comes, in the
				// later half of the span, so that it seldom comes first.)
				f.At, f.Proc = 2*time.Second+time.Duration(span/2+rng.Int64N(span-span/2)), rng.IntN(n)
				if rng.IntN(2) == 0 {
					f.Proc = Leader
				}
				f.After, f.Nth = powerCalls[rng.IntN(len(powerCalls))], 1+rng.IntN(4)
				if rng.IntN(2) == 0 {
					// Or the Nth call of any kind, N up to 64: a kind
					// drawn above may be one the variant never makes (the
					// seed renames nothing), and every gap between two
					// calls is as likely as the next.
					f.After, f.Nth = "any", 1+rng.IntN(64)
				}
				f.Dur = time.Second + time.Duration(rng.Int64N(int64(time.Second)))
				f.Delta = time.Duration(rng.Int64N(int64(time.Second)))
				break
			}
			f.Proc, f.At = 0, 2*time.Second+time.Duration(rng.Int64N(span))
			reboot := f.At + time.Second + time.Duration(rng.Int64N(int64(time.Second)))
			for i := range n {
				cfg.Procs = append(cfg.Procs, ProcSpec{PID: cfg.Procs[i].PID, Start: reboot + time.Duration(rng.Int64N(int64(time.Second))), Lease: cfg.Procs[i].Lease, Slow: cfg.Procs[i].Slow})
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
			if f.Kind == trace.DiskFull {
				// Out of blocks and inodes, of blocks alone (a file can
				// be created, not written), or of inodes alone.
				f.Call = DiskSpaces[rng.IntN(len(DiskSpaces))]
			}
			cfg.Horizon = max(cfg.Horizon, f.At+f.Dur+2*(lc.LeaseDuration+lc.WatchInterval))
		case trace.Lose:
			// The server restarts empty at a drawn instant; the run goes on
			// for three leases and watches after it (a detector holds the
			// record it made until the lost lease has ended).
			f.Proc = 0
			cfg.Horizon = max(cfg.Horizon, f.At+3*(lc.LeaseDuration+lc.WatchInterval))
		case trace.Notice:
			// One process's notices, for lease/8 to 8 leases (each
			// doubling as likely as the next): all lost, delayed or
			// duplicated by up to two leases, or each early.
			f.Proc = rng.IntN(n)
			f.Call = NoticeFates[rng.IntN(len(NoticeFates))]
			base := lease / 8 << rng.IntN(7)
			f.Dur = base + time.Duration(rng.Int64N(int64(base)))
			if f.Call == "delayed" || f.Call == "duplicated" {
				f.Delta = max(magnitude(rng, 2*lease, true), time.Millisecond)
			}
		case trace.EMFile:
			// One process out of descriptors for lease/64 to 8 leases,
			// each doubling as likely as the next: a leader that cannot
			// renew while its watchers can take over (half of them are
			// aimed at the leader, as signals are).
			base := lease / 64 << rng.IntN(9)
			f.Dur = base + time.Duration(rng.Int64N(int64(base)))
			cfg.Horizon = max(cfg.Horizon, f.At+f.Dur+2*(lc.LeaseDuration+lc.WatchInterval))
		case trace.FSError:
			f.Call = errCalls[rng.IntN(len(errCalls))]
			f.Nth = 1 + rng.IntN(4)
			f.Errno = []syscall.Errno{syscall.EIO, syscall.ENOSPC}[rng.IntN(2)]
			// In a swarm, half the errors hit the Nth call of any kind
			// that can fail, N up to 64: one of the calls the process
			// really makes (a watcher makes only reads: an error drawn
			// for its writes never fires), anywhere in its first minute
			// or so, not only its first four of one kind.
			if swarm && rng.IntN(2) == 0 {
				f.Call, f.Nth = "any", 1+rng.IntN(64)
			}
		}
		cfg.Faults = append(cfg.Faults, f)
		// In a swarm, half the SIGTERMs and pauses get a second fault chained to them
		// (Fault.Follows): a pause or a crash of the same process a few
		// system calls after it, in the middle of its handler or of what
		// follows a SIGCONT, where two independent faults almost never
		// meet. (Found by the mutant catalogue: a SIGTERM handler that
		// releases before it steps down needs a pause between the two.)
		if chain := only(kinds, trace.Stop, trace.Kill); swarm && len(chain) > 0 && (f.Kind == trace.Term || f.Kind.IsPause()) && rng.IntN(2) == 0 {
			c := Fault{Kind: chain[rng.IntN(len(chain))], Follows: len(cfg.Faults), Nth: 1 + rng.IntN(8)}
			if c.Kind.IsPause() {
				c.Dur = pause()
			}
			cfg.Faults = append(cfg.Faults, c)
		}
	}
	// In a swarm, each fault that hits one process is, one time in two,
	// followed at its instant by a signal to whoever leads then (when a
	// signal kind is on): the leader dies, stops or is told to go while
	// another process is in the middle of its own fault, on the path that
	// recovers from it, where a delay turns into a failover's. (Found by
	// the mutant catalogue: a watcher whose failed read makes it wait a
	// watch interval fails over late only if the leader dies right then.)
	// Drawn after every other fault, so that those are drawn as before.
	if chain := only(kinds, trace.Kill, trace.Term, trace.Stop, trace.Suspend); swarm && len(chain) > 0 {
		for i, nf := 0, len(cfg.Faults); i < nf; i++ {
			f := cfg.Faults[i]
			if f.Follows != 0 || machineWide(f.Kind) || f.Kind == trace.Jump || f.Kind == trace.Power || rng.IntN(2) == 0 {
				continue
			}
			c := Fault{Kind: chain[rng.IntN(len(chain))], Follows: i + 1, Proc: Leader}
			if c.Kind.IsPause() {
				c.Dur = pause()
			}
			cfg.Faults = append(cfg.Faults, c)
		}
	}
	if swarm {
		chainErrors(&cfg, kinds)
	}
	return cfg
}
