package sim

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// retimeProbe is what the test variant's process saw: its monotonic clock
// when it asked to wait (the target) and when it woke, for a sleep, two
// ticks and a timed wait for a change that never comes.
var retimeProbe struct {
	want, got []time.Duration
}

var registerRetimeVariant = sync.OnceValue(func() error {
	ref, err := lease.LookupVariant("reference")
	if err != nil {
		return err
	}
	return lease.Register(lease.Variant{
		Name: "test-retime", Summary: "sim's clock-rate test", NewStore: ref.NewStore,
		Run: func(p lease.Proc, _ lease.Store, path string, _ lease.Config) error {
			retimeProbe.want, retimeProbe.got = nil, nil
			saw := func(want time.Duration) {
				retimeProbe.want = append(retimeProbe.want, want)
				retimeProbe.got = append(retimeProbe.got, p.Mono())
			}
			start := p.Mono()
			p.Sleep(10 * time.Second)
			saw(start + 10*time.Second)
			tk := p.NewTicker(4 * time.Second)
			start = p.Mono()
			tk.Wait()
			saw(start + 4*time.Second)
			tk.Wait()
			saw(start + 8*time.Second)
			n := p.(lease.Notifier)
			dir := filepath.Dir(path)
			until := p.Mono() + 5*time.Second
			if n.WaitChange(dir, n.ChangeToken(dir), until) {
				return nil // (a change: the test fails on the missing wake)
			}
			saw(until)
			return nil
		},
	})
})

// A wait on the monotonic clock follows a change of its rate made while it
// waits, as CLOCK_MONOTONIC timers do under a slew: each wake-up comes when
// the process's own clock reads its target, not at the true instant
// reckoned at the old rate (which woke a sped-up process late and a slowed
// one early).
func TestWaitsFollowTheClockRate(t *testing.T) {
	if err := registerRetimeVariant(); err != nil {
		t.Fatal(err)
	}
	for _, ppm := range []int64{0, 500_000, -500_000, 281_224} {
		for _, at := range []time.Duration{2 * time.Second, 13 * time.Second, 19500 * time.Millisecond} {
			var faults []Fault
			if ppm != 0 {
				faults = []Fault{{Kind: trace.Drift, Proc: 0, At: at, PPM: ppm}}
			}
			cfg := Config{Variant: "test-retime", Seed: 1, Horizon: time.Minute, WallBase: DefaultWallBase,
				Procs: []ProcSpec{{PID: 100}}, Faults: faults}
			if _, err := Run(cfg); err != nil {
				t.Fatal(err)
			}
			want, got := slices.Clone(retimeProbe.want), slices.Clone(retimeProbe.got)
			if len(got) != 4 {
				t.Fatalf("ppm %d at %v: %d wakes, want 4", ppm, at, len(got))
			}
			for i := range want {
				// Woken at the first true nanosecond at which the clock
				// reads the target: at most a nanosecond and a half on.
				if d := got[i] - want[i]; d < 0 || d > 2 {
					t.Errorf("ppm %d at %v: wake %d at %v on its clock, want %v", ppm, at, i, got[i], want[i])
				}
			}
		}
	}
}
