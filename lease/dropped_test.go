package lease_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// A create can take the place of a record its creator never saw: made
// and dropped by the server between the creator's read and its create.
// CI's property test found it at a random seed (2026-12-07): two
// processes started at once, a wall-clock step forward of nearly a lease
// right after the first one's create made Redis drop that record, and
// the second one's create, sent on its read of no record, made a new one
// and led beside the first. The script: 200 reads no record and is
// paused right after, 100 starts at 1 ms, creates and leads; the wall
// clock steps 8.99 s forward at 50 ms, so that the server's clock passes
// the record's TTL; 200 wakes at 100 ms and creates over the dropped
// record. The reference holds that record, without leading, for a lease
// (Record.Vanished): 100's renewal at 3 s conflicts, and it steps down by
// its deadline, before 200 leads. The mutant redis~dropped-at-once (the
// reference before) leads at once: two leaders, in every seed, on Redis
// and SQL (etcd's expiry does not follow the wall clock).
func TestCreateOverAnUnseenDroppedRecord(t *testing.T) {
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"redis", "sql", "etcd"} {
		for _, variant := range []string{kind, "redis~dropped-at-once"} {
			if variant != kind && kind != "redis" {
				continue
			}
			twoLeaders := 0
			for seed := uint64(1); seed <= 10; seed++ {
				cfg := sim.Config{Variant: variant, Seed: seed, Horizon: 30 * time.Second, Lease: lease.DefaultConfig(),
					Procs:      []sim.ProcSpec{{PID: 200}, {PID: 100, Start: time.Millisecond}},
					SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
					Faults: []sim.Fault{
						{Kind: trace.Stop, Proc: 0, After: "rpc", Nth: 1, Dur: 100 * time.Millisecond},
						{Kind: trace.Jump, At: 50 * time.Millisecond, Delta: 8990 * time.Millisecond},
					}}
				tr, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if tr.MaxConcurrentLeaders() > 1 {
					twoLeaders++
				}
				var bad []string
				for _, v := range spec.Check(tr) {
					if v.Violation != nil {
						bad = append(bad, fmt.Sprintf("%s: %v", v.Property, v.Violation))
					}
				}
				log := strings.Join(tr.LogLines(), "\n")
				if seed == 1 && testing.Verbose() {
					t.Logf("%s:\n%s", variant, log)
				}
				if variant == kind {
					if len(bad) > 0 {
						t.Errorf("%s, seed %d: %v\n%s", variant, seed, bad, log)
					}
					if kind != "etcd" && !strings.Contains(log, "The store lost lease version 1, its holder unknown: waiting it out") {
						t.Errorf("%s, seed %d: the create over the dropped record did not wait:\n%s", variant, seed, log)
					}
				}
				tr.Release()
			}
			if want := 0; variant != kind {
				if twoLeaders != 10 {
					t.Errorf("%s: two leaders in %d of 10 seeds, want 10", variant, twoLeaders)
				}
			} else if twoLeaders != want {
				t.Errorf("%s: two leaders in %d of 10 seeds", variant, twoLeaders)
			}
		}
	}
}
