package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A process with its own configuration (ProcSpec.Lease) runs with it: the
// reference's leader with a 27 s lease renews every 9 s and states 27 s in
// its records; the trace keeps each process's configuration and the setup
// line prints it; an invalid one is refused before the run.
func TestProcLease(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 9 * time.Second, WatchInterval: 3 * time.Second}
	cfg := worldCfg(1, ProcSpec{PID: 100, Lease: long}, ProcSpec{PID: 200, Start: time.Second})
	cfg.Variant, cfg.Horizon = "reference", 60*time.Second
	tr := mustRun(t, cfg)
	var links []int64
	for _, e := range tr.Events {
		if e.Kind == trace.EvSyscall && e.Proc == 0 && e.Op == trace.OpWrite && strings.Contains(tr.S(e.Data), `"processId":100`) {
			if !strings.Contains(tr.S(e.Data), `"leaseMs":27000`) {
				t.Errorf("process 100 wrote %s, want its 27 s lease stated", tr.S(e.Data))
			}
			links = append(links, e.T)
		}
	}
	if len(links) < 3 {
		t.Fatalf("process 100 wrote %d records in 60 s", len(links))
	}
	if gap := time.Duration(links[2] - links[1]); gap < 8*time.Second || gap > 10*time.Second {
		t.Errorf("process 100 renewed %v apart, want its own 9 s renew interval", gap)
	}
	if tr.Procs[0].Lease.LeaseDuration != 27*time.Second || tr.Procs[1].Lease.LeaseDuration != 0 {
		t.Errorf("trace procs %+v: want process 0's own lease kept, process 1's zero", tr.Procs)
	}
	if s := cfg.String(); !strings.Contains(s, "proc=100@0s,lease=27s/9s/3s") || strings.Contains(s, "proc=200@1s,lease") {
		t.Errorf("setup line %s", s)
	}
	cfg.Procs[1].Lease = lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: time.Second}
	if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), "process 1 (pid 200)") {
		t.Errorf("a process whose renew interval is its lease: %v, want an error naming it", err)
	}
}

// Swarms draw mixed configurations in about one run in four (never
// outside a swarm): each process the run's configuration or one other,
// valid for the variant, with a drift bound no lower than the run's; a
// restart after a power loss keeps its process's configuration; the
// horizon leaves four of the longest leases.
func TestRandomMixedSetups(t *testing.T) {
	o := SetupOptions{Variant: "reference"}
	o.Faults = AllFaults
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	v, _ := lease.LookupVariant("reference")
	mixed, both := 0, 0
	const runs = 2000
	for seed := range uint64(runs) {
		cfg := RandomSetup(o, seed)
		if err := cfg.Normalize(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		own, other := 0, 0
		for i, p := range cfg.Procs {
			if p.Lease.LeaseDuration == 0 {
				own++
				continue
			}
			other++
			if err := v.CheckConfig(p.Lease); err != nil {
				t.Fatalf("seed %d: process %d: %v", seed, i, err)
			}
			if p.Lease.DriftBound() < o.Lease.DriftBound() {
				t.Errorf("seed %d: drift bound %d below the run's %d", seed, p.Lease.DriftBound(), o.Lease.DriftBound())
			}
			if cfg.Horizon < 4*(p.Lease.LeaseDuration+p.Lease.WatchInterval) {
				t.Errorf("seed %d: horizon %v for a %v lease", seed, cfg.Horizon, p.Lease.LeaseDuration)
			}
			for _, q := range cfg.Procs[i+1:] {
				// (A shared PID names no one process: TestSamePIDSetups
				// checks those restarts.)
				if q.PID == p.PID && !cfg.SharedPIDs && (q.Lease.LeaseDuration != p.Lease.LeaseDuration || q.Lease.WatchInterval != p.Lease.WatchInterval || q.Lease.DriftBoundPPM != p.Lease.DriftBoundPPM) {
					t.Errorf("seed %d: pid %d restarted with another configuration", seed, p.PID)
				}
			}
		}
		if !strings.Contains(cfg.Swarm, "mixed") && other > 0 {
			t.Errorf("seed %d: swarm %q, %d processes with another configuration", seed, cfg.Swarm, other)
		}
		if strings.Contains(cfg.Swarm, "mixed") {
			mixed++
			if own > 0 && other > 0 {
				both++
			}
		}
	}
	if mixed < runs/6 || mixed > runs/3 {
		t.Errorf("%d of %d swarm setups mixed, want about a quarter", mixed, runs)
	}
	if both < mixed/2 {
		t.Errorf("only %d of %d mixed setups have both configurations", both, mixed)
	}
	o.Faults, _ = ParseFaults("kill,term")
	for seed := range uint64(200) {
		for _, p := range RandomSetup(o, seed).Procs {
			if p.Lease.LeaseDuration != 0 {
				t.Fatalf("seed %d: a configuration mix outside a swarm", seed)
			}
		}
	}
}
