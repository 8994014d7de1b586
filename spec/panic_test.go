package spec

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// panicAfter is a store whose process panics at its nth renewal: a
// user's fix with a bug the runtime catches.
type panicAfter struct {
	lease.Store
	n, renewals int
}

func (s *panicAfter) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if s.renewals++; s.renewals == s.n {
		var xs []int
		_ = xs[s.n] // index out of range
	}
	return s.Store.Renew(cur, ttl)
}

var registerPanicAfter = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	newStore := v.NewStore
	v.Name, v.Summary = "spec-test-panics", "the reference, whose store panics at its fourth renewal"
	v.NewStore = func(p lease.Proc, path string) lease.Store { return &panicAfter{Store: newStore(p, path), n: 4} }
	if err := lease.Register(v); err != nil {
		panic(err)
	}
})

// A user's fix that panics is a process that exits on its own, status 2,
// which no-own-exit reports with a replay line, and the run's excerpt
// says where it panicked: the search goes on instead of dying with the
// simulator's stack.
func TestSearchReportsAPanic(t *testing.T) {
	registerPanicAfter()
	_, _, f := firstNoOwnExit(t, "spec-test-panics")
	if f.Property != NoOwnExit || !strings.Contains(strings.Join(f.Excerpt, "\n"), "exited 2 (panic: runtime error: index out of range [4] with length 0 at spec/panic_test.go:") {
		t.Errorf("%s: %s\n%s", f.Property, f.Detail, strings.Join(f.Excerpt, "\n"))
	}
}

var registerTimerPanic = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	run := v.Run
	v.Name, v.Summary = "spec-test-timer-panics", "the reference, with a timer whose callback panics two seconds after it starts"
	v.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		n := 5
		p.(lease.MonoTimer).AfterMono(p.Mono()+2*time.Second, func() {
			var xs []int
			_ = xs[n] // index out of range
		})
		return run(p, s, path, cfg)
	}
	if err := lease.Register(v); err != nil {
		panic(err)
	}
})

// A panic in a callback of a process's timer (AfterMono), which the
// simulator calls from its own code, is the process's too: the search
// reports no-own-exit with where it panicked and a replay line, and the
// run replays exactly. (It crashed the whole search with the simulator's
// stack before, or ended another process, the one running.)
func TestSearchReportsATimerPanic(t *testing.T) {
	registerTimerPanic()
	s, rep, f := firstNoOwnExit(t, "spec-test-timer-panics")
	const exit = "exited 2 (panic: runtime error: index out of range [5] with length 0 at spec/panic_test.go:"
	if f.Property != NoOwnExit || !strings.Contains(strings.Join(f.Excerpt, "\n"), exit) ||
		!strings.HasPrefix(f.Replay, "leaselab replay -variant spec-test-timer-panics ") {
		t.Errorf("%s: %s\n%s\n%s", f.Property, f.Detail, f.Replay, strings.Join(f.Excerpt, "\n"))
	}
	t.Logf("%d runs, %d found: %s", rep.Runs, len(rep.Found), f.Replay)
	if run, same, err := s.Replays(rep); err != nil || !same || run != f.Run {
		t.Errorf("replay of run %d: same %v, %v", run, same, err)
	}
}

// firstNoOwnExit searches variant's first 20 runs (seed 1) for no-own-exit
// and returns the search, its report and the first violation found.
func firstNoOwnExit(t *testing.T, variant string) (Search, Report, Found) {
	t.Helper()
	s := Search{Setup: sim.SetupOptions{Variant: variant}, Runs: 20, Seed: 1, Properties: []string{NoOwnExit}}
	rep, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) == 0 {
		t.Fatalf("no violation in %d runs", rep.Runs)
	}
	return s, rep, rep.Found[0]
}
