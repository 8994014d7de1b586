package spec

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

func TestWakeRate(t *testing.T) {
	def := lease.DefaultConfig()
	for _, c := range []struct {
		ppm  int64
		want float64
	}{{0, 2.0 / 3}, {10_000, 1.01 * 2 / 3}, {500_000, 1.0}} {
		if got := WakeRate(def, c.ppm); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("WakeRate(post's intervals, %d ppm) = %v, want %v", c.ppm, got, c.want)
		}
	}
}

func TestWakeBound(t *testing.T) {
	def := lease.DefaultConfig()
	fast := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	for _, c := range []struct {
		cfg       lease.Config
		wake, all int
	}{
		{def, 1 + 1 + 3, 1 + 1 + 3 + 13},  // a tick of each timer a second at twice the rate; a back-off 1 ms ... 3 s
		{fast, 7 + 7 + 3, 7 + 7 + 3 + 10}, // 150 ms at twice the rate: seven ticks can fall in a second
	} {
		if got := WakeBound(c.cfg); got != c.wake {
			t.Errorf("WakeBound(%v/%v) = %d, want %d", c.cfg.RenewInterval, c.cfg.WatchInterval, got, c.wake)
		}
		if got := RetryWakeBound(c.cfg); got != c.all {
			t.Errorf("RetryWakeBound(%v/%v) = %d, want %d", c.cfg.RenewInterval, c.cfg.WatchInterval, got, c.all)
		}
	}
}

// wake adds a wake of process p's activity act at t.
func (b *busyTrace) wake(p, act int16, t time.Duration) {
	b.tr.Wakes = append(b.tr.Wakes, trace.Wake{T: int64(t), Proc: p, Act: act})
}

// wakes adds, for process p's activity act, a wake every gap from from to
// to, each followed 1 ms later by a read and a log line; the read fails
// with errno (0: it succeeds).
func (b *busyTrace) wakes(p, act int16, from, to, gap time.Duration, errno syscall.Errno) {
	for t := from; t < to; t += gap {
		b.wake(p, act, t)
		b.add(trace.Event{T: int64(t + time.Millisecond), Proc: p, Act: act, Kind: trace.EvSyscall, Op: trace.OpRead, Errno: trace.ErrnoOf(errno)})
		b.add(trace.Event{T: int64(t + time.Millisecond), Proc: p, Act: act, Kind: trace.EvLog, Op: trace.OpLog})
	}
}

func (b *busyTrace) checkWakes(t *testing.T) *Violation {
	t.Helper()
	b.tr.Acts = [][]string{{"main", "renew"}, {"main"}}
	slices.SortStableFunc(b.tr.Wakes, func(x, y trace.Wake) int { return cmp.Compare(x.T, y.T) })
	return b.check()
}

// A process that wakes on its own clock more often than its intervals
// allow, in quiet, spins slowly: a renewal every 100 ms, ten a second,
// under BusyBound's calls (30 a second here) but past WakeBound's 5.
// Wakes that retry a failure are bounded by RetryWakeBound instead; what
// changes the world opens a new quiet stretch, as for the calls.
func TestNoBusyLoopWakes(t *testing.T) {
	b := newBusyTrace()
	b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, 0)
	v := b.checkWakes(t)
	if v == nil {
		t.Fatal("a wake every 100 ms in quiet: no violation")
	}
	t.Log(v)
	if want := 10*time.Second + 5*100*time.Millisecond; v.Property != NoBusyLoop || v.At != want || v.PIDs[0] != 100 {
		t.Errorf("violation %v (at %v), want no-busy-loop of process 100 at %v (its sixth wake)", v, v.At, want)
	}
	for _, s := range []string{"woke on its own clock 6 times", "renew x6", "retries of a failure not counted", "bound 5 and 0.67 a second of the stretch", "since 0.000000s"} {
		if !strings.Contains(v.Detail, s) {
			t.Errorf("detail %q does not say %q", v.Detail, s)
		}
	}
	if len(v.Events) != 2 || b.tr.Events[v.Events[0]].T != int64(10*time.Second+time.Millisecond) {
		t.Errorf("events %v, want the first wake's read and the sixth's", v.Events)
	}

	// Two activities of one process count together: 3 + 3 in a second.
	b = newBusyTrace()
	b.wakes(0, 0, 10*time.Second, 11*time.Second, 300*time.Millisecond, 0)
	b.wakes(0, 1, 10*time.Second+time.Millisecond, 11*time.Second, 300*time.Millisecond, 0)
	if v := b.checkWakes(t); v == nil || !strings.Contains(v.Detail, "main x3, renew x3") {
		t.Errorf("two activities waking three times each in a second: %v", v)
	}

	for _, c := range []struct {
		name  string
		build func(b *busyTrace)
		want  string // "": no violation
	}{
		{"a wake every 3 s", func(b *busyTrace) { b.wakes(0, 1, 10*time.Second, 40*time.Second, 3*time.Second, 0) }, ""},
		{"a wake every 1.5 s of one activity, for 40 s", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 50*time.Second, 1500*time.Millisecond, 0)
		}, "all of one activity"},
		{"a wake every 3 s of each of two activities, for 40 s", func(b *busyTrace) {
			b.wakes(0, 0, 10*time.Second, 50*time.Second, 3*time.Second, 0)
			b.wakes(0, 1, 11500*time.Millisecond, 50*time.Second, 3*time.Second, 0)
		}, ""},
		{"a wake every 2.5 s of one activity, for 40 s", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 50*time.Second, 2500*time.Millisecond, 0)
		}, ""},
		// (a review's leader renewing six times as often: 2 a second is
		// under the first version's 5 a second)
		{"a wake every 500 ms for 24 s", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 34*time.Second, 500*time.Millisecond, 0)
		}, "retries of a failure not counted"},
		{"a wake every 500 ms for 4 s, then quiet", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 14*time.Second, 500*time.Millisecond, 0)
		}, "retries of a failure not counted"},
		{"a wake every 500 ms for 2 s", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 500*time.Millisecond, 0)
		}, ""},
		{"a wake every 100 ms, each after another process's write", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, 0)
			for t := 10*time.Second - time.Millisecond; t < 12*time.Second; t += 400 * time.Millisecond {
				b.write(1, t, 0)
			}
		}, ""},
		{"the same after the process's own writes", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, 0)
			for t := 10*time.Second - time.Millisecond; t < 12*time.Second; t += 400 * time.Millisecond {
				b.write(0, t, 0)
			}
		}, "retries of a failure not counted"},
		{"a retry every 100 ms of a failing read", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, syscall.EIO)
		}, ""},
		{"a retry every 50 ms of a failing read", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 50*time.Millisecond, syscall.EIO)
		}, "retries of failures included"},
		{"a read that finds nothing (ENOENT) every 100 ms", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, syscall.ENOENT)
		}, "retries of a failure not counted"},
		{"a failure in another activity excuses nothing", func(b *busyTrace) {
			b.wakes(0, 1, 10*time.Second, 12*time.Second, 100*time.Millisecond, 0)
			b.wakes(0, 0, 10*time.Second-time.Millisecond, 12*time.Second, 100*time.Millisecond, syscall.EIO)
		}, "retries of a failure not counted"},
	} {
		b := newBusyTrace()
		c.build(b)
		v := b.checkWakes(t)
		switch {
		case c.want == "" && v != nil:
			t.Errorf("%s: %v", c.name, v)
		case c.want != "" && (v == nil || !strings.Contains(v.Detail, c.want)):
			t.Errorf("%s: %v, want a violation that says %q", c.name, v, c.want)
		}
	}
}

