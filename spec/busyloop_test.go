package spec

import (
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

func TestBusyBound(t *testing.T) {
	def := lease.DefaultConfig()
	fast := def
	fast.LeaseDuration, fast.RenewInterval, fast.WatchInterval = 900*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	for _, c := range []struct {
		variant string
		cfg     lease.Config
		want    int
	}{
		{"seed", def, 64 * (1 + 1 + 3)},        // a renewal and a watch tick a second, the reaction, two one-off timers
		{"reference", def, 64 * (1 + 1 + 3)},   //
		{"redis", def, 64 * (1 + 1 + 3)},       //
		{"flock", def, 64 * (1 + 1 + 3 + 13)},  // and a back-off from 1 ms to 3 s: 1, 2, 4, ..., 2048, 3000 ms
		{"reference", fast, 64 * (4 + 4 + 3)},  // 300 ms: four ticks of each timer can fall in one second
		{"flock", fast, 64 * (4 + 4 + 3 + 10)}, // 1, 2, ..., 256, 300 ms
		{"seed", lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: time.Second, WatchInterval: time.Second}, 64 * (2 + 2 + 3)},
	} {
		v, err := lease.LookupVariant(c.variant)
		if err != nil {
			t.Fatal(err)
		}
		if got := BusyBound(v, c.cfg); got != c.want {
			t.Errorf("BusyBound(%s, renew %v, watch %v) = %d, want %d", c.variant, c.cfg.RenewInterval, c.cfg.WatchInterval, got, c.want)
		}
	}
}

// busyTrace is a hand-made run of the reference with two processes over
// 60 s: a disk stretch from 5 s to 45 s, and the calls that add adds.
type busyTrace struct{ tr *trace.Trace }

func newBusyTrace() *busyTrace {
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}}, Acts: [][]string{{"main"}, {"main"}},
		End: 60 * time.Second, Run: trace.Run{Variant: "reference", Lease: lease.DefaultConfig()}}
	return &busyTrace{tr}
}

func (b *busyTrace) add(e trace.Event) {
	b.tr.Events = append(b.tr.Events, e)
}

// stretch adds a disk stretch's start and end.
func (b *busyTrace) stretch(from, to time.Duration) {
	s := trace.Fault(-1, trace.DiskFull, to-from, 0, false, trace.Str{})
	s.T = int64(from)
	b.add(s)
	e := trace.FaultEnd(-1, trace.DiskFull, trace.Str{})
	e.T = int64(to)
	b.add(e)
}

// spin adds, for process p, an O_EXCL create failing with errno and a
// log line, every gap, from from to to.
func (b *busyTrace) spin(p int16, from, to, gap time.Duration, errno syscall.Errno) {
	for t := from; t < to; t += gap {
		b.add(trace.Event{T: int64(t), Proc: p, Kind: trace.EvSyscall, Op: trace.OpOpen, Flag: int32(lease.O_WRONLY | lease.O_CREATE | lease.O_EXCL), Errno: trace.ErrnoOf(errno)})
		b.add(trace.Event{T: int64(t + gap/2), Proc: p, Kind: trace.EvLog, Op: trace.OpLog, Msg: lease.MsgLostRace})
	}
}

// write adds a link(2) by process p at t, failing with errno (0: it took
// effect).
func (b *busyTrace) write(p int16, t time.Duration, errno syscall.Errno) {
	b.add(trace.Event{T: int64(t), Proc: p, Kind: trace.EvSyscall, Op: trace.OpLink, Errno: trace.ErrnoOf(errno)})
}

func (b *busyTrace) check() *Violation {
	sortEvents(b.tr)
	return CheckNoBusyLoop(b.tr)
}

// A process that retries a create failing with ENOSPC every 40 µs during a
// full disk is spinning; the same calls once a renew interval are not.
func TestNoBusyLoopSpinOnENOSPC(t *testing.T) {
	b := newBusyTrace()
	b.stretch(5*time.Second, 45*time.Second)
	b.spin(0, 10*time.Second, 11*time.Second, 40*time.Microsecond, syscall.ENOSPC)
	v := b.check()
	if v == nil {
		t.Fatal("a process retrying a failing create every 40 µs: no violation")
	}
	t.Log(v)
	bound := BusyBound(mustVariant(t, "reference"), lease.DefaultConfig())
	// The 321st call: calls come in pairs, 20 µs apart.
	if want := 10*time.Second + time.Duration(bound)*20*time.Microsecond; v.Property != NoBusyLoop || v.At != want || len(v.PIDs) != 1 || v.PIDs[0] != 100 {
		t.Errorf("violation %v (at %v, pids %v), want no-busy-loop of process 100 at %v", v, v.At, v.PIDs, want)
	}
	for _, s := range []string{"open O_EXCL = ENOSPC x25000", "log x25000", "since 5.000000s", "bound 320 a second"} {
		if !strings.Contains(v.Detail, s) {
			t.Errorf("detail %q does not say %q", v.Detail, s)
		}
	}

	b = newBusyTrace()
	b.stretch(5*time.Second, 45*time.Second)
	b.spin(0, 10*time.Second, 40*time.Second, 3*time.Second, syscall.ENOSPC)
	if v := b.check(); v != nil {
		t.Errorf("a failing create every 3 s: %v", v)
	}
}

