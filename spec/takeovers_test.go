package spec

import (
	"strings"
	"sync"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// shortTTL reads every record's lease 1% short (lease x (1-rho)): a
// watcher over it takes over 90 ms of 9 s early, helper-107's
// drift-sign mutant made a store's.
type shortTTL struct{ lease.Store }

func (s shortTTL) Read() (lease.Record, error) {
	rec, err := s.Store.Read()
	rec.TTL -= rec.TTL / 100
	return rec, err
}

func (s shortTTL) Unwrap() lease.Store { return s.Store }

var registerShortTTL = sync.OnceFunc(func() {
	registerWrapped("redis", "spec-test-ttl-read-short", "redis, each record's lease read 1% short", func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return run(p, shortTTL{s}, path, cfg)
		}
	})
})

// A watcher that waits 1% less than the lease breaks exclusive-leadership
// only where a leader lives to its deadline, the clocks drift apart at
// their worst and the watcher saw the leader's last write within some 38
// ms of its start: none of 20,000 runs of the default command over Redis
// (helper-107). Honest-role's takeover rule finds it at any takeover, and
// holds for the correct variants (their 20,000 runs of -faults all, and
// all,lose for the servers, found nothing).
func TestTakeoversBacked(t *testing.T) {
	registerShortTTL()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "spec-test-ttl-read-short", Faults: []trace.FaultKind{trace.Kill}},
		Runs: 100, Seed: 1, KeepGoing: true, Properties: []string{HonestRole, ExclusiveLeadership}, Keep: 1}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v in %d runs", rep.Counts, rep.Runs)
	if rep.Counts[HonestRole] < 10 || !strings.Contains(rep.Found[0].Violation.Detail, "took over version") {
		t.Errorf("a watcher that waits 1%% short: %v in %d runs, want honest-role's takeover rule broken in many", rep.Counts, rep.Runs)
	}
	for _, v := range []string{"reference", "redis", "etcd", "sql"} {
		rep, err := Search{Setup: sim.SetupOptions{Variant: v, Faults: sim.AllFaults}, Runs: 300, Seed: 3, KeepGoing: true, Properties: []string{HonestRole}}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := rep.Counts[HonestRole]; n > 0 {
			t.Errorf("%s: honest-role broken in %d of %d runs: %s", v, n, rep.Runs, rep.Found[0].Violation.Detail)
		}
	}
}