// The simulator records a process's wakes on its clock: a sleep's, a
// ticker's, a wait for a change that timed out; not the workload's (the
// simulator's own code), and not a sleep a context cut short. A lone
// reference leading for a minute wakes once a renewal interval.
func TestSimRecordsWakes(t *testing.T) {
	cfg := sim.Config{Variant: "reference", Horizon: time.Minute,
		Procs: []sim.ProcSpec{{PID: 100}}}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	n := 0
	last := int64(-1)
	for _, w := range tr.Wakes {
		if w.T < last {
			t.Fatalf("wakes out of time order: %v after %v", w.T, last)
		}
		last = w.T
		if name := tr.Acts[w.Proc][w.Act]; name == "work" {
			t.Errorf("the workload's wake at %v recorded", time.Duration(w.T))
		}
		n++
	}
	t.Logf("%d wakes", n)
	// 60 s / 3 s: 19 renewals after the first (at 3 s ... 57 s), the loop's
	// wakes (give or take one at each end).
	if n < 18 || n > 21 {
		t.Errorf("%d wakes in a minute of one leader renewing every 3 s, want about 20", n)
	}
}

// registerSlowSpinners registers, once, two mutants of the reference that
// wait between their tries, too briefly: a leader that renews every
// RenewInterval/30, watchers that poll every 50 ms though the directory's
// notifications tell them of every change. Neither makes BusyBound's calls
// (a probe's: 465 renewals instead of 15, 1,959 listings instead of 123,
// in 48 s, no violation).
var registerSlowSpinners = sync.OnceFunc(func() {
	for _, m := range []struct {
		name   string
		change func(*lease.Config)
	}{
		{"spec-test-renew-often", func(c *lease.Config) { c.RenewInterval /= 30 }},
		{"spec-test-poll-notified", func(c *lease.Config) { c.Poll, c.WatchInterval = true, 50*time.Millisecond }},
	} {
		change := m.change
		registerWrapped("reference", m.name, "a test's slowly spinning mutant of the reference", func(run runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				change(&cfg)
				return run(p, s, path, cfg)
			}
		})
	}
})

func TestNoBusyLoopSlowSpinners(t *testing.T) {
	registerSlowSpinners()
	for _, c := range []struct{ variant, want string }{
		{"spec-test-renew-often", "main x6"},   // the leader's renewals
		{"spec-test-poll-notified", "main x6"}, // a watcher's polls
	} {
		tr, err := sim.Run(sim.Config{Variant: c.variant, Horizon: 10 * time.Second,
			Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		v := CheckNoBusyLoop(tr)
		if v == nil || !strings.Contains(v.Detail, c.want) {
			t.Errorf("%s: %v, want a violation with %q", c.variant, v, c.want)
		} else {
			t.Log(c.variant, v)
		}
		tr.Release()
	}
}