// A failing call retried every 10 ms is a hundred failures a second, two
// hundred calls with its log lines: within BusyBound (320), past
// FailBound (36 with the post's intervals). The same retries failing with
// ENOENT (no record: an answer) break nothing, nor do failures every
// 50 ms (20 a second, with their log lines 40 calls).
func TestNoBusyLoopFailures(t *testing.T) {
	if got := FailBound(mustVariant(t, "reference"), lease.DefaultConfig()); got != 2*(1+1+3+13) {
		t.Fatalf("FailBound = %d, want 2 x 18", got)
	}
	b := newBusyTrace()
	b.stretch(5*time.Second, 45*time.Second)
	b.spin(0, 10*time.Second, 12*time.Second, 10*time.Millisecond, syscall.EMFILE)
	v := b.check()
	if v == nil {
		t.Fatal("a failing create retried every 10 ms: no violation")
	}
	t.Log(v)
	// The 37th failure, the bound's first past 36.
	if want := 10*time.Second + 36*10*time.Millisecond; v.Property != NoBusyLoop || v.At != want || v.PIDs[0] != 100 {
		t.Errorf("violation %v (at %v), want no-busy-loop of process 100 at %v", v, v.At, want)
	}
	for _, s := range []string{"failed system calls", "open O_EXCL = EMFILE x100", "bound 36 a second"} {
		if !strings.Contains(v.Detail, s) {
			t.Errorf("detail %q does not say %q", v.Detail, s)
		}
	}
	for _, c := range []struct {
		gap   time.Duration
		errno syscall.Errno
	}{{10 * time.Millisecond, syscall.ENOENT}, {10 * time.Millisecond, syscall.EEXIST}, {50 * time.Millisecond, syscall.EMFILE}} {
		b := newBusyTrace()
		b.stretch(5*time.Second, 45*time.Second)
		b.spin(0, 10*time.Second, 12*time.Second, c.gap, c.errno)
		if v := b.check(); v != nil {
			t.Errorf("a create failing with %v every %v: %v", c.errno, c.gap, v)
		}
	}
}

// What changes the world opens a new quiet stretch: a burst of calls after
// each write of another process is a reaction, not a spin, however many
// bursts a second; the same bursts after writes that failed, or after the
// process's own writes, are a spin.
func TestNoBusyLoopChanges(t *testing.T) {
	bursts := func(writer int16, errno syscall.Errno) *Violation {
		b := newBusyTrace()
		for k := range 20 {
			at := 10*time.Second + time.Duration(k)*100*time.Millisecond
			b.write(writer, at, errno)
			b.spin(0, at+time.Millisecond, at+2*time.Millisecond, 10*time.Microsecond, 0) // 100 calls
		}
		return b.check()
	}
	if v := bursts(1, 0); v != nil {
		t.Errorf("100 calls after each of another process's writes, ten a second: %v", v)
	}
	if v := bursts(1, syscall.ENOSPC); v == nil {
		t.Error("the same calls after writes that failed: no violation")
	}
	if v := bursts(0, 0); v == nil {
		t.Error("the same calls after the process's own writes: no violation")
	}
	// A fault is a change for every process.
	b := newBusyTrace()
	for k := range 20 {
		at := 10*time.Second + time.Duration(k)*100*time.Millisecond
		f := trace.Fault(1, trace.Stop, time.Millisecond, 0, false, trace.Str{})
		f.T = int64(at)
		b.add(f)
		b.spin(0, at+time.Millisecond, at+2*time.Millisecond, 10*time.Microsecond, 0)
	}
	if v := b.check(); v != nil {
		t.Errorf("100 calls after each fault: %v", v)
	}
}

