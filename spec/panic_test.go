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
	s := Search{Setup: sim.SetupOptions{Variant: "spec-test-panics"}, Runs: 20, Seed: 1, Properties: []string{NoOwnExit}}
	rep, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) == 0 {
		t.Fatalf("no violation in %d runs", rep.Runs)
	}
	f := rep.Found[0]
	if f.Property != NoOwnExit || !strings.Contains(strings.Join(f.Excerpt, "\n"), "exited 2 (panic: runtime error: index out of range [4] with length 0 at spec/panic_test.go:") {
		t.Errorf("%s: %s\n%s", f.Property, f.Detail, strings.Join(f.Excerpt, "\n"))
	}
}
