package sim

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// timerProbe is what the test variant's process saw: the instants (its
// monotonic clock) at which its timers fired, and, at each of its wakes,
// how many had fired.
var timerProbe struct {
	fired []time.Duration
	seen  []int
}

var registerTimerVariant = sync.OnceValue(func() error {
	ref, err := lease.LookupVariant("reference")
	if err != nil {
		return err
	}
	return lease.Register(lease.Variant{
		Name: "test-monotimer", Summary: "sim's MonoTimer test", NewStore: ref.NewStore,
		Run: func(p lease.Proc, _ lease.Store, _ string, _ lease.Config) error {
			mt := p.(lease.MonoTimer)
			timerProbe.fired, timerProbe.seen = nil, nil
			move := mt.AfterMono(time.Second, func() { timerProbe.fired = append(timerProbe.fired, p.Mono()) })
			move(2 * time.Second) // moved later: fires once, at 2 s
			cancel := mt.AfterMono(1500*time.Millisecond, func() { timerProbe.fired = append(timerProbe.fired, -p.Mono()) })
			cancel(-1) // never fires
			for range 8 {
				p.Sleep(500 * time.Millisecond)
				timerProbe.seen = append(timerProbe.seen, len(timerProbe.fired))
			}
			return nil
		},
	})
})

// The simulator's MonoTimer fires a timer before the first step of its
// process at or after its instant (the process's code never sees the
// world past the instant without it), moved or cancelled as told; a
// paused process's timer fires when it resumes, before its code runs;
// a dead process's never.
func TestMonoTimer(t *testing.T) {
	if err := registerTimerVariant(); err != nil {
		t.Fatal(err)
	}
	run := func(faults ...Fault) ([]time.Duration, []int) {
		t.Helper()
		cfg := Config{Variant: "test-monotimer", Seed: 1, Horizon: 10 * time.Second, WallBase: DefaultWallBase,
			Procs: []ProcSpec{{PID: 100}}, Faults: faults}
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(timerProbe.fired), slices.Clone(timerProbe.seen)
	}
	fired, seen := run()
	// Wakes at 0.5, 1, 1.5, 2 s...: the one at 2 s is the first step at
	// the timer's instant, and sees it fired.
	if len(fired) != 1 || fired[0] != 2*time.Second || !slices.Equal(seen, []int{0, 0, 0, 1, 1, 1, 1, 1}) {
		t.Errorf("no faults: fired at %v, wakes saw %v; want [2s] and [0 0 0 1 1 1 1 1]", fired, seen)
	}
	again, seenAgain := run()
	if !slices.Equal(fired, again) || !slices.Equal(seen, seenAgain) {
		t.Errorf("not deterministic: %v %v, then %v %v", fired, seen, again, seenAgain)
	}
	// Stopped from 0.8 s to 3.8 s: the wake due at 1 s runs at 3.8 s,
	// after the timer.
	fired, seen = run(Fault{Kind: trace.Stop, Proc: 0, At: 800 * time.Millisecond, Dur: 3 * time.Second})
	if len(fired) != 1 || fired[0] != 3800*time.Millisecond || !slices.Equal(seen[:2], []int{0, 1}) {
		t.Errorf("paused across the instant: fired at %v, wakes saw %v; want [3.8s] and [0 1 ...]", fired, seen)
	}
	// Killed at 1.2 s: never fires.
	fired, _ = run(Fault{Kind: trace.Kill, Proc: 0, At: 1200 * time.Millisecond})
	if len(fired) != 0 {
		t.Errorf("killed before the instant: fired at %v", fired)
	}
}
