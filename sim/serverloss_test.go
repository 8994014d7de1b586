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

// With more processes, every watcher that saw the lost lease may detect
// the loss: the first to create holds its record, renewing it without
// leading, until the lost lease has ended, and the others find a live
// record and wait. (Found by review, 2026-12-05: when a detector gave its
// record back at once, the next one's create, and the release, moved the
// server's fresh counter past the lost version, and a later create above
// it was trusted: two leaders in 51 of 60 runs of three processes.) 2, 3
// and 5 processes, data lost at three instants of the renew cycle, 15
// seeds, each server kind.
func TestServerDataLossManyProcesses(t *testing.T) {
	double, runs := 0, 0
	for _, kind := range ServerKinds {
		for _, n := range []int{2, 3, 5} {
			for _, at := range []time.Duration{6*time.Second + 20*time.Millisecond, 7500 * time.Millisecond, 8900 * time.Millisecond} {
				for seed := uint64(1); seed <= 15; seed++ {
					cfg := Config{Variant: kind, Seed: seed, Horizon: 40 * time.Second,
						SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond}
					for i := range n {
						cfg.Procs = append(cfg.Procs, ProcSpec{PID: 100 * (i + 1), Start: time.Duration(i) * 100 * time.Millisecond})
					}
					w, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					w.faults = insertFault(w.faults, Fault{At: at, lose: kind})
					w.Run()
					runs++
					tr := w.Trace()
					if tr.MaxConcurrentLeaders() > 1 {
						if double++; double <= 3 {
							t.Errorf("%s, %d processes, seed %d, data lost at %v: two leaders: %+v", kind, n, seed, at, tr.Leadership())
						}
					}
					if iv := tr.Leadership(); len(iv) < 2 {
						t.Errorf("%s, %d processes, seed %d, data lost at %v: leadership %+v, want a term after the loss", kind, n, seed, at, iv)
					}
				}
			}
		}
	}
	t.Logf("%d of %d runs with two leaders", double, runs)
}
