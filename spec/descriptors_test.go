package spec

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// leakyStore opens a descriptor at each renewal and never closes it.
type leakyStore struct {
	lease.Store
	p lease.Proc
}

func (s leakyStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	s.p.Open("/tmp", lease.O_RDONLY, 0)
	return s.Store.Renew(cur, ttl)
}

var registerLeaky = sync.OnceFunc(func() {
	registerWrapped("reference", "mutant-fd-per-renewal", "the reference, leaving a descriptor open at each renewal",
		func(run runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				return run(p, leakyStore{s, p}, path, cfg)
			}
		})
})

// bounded-files counts descriptors too: a probe's reference that left a
// descriptor open per write passed 20,000 runs of every property (the
// simulated processes have no limit), and wedged its leader after 53
// renewals on the real kernel with ulimit -n 64. The real variants hold
// at most 3 at once.
func TestDescriptorsBounded(t *testing.T) {
	registerLeaky()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "mutant-fd-per-renewal", Faults: []trace.FaultKind{trace.Kill}},
		Runs: 100, Seed: 1, KeepGoing: true, Properties: []string{BoundedFiles}, Keep: 1}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[BoundedFiles] < 50 || !strings.Contains(rep.Found[0].Violation.Detail, "was given descriptor") {
		t.Errorf("a descriptor leaked per renewal: %v in %d runs, want bounded-files broken in most", rep.Counts, rep.Runs)
	}
	for _, v := range []string{"reference", "flock", "seed"} {
		rep, err := Search{Setup: sim.SetupOptions{Variant: v, Faults: sim.AllFaults}, Runs: 300, Seed: 2, KeepGoing: true, Properties: []string{BoundedFiles}}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := rep.Counts[BoundedFiles]; n > 0 {
			t.Errorf("%s: bounded-files broken in %d of %d runs: %s", v, n, rep.Runs, rep.Found[0].Violation.Detail)
		}
	}
}
