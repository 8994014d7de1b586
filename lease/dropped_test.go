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

// A record gone without a release that a process never saw is waited out
// for the lease that record stated, which the store keeps
// (lease.VanishedError.TTL), not the reader's own: the holder may hold a
// longer one (a rolling change of -lease). A search found it once steps
// were aimed after calls (2026-12-07): a 27 s holder's record dropped by
// a step right after its acquisition, and a 9 s watcher that waited 9 s
// and led beside it. The script: 100 (27 s lease) leads at once, the wall
// clock steps 28 s forward at 50 ms, 100 is paused from 100 ms to 15.1 s
// (still leading by its own clock); 200 (9 s) starts at 200 ms and reads
// the record gone. The mutant redis~vanished-own-lease leads at 9.2 s,
// beside 100, in every seed; the reference waits until 27.2 s.
func TestUnseenVanishedRecordWaitsTheLeaseItStated(t *testing.T) {
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 3 * time.Second}
	for _, variant := range []string{"redis", "sql", "redis~vanished-own-lease"} {
		twoLeaders := 0
		for seed := uint64(1); seed <= 10; seed++ {
			cfg := sim.Config{Variant: variant, Seed: seed, Horizon: 60 * time.Second, Lease: lease.DefaultConfig(),
				Procs:      []sim.ProcSpec{{PID: 100, Lease: long}, {PID: 200, Start: 200 * time.Millisecond}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
				Faults: []sim.Fault{
					{Kind: trace.Jump, At: 50 * time.Millisecond, Delta: 28 * time.Second},
					{Kind: trace.Stop, Proc: 0, At: 100 * time.Millisecond, Dur: 15 * time.Second},
				}}
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tr.MaxConcurrentLeaders() > 1 {
				twoLeaders++
			}
			if !strings.Contains(variant, "~") {
				for _, v := range spec.Check(tr) {
					if v.Violation != nil {
						t.Errorf("%s, seed %d: %s: %v\n%s", variant, seed, v.Property, v.Violation, strings.Join(tr.LogLines(), "\n"))
					}
				}
			}
			tr.Release()
		}
		if want := map[bool]int{true: 10}[strings.Contains(variant, "~")]; twoLeaders != want {
			t.Errorf("%s: two leaders in %d of 10 seeds, want %d", variant, twoLeaders, want)
		}
	}
}
