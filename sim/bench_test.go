package sim

import (
	"iter"
	"runtime"
	"testing"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// benchConfig is a realistic run: the post's three processes on the seed
// variant (as package scenario starts them), with SIGKILL of the leader
// and a takeover, for a simulated minute.
func benchConfig(seed uint64) Config {
	cfg := Config{
		Variant:  "seed",
		Seed:     seed,
		WallBase: DefaultWallBase,
		Procs: []ProcSpec{
			{PID: 60217, Start: 530 * time.Millisecond},
			{PID: 60222, Start: 530*time.Millisecond + 50*time.Microsecond},
			{PID: 60226, Start: 620 * time.Millisecond},
		},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond, TimerLateMax: 100 * time.Microsecond,
	}
	cfg.Horizon = 60 * time.Second // (BenchmarkSimSyscallLong sets its own)
	cfg.Faults = []Fault{{Kind: trace.Kill, Proc: Leader, At: 12 * time.Second}}
	return cfg
}

// BenchmarkSimSyscall reports the cost of one simulated system call (one
// op) in a realistic run, everything included: setting up the world,
// scheduling, the coroutine switches, the simulated file system, the trace,
// the lease code itself (JSON, clock reads, log lines), and unwinding the
// activities still blocked when the run ends. Compare it with
// BenchmarkCoroutineSwitch in the same run.
func BenchmarkSimSyscall(b *testing.B) { benchSyscalls(b, 60*time.Second) }

// BenchmarkSimSyscallLong is BenchmarkSimSyscall with runs ten times as
// long (a simulated ten minutes, about 1,400 calls a run instead of 150):
// what a call costs once a run's fixed costs (its setup, and the Go
// runtime's unwinding of each coroutine still blocked at its end) are
// spread thin. The two together split a call's cost into its own and its
// share of the run's.
func BenchmarkSimSyscallLong(b *testing.B) { benchSyscalls(b, 600*time.Second) }

func benchSyscalls(b *testing.B, horizon time.Duration) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done, runs := 0, 0
	for seed := uint64(0); done < b.N; seed++ {
		// As sim.Run does for a search: the world on a finished one's
		// memory, given back at the end.
		cfg := benchConfig(seed)
		cfg.Horizon = horizon
		w, err := newWorld(cfg, getSpare(), nil)
		if err != nil {
			b.Fatal(err)
		}
		w.limit = b.N - done
		w.Run()
		done += w.Syscalls()
		runs++
		tr := w.tr
		w.recycle()
		tr.Release() // as a search does with the traces it does not keep
	}
	runtime.ReadMemStats(&after)
	// Per run, too: most of a run's memory is its setup, not its steps.
	b.ReportMetric(float64(done)/float64(runs), "syscalls/run")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(runs), "B/run")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(runs), "allocs/run")
}

// BenchmarkCoroutineSwitch is the floor: one iter.Pull round trip, the
// mechanism each simulated system call uses once.
func BenchmarkCoroutineSwitch(b *testing.B) {
	next, stop := iter.Pull(func(yield func(int) bool) {
		for i := 0; yield(i); i++ {
		}
	})
	defer stop()
	for b.Loop() {
		next()
	}
}
