package sim

import (
	"bytes"
	"github.com/leaselab/leaselab/trace"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The fast path in activity.point skips the scheduler when no choice
// exists. It must not change a single event of any run: this compares the
// full traces of runs with every fault kind, with and without it.
func TestFastPathChangesNothing(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		cfg := Config{
			Variant: []string{"seed", "seed-naive", "flock"}[seed%3],
			Seed:    seed,
			Horizon: 40 * time.Second,
			Procs: []ProcSpec{
				{PID: 10, Start: 0}, {PID: 20, Start: time.Duration(seed%3) * time.Millisecond},
				{PID: 30, Start: 700 * time.Millisecond, Skew: time.Duration(seed%5) * 300 * time.Millisecond, DriftPPM: int64(seed%4) * 250},
			},
			Faults: []Fault{
				{Kind: trace.Stop, Proc: Leader, At: 5 * time.Second, Dur: time.Duration(seed%7+1) * 2 * time.Second},
				{Kind: trace.Kill, Proc: 1, After: "open-trunc", Nth: int(seed%4) + 1},
				{Kind: trace.Jump, At: 17 * time.Second, Delta: time.Duration(int64(seed%3)-1) * 4 * time.Second},
				{Kind: trace.FSError, Proc: 2, Call: "write", Nth: 2, Errno: syscall.ENOSPC},
				{Kind: trace.Drift, Proc: 0, At: 3 * time.Second, PPM: 900},
				{Kind: trace.Skew, Proc: 2, At: 9 * time.Second, Delta: -2 * time.Second},
				{Kind: trace.Term, Proc: Leader, At: 30 * time.Second},
			},
			SyscallMin: time.Microsecond, SyscallMax: 20 * time.Microsecond, TimerLateMax: 50 * time.Microsecond,
		}
		run := func(slow bool) []byte {
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			w.noFastPath = slow
			w.Run()
			var b bytes.Buffer
			w.Trace().WriteTrace(&b)
			return b.Bytes()
		}
		fast, slow := run(false), run(true)
		if !bytes.Equal(fast, slow) {
			f, s := strings.Split(string(fast), "\n"), strings.Split(string(slow), "\n")
			i := 0
			for i < min(len(f), len(s)) && f[i] == s[i] {
				i++
			}
			t.Fatalf("seed %d: the fast path changed the run from trace line %d", seed, i+1)
		}
	}
}
