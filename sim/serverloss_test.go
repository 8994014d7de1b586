package sim

import (
	"strings"
	"testing"
	"time"
)

// A lease server that restarts without its data (Redis without
// persistence; found by a probe of leaselab run, 2026-12-05: two commands
// ran at once for up to a renew interval, 2.8 s at the default intervals)
// makes no second leader: a watcher that saw a live lease, and then finds
// none with no release announced, waits that lease out as if it were
// there; the leader, whose renewal then fails, steps down by its deadline,
// before.
func TestServerDataLossMakesNoSecondLeader(t *testing.T) {
	for _, kind := range ServerKinds {
		for _, after := range []time.Duration{20 * time.Millisecond, 1500 * time.Millisecond} {
			cfg := Config{Variant: kind, Seed: 1, Horizon: 40 * time.Second,
				Procs:      []ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
			}
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// The leader's renewals come every 3 s from about 0: lose the
			// data this long after the one at 6 s.
			w.faults = insertFault(w.faults, Fault{At: 6*time.Second + after, lose: kind})
			w.Run()
			tr := w.Trace()
			if n := tr.MaxConcurrentLeaders(); n > 1 {
				t.Errorf("%s, data lost %v after a renewal: %d leaders at once: %+v", kind, after, n, tr.Leadership())
			}
			if !strings.Contains(strings.Join(tr.LogLines(), "\n"), "The store lost the lease held by 100") {
				t.Errorf("%s, data lost %v after a renewal: no watcher said the store lost the lease:\n%s", kind, after, strings.Join(tr.LogLines(), "\n"))
			}
			if iv := tr.Leadership(); len(iv) < 2 {
				t.Errorf("%s, data lost %v after a renewal: leadership %+v, want a second term after the loss", kind, after, iv)
			}
		}
	}
}

// What the loss's detection does not cover (found by review, 2026-12-05):
// with three processes or more, the watchers that detect the loss each
// create and give back a record, which moves the server's fresh counter
// past the lost version, and a later create above it is trusted; a
// detector's short-lived record also resets another's wait. Two leaders
// remain possible until the lost lease ends. This test holds the README
// to saying so: the day no run here has two leaders, it fails, and the
// README's "A server that loses its data" must change.
func TestServerDataLossThreeProcessesGap(t *testing.T) {
	double, runs := 0, 0
	for _, kind := range ServerKinds {
		for seed := uint64(1); seed <= 20; seed++ {
			w, err := New(Config{Variant: kind, Seed: seed, Horizon: 30 * time.Second,
				Procs:      []ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}, {PID: 300, Start: 200 * time.Millisecond}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			w.faults = insertFault(w.faults, Fault{At: 7500 * time.Millisecond, lose: kind})
			w.Run()
			runs++
			if w.Trace().MaxConcurrentLeaders() > 1 {
				double++
			}
		}
	}
	if double == 0 {
		t.Fatalf("no run of %d has two leaders after the loss: the gap is closed; update the README", runs)
	}
	t.Logf("%d of %d runs with three processes have two leaders after the server's data loss", double, runs)
}
