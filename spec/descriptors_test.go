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

// leakyGoStore starts an activity at each renewal that never ends.
type leakyGoStore struct {
	lease.Store
	p lease.Proc
}

func (s leakyGoStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	s.p.Go("leak", func() { s.p.Sleep(24 * time.Hour) })
	return s.Store.Renew(cur, ttl)
}

var registerLeakyGo = sync.OnceFunc(func() {
	registerWrapped("reference", "mutant-go-per-renewal", "the reference, leaving an activity behind at each renewal",
		func(run runFunc) runFunc {
			return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
				return run(p, leakyGoStore{s, p}, path, cfg)
			}
		})
})

// bounded-activities counts each process's live activities: a probe's
// reference that left a goroutine behind per renewal passed 20,000 runs
// of every property. Every variant has at most 4 alive at once.
func TestActivitiesBounded(t *testing.T) {
	registerLeakyGo()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "mutant-go-per-renewal", Faults: []trace.FaultKind{trace.Kill}},
		Runs: 100, Seed: 1, KeepGoing: true, Properties: []string{BoundedActivities}, Keep: 1}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[BoundedActivities] < 50 || !strings.Contains(rep.Found[0].Violation.Detail, "activities (goroutines) alive at once") {
		t.Errorf("an activity left per renewal: %v in %d runs, want bounded-activities broken in most", rep.Counts, rep.Runs)
	}
	for _, v := range []string{"seed", "seed-naive", "seed-rename", "seed-link", "reference", "flock", "redis", "etcd", "sql"} {
		rep, err := Search{Setup: sim.SetupOptions{Variant: v, Faults: sim.AllFaults}, Runs: 300, Seed: 2, KeepGoing: true, Properties: []string{BoundedActivities}}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := rep.Counts[BoundedActivities]; n > 0 {
			t.Errorf("%s: bounded-activities broken in %d of %d runs: %s", v, n, rep.Runs, rep.Found[0].Violation.Detail)
		}
	}
	// What it judges: the simulator's count, not the trace's events.
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 1, MaxLive: MaxActivities}, {PID: 2, MaxLive: MaxActivities + 1}}, End: time.Second, Run: trace.Run{Variant: "reference"}}
	if v := CheckBoundedActivities(tr); v == nil || v.PIDs[0] != 2 {
		t.Errorf("%d activities alive at once: %v, want a violation of process 2", MaxActivities+1, v)
	}
	tr.Procs[1].MaxLive = MaxActivities
	if v := CheckBoundedActivities(tr); v != nil {
		t.Errorf("%d activities alive at once: %v", MaxActivities, v)
	}
	// And timers armed at once (a probe's reference armed one a renewal).
	tr.Procs[0].MaxTimers = MaxTimers + 1
	if v := CheckBoundedActivities(tr); v == nil || v.PIDs[0] != 1 || !strings.Contains(v.Detail, "timers armed") {
		t.Errorf("%d timers armed at once: %v, want a violation of process 1", MaxTimers+1, v)
	}
	tr.Procs[0].MaxTimers = MaxTimers
	if v := CheckBoundedActivities(tr); v != nil {
		t.Errorf("%d timers armed at once: %v", MaxTimers, v)
	}
}