// busyRuns checks runs of a search's setups with CheckNoBusyLoop and
// returns the first violation and its replay line.
func busyRuns(t *testing.T, variant, faults string, runs int) (*Violation, string) {
	t.Helper()
	kinds, err := sim.ParseFaults(faults)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.SetupOptions{Variant: variant, Faults: kinds}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		seed := RunSeed(1, i)
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			t.Fatal(err)
		}
		v := CheckNoBusyLoop(tr)
		tr.Release()
		if v != nil {
			return v, ReplayCommand(o, seed)
		}
	}
	return nil, ""
}

// No variant spins, in runs with every fault kind, nor with disk
// stretches, stalls and no boot id. (The reference did, until its failed
// creates and takeovers waited before the next try.)
func TestNoBusyLoopRuns(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 20
	}
	for _, v := range lease.Variants() {
		for _, faults := range []string{"all", "diskfull,eio,stall,nobootid"} {
			if vi, replay := busyRuns(t, v.Name, faults, runs); vi != nil {
				t.Errorf("%s, faults %s: %v\n  replay: %s", v.Name, faults, vi, replay)
			}
		}
	}
}

// registerSpinners registers, once, two mutants that spin beside a
// correct election: every process of spec-test-poll-server also reads the
// Redis record in a loop with no wait; every process of
// spec-test-write-spin also truncates a file of its own in a loop with no
// wait, so that each one's writes keep resetting the others' quiet.
var registerSpinners = sync.OnceFunc(func() {
	for _, m := range []struct {
		base, name string
		spin       func(p lease.Proc, s lease.Store, path string)
	}{
		{"redis", "spec-test-poll-server", func(p lease.Proc, s lease.Store, path string) {
			for {
				s.Read()
			}
		}},
		{"reference", "spec-test-write-spin", func(p lease.Proc, s lease.Store, path string) {
			name := path + ".spin." + strconv.Itoa(p.PID())
			for {
				if fd, err := p.Open(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644); err == nil {
					p.Close(fd)
				}
			}
		}},
	} {
		spin := m.spin
		registerWrapped(m.base, m.name, "a test's spinning mutant of "+m.base, func(run runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				p.Go("spin", func() { spin(p, s, path) })
				return run(p, s, path, cfg)
			}
		})
	}
})

// Processes that spin together are caught: reads of a server change
// nothing, so several processes polling it do not reset each other's
// quiet (found by review: 3 of them went unseen); and processes whose
// own writes keep resetting each other's quiet run into the simulator's
// cap on system calls, which is a violation of its own.
func TestNoBusyLoopTogether(t *testing.T) {
	registerSpinners()
	for _, c := range []struct {
		variant, want string
	}{
		{"spec-test-poll-server", "made"},
		{"spec-test-write-spin", "cap on system calls"},
	} {
		for procs := 1; procs <= 3; procs++ {
			o := sim.SetupOptions{Variant: c.variant, Procs: procs}
			if err := o.Normalize(); err != nil {
				t.Fatal(err)
			}
			tr, err := sim.Run(sim.RandomSetup(o, RunSeed(5, procs)))
			if err != nil {
				t.Fatal(err)
			}
			v := CheckNoBusyLoop(tr)
			switch {
			case v == nil:
				t.Errorf("%s, %d processes: no violation (run ended at %v, capped %v)", c.variant, procs, tr.End, tr.Run.Capped)
			case procs == 3 && !strings.Contains(v.Detail, c.want):
				t.Errorf("%s, %d processes: %v, want a detail with %q", c.variant, procs, v, c.want)
			default:
				t.Logf("%s, %d processes: %v", c.variant, procs, v)
			}
		}
	}
}

// The cap that ends a spinning run allows a correct process its timers'
// ticks, however short its intervals: at 150 ms the reference leading
// alone makes 53 calls a second, and a cap of 20,000 a process for ten
// minutes stopped it at 361 s, which no-busy-loop took for spinning
// (found by review of the cap's judgement).
func TestCapAllowsShortIntervals(t *testing.T) {
	for _, variant := range []string{"reference", "flock", "redis"} {
		cfg := sim.Config{Variant: variant, Horizon: 10*time.Minute - 2*time.Second,
			Lease: lease.Config{LeaseDuration: 450 * time.Millisecond, RenewInterval: 150 * time.Millisecond, WatchInterval: 150 * time.Millisecond},
			Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: time.Second}}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Run.Capped || tr.End < cfg.Horizon {
			t.Errorf("%s at 150 ms intervals: stopped at %v of %v (capped %v)", variant, tr.End, cfg.Horizon, tr.Run.Capped)
		}
		if v := CheckNoBusyLoop(tr); v != nil {
			t.Errorf("%s at 150 ms intervals: %v", variant, v)
		}
	}
}
