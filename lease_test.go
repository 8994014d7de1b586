package leaselab_test

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"pgregory.net/rapid"
)

// drawConfig draws a whole simulated setup: variant, processes with start
// offsets that often coincide (processes are started together in real
// life), clock skew and drift, and faults of every kind.
func drawConfig(t *rapid.T) sim.Config {
	variants := lease.Variants()
	v := rapid.SampledFrom(variants).Draw(t, "variant")
	n := rapid.IntRange(1, 4).Draw(t, "procs")
	cfg := sim.Config{
		Variant:      v.Name,
		Seed:         rapid.Uint64().Draw(t, "seed"),
		Horizon:      time.Duration(rapid.IntRange(5, 40).Draw(t, "horizon_s")) * time.Second,
		SyscallMin:   time.Microsecond,
		SyscallMax:   time.Duration(rapid.IntRange(1, 100).Draw(t, "syscall_max_us")) * time.Microsecond,
		TimerLateMax: time.Duration(rapid.IntRange(0, 1000).Draw(t, "timer_late_us")) * time.Microsecond,
	}
	for i := range n {
		cfg.Procs = append(cfg.Procs, sim.ProcSpec{
			PID: 100 + i,
			// Offsets on a 10 ms grid up to 4 s, so that starts coincide often.
			Start:    time.Duration(rapid.IntRange(0, 400).Draw(t, "start")) * 10 * time.Millisecond,
			Skew:     time.Duration(rapid.IntRange(-9, 9).Draw(t, "skew_s")) * time.Second,
			DriftPPM: int64(rapid.IntRange(-1000, 1000).Draw(t, "drift_ppm")),
		})
	}
	kinds := []sim.FaultKind{sim.Kill, sim.Term, sim.Stop, sim.Skew, sim.Drift, sim.Jump, sim.FSError}
	for range rapid.IntRange(0, 4).Draw(t, "faults") {
		f := sim.Fault{
			Kind: rapid.SampledFrom(kinds).Draw(t, "kind"),
			At:   time.Duration(rapid.IntRange(0, int(cfg.Horizon/time.Millisecond)).Draw(t, "at_ms")) * time.Millisecond,
			Proc: rapid.IntRange(-1, n-1).Draw(t, "proc"),
		}
		switch f.Kind {
		case sim.Stop:
			f.Dur = time.Duration(rapid.IntRange(1, 20000).Draw(t, "pause_ms")) * time.Millisecond
		case sim.Skew, sim.Jump:
			f.Delta = time.Duration(rapid.IntRange(-9000, 9000).Draw(t, "delta_ms")) * time.Millisecond
		case sim.Drift:
			f.PPM = int64(rapid.IntRange(-1000, 1000).Draw(t, "ppm"))
		case sim.FSError:
			f.Proc = rapid.IntRange(0, n-1).Draw(t, "fserr_proc")
			f.Call = rapid.SampledFrom([]string{"open-excl", "open-trunc", "write", "close", "read", "remove"}).Draw(t, "call")
			f.Nth = rapid.IntRange(1, 5).Draw(t, "nth")
			f.Errno = rapid.SampledFrom([]syscall.Errno{syscall.EIO, syscall.ENOSPC}).Draw(t, "errno")
		}
		if f.Kind == sim.Kill && rapid.Bool().Draw(t, "crash_point") {
			f.Proc = rapid.IntRange(0, n-1).Draw(t, "crash_proc")
			f.After = rapid.SampledFrom([]string{"open-excl", "open-trunc", "write", "close", "read", "remove", "log"}).Draw(t, "after")
			f.Nth = rapid.IntRange(1, 4).Draw(t, "crash_nth")
		}
		cfg.Faults = append(cfg.Faults, f)
	}
	return cfg
}

func traceBytes(t *rapid.T, cfg sim.Config) ([]byte, *sim.Trace) {
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var b bytes.Buffer
	if err := tr.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), tr
}

// A run is a pure function of its config and seed: two runs of the same
// drawn setup give the same trace, byte for byte.
func TestRunIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		a, tr := traceBytes(t, cfg)
		b, _ := traceBytes(t, cfg)
		if !bytes.Equal(a, b) {
			t.Fatalf("two runs of %s differ", tr.Config)
		}
	})
}

// Invariants of every simulated run, whatever the variant and faults:
// time never runs backwards, a dead process takes no further step, and a
// stopped process takes none until it is continued.
func TestTraceInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		_, tr := traceBytes(t, cfg)
		dead := map[int16]bool{}
		var last int64
		for i, e := range tr.Events {
			if e.T < last {
				t.Fatalf("event %d at %d ns after one at %d ns: %s", i, e.T, last, tr.Format(i))
			}
			last = e.T
			if e.Proc >= 0 && dead[e.Proc] {
				t.Fatalf("event %d of a dead process: %s", i, tr.Format(i))
			}
			if e.Kind == sim.EvExit {
				dead[e.Proc] = true
			}
		}
		if time.Duration(last) > tr.Config.Horizon {
			t.Fatalf("an event at %v, after the horizon %v", time.Duration(last), tr.Config.Horizon)
		}
	})
}

// Example_scenario runs the post's kill-leader experiment and prints the
// lines where the leader dies and a watcher takes over.
func Example_scenario() {
	s, _ := sim.LookupScenario("kill-leader")
	r, _ := s.Run(sim.Options{})
	for _, l := range r.Trace.LogLines() {
		if strings.HasPrefix(l, "18.") || strings.HasPrefix(l, "21.53s") {
			fmt.Println(l)
		}
	}
	fmt.Println("gap:", r.Fields["leaderless_gap_s"])
	// Output:
	// 18.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:56
	// 18.62s [Process: 60226] [WATCHER] Lease held by 60217, valid until 21:14:56
	// 21.53s [Process: 60222] [WATCHER] Lease held by 60217 expired at 21:14:56, attempting takeover
	// 21.53s [Process: 60222] [WATCHER] Takeover successful, now leader until 21:15:08
	// gap: 9.53
}
