package sim_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// reading is one look at a process's clocks.
type reading struct {
	mono, suspended time.Duration
	wall            time.Time
}

var (
	clockReadingsMu sync.Mutex
	clockReadings   []reading
)

// registerClockReader registers a program that reads its clocks every
// second of its monotonic clock, 20 times.
var registerClockReader = sync.OnceFunc(func() {
	err := lease.Register(lease.Variant{
		Name: "sim-test-clock-reader", Summary: "reads its clocks every second",
		NewStore: func(p lease.Proc, path string) lease.Store { return nil },
		Run: func(p lease.Proc, _ lease.Store, _ string, _ lease.Config) error {
			s := p.(interface{ Suspended() time.Duration })
			for range 20 {
				p.Sleep(time.Second)
				r := reading{mono: p.Mono(), suspended: s.Suspended(), wall: p.Now()}
				clockReadingsMu.Lock()
				clockReadings = append(clockReadings, r)
				clockReadingsMu.Unlock()
			}
			return nil
		},
		Claims: lease.Claims{Handover: lease.Polled},
	})
	if err != nil {
		panic(err)
	}
})

// clockReadingsOf runs the clock reader alone with faults and returns
// what it read.
func clockReadingsOf(t *testing.T, faults ...sim.Fault) []reading {
	t.Helper()
	registerClockReader()
	clockReadingsMu.Lock()
	clockReadings = nil
	clockReadingsMu.Unlock()
	cfg := sim.Config{Variant: "sim-test-clock-reader", Seed: 1, Horizon: 40 * time.Second,
		Procs: []sim.ProcSpec{{PID: 100}}, Faults: faults}
	if _, err := sim.Run(cfg); err != nil {
		t.Fatal(err)
	}
	clockReadingsMu.Lock()
	defer clockReadingsMu.Unlock()
	return clockReadings
}

// A suspended machine's process takes no step while suspended; then its
// Mono and its wall clock have counted the suspension (CLOCK_BOOTTIME,
// as lease.Clock requires, and CLOCK_REALTIME), and Suspended says how
// long it lasted, which a SIGSTOP's pause leaves at zero.
func TestSuspendStopsTheProcessNotItsClocks(t *testing.T) {
	const at, dur = 3500 * time.Millisecond, 5 * time.Second
	for _, kind := range []trace.FaultKind{trace.Suspend, trace.Stop} {
		rs := clockReadingsOf(t, sim.Fault{Kind: kind, Proc: 0, At: at, Dur: dur})
		if len(rs) != 20 {
			t.Fatalf("%v: %d readings, want 20", kind, len(rs))
		}
		base := rs[0].wall.Add(-rs[0].mono)
		var resumed bool
		for i, r := range rs {
			if r.mono > at && r.mono < at+dur {
				t.Errorf("%v: reading %d at %v, within the pause", kind, i, r.mono)
			}
			if !r.wall.Equal(base.Add(r.mono)) {
				t.Errorf("%v: reading %d: wall %v, want %v (Mono and the wall clock both count a pause)", kind, i, r.wall, base.Add(r.mono))
			}
			want := time.Duration(0)
			if kind == trace.Suspend && r.mono >= at+dur {
				want = dur
			}
			if r.suspended != want {
				t.Errorf("%v: reading %d at %v: Suspended %v, want %v", kind, i, r.mono, r.suspended, want)
			}
			resumed = resumed || r.mono == at+dur
		}
		if !resumed {
			t.Errorf("%v: no reading at the resumption (%v): %v", kind, at+dur, rs)
		}
	}
}

// Suspensions add up; one that begins while another runs is not counted
// twice; a SIGCONT or an earlier suspension's end resumes the process,
// whose machine is then no longer suspended.
func TestSuspendedAddsUp(t *testing.T) {
	rs := clockReadingsOf(t,
		sim.Fault{Kind: trace.Suspend, Proc: 0, At: 1500 * time.Millisecond, Dur: 2 * time.Second}, // 1.5-3.5
		sim.Fault{Kind: trace.Suspend, Proc: 0, At: 5500 * time.Millisecond, Dur: 3 * time.Second}, // 5.5-8.5
		sim.Fault{Kind: trace.Suspend, Proc: 0, At: 7 * time.Second, Dur: 10 * time.Second},        // 7-8.5: the first resumption ends it
	)
	last := rs[len(rs)-1]
	if want := 2*time.Second + 3*time.Second; last.suspended != want {
		t.Errorf("suspended %v in all, want %v: %v", last.suspended, want, rs)
	}
	for _, r := range rs {
		if r.mono > 8500*time.Millisecond && r.mono < 17*time.Second && r.mono != r.mono.Truncate(time.Millisecond) {
			t.Errorf("odd reading %v", r.mono)
		}
	}
	var sawResumed bool
	for _, r := range rs {
		sawResumed = sawResumed || r.mono == 8500*time.Millisecond
	}
	if !sawResumed {
		t.Errorf("no reading at 8.5 s, where the overlapping suspensions end: %v", rs)
	}
}

// A suspend is named, validated and printed as a pause of one process; a
// search draws it only when named.
func TestSuspendIsOptIn(t *testing.T) {
	all, err := sim.ParseFaults("all")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range all {
		if k == trace.Suspend {
			t.Fatal(`"all" draws suspend: every search's draws would change`)
		}
	}
	ks, err := sim.ParseFaults("suspend,stop")
	if err != nil || len(ks) != 2 {
		t.Fatalf("ParseFaults(suspend,stop) = %v, %v", ks, err)
	}
	if s := (sim.Fault{Kind: trace.Suspend, Proc: sim.Leader, At: time.Second, Dur: 2 * time.Second}).String(); !strings.HasPrefix(s, "suspend leader at 1") || !strings.HasSuffix(s, "for 2s") {
		t.Errorf("String = %q", s)
	}
	cfg := sim.Config{Variant: "reference", Seed: 1, Horizon: 10 * time.Second, Procs: []sim.ProcSpec{{PID: 100}},
		Faults: []sim.Fault{{Kind: trace.Suspend, Proc: 3, At: time.Second, Dur: time.Second}}}
	if _, err := sim.Run(cfg); err == nil || !strings.Contains(err.Error(), "no process 3") {
		t.Errorf("a suspend of a process that does not exist: %v", err)
	}
	drawn := 0
	for seed := range uint64(50) {
		cfg := sim.SetupOptions{Variant: "redis", Faults: []trace.FaultKind{trace.Suspend}}
		if err := cfg.Normalize(); err != nil {
			t.Fatal(err)
		}
		for _, f := range sim.RandomSetup(cfg, seed).Faults {
			if f.Kind == trace.Suspend && f.Dur > 0 {
				drawn++
			}
		}
	}
	if drawn < 50 {
		t.Errorf("%d suspends drawn in 50 setups of -faults suspend", drawn)
	}
}
