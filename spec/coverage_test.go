package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Every fault kind a variant accepts takes effect in a search that names
// it alone: a kind that silently did nothing (aimed at a leader no process
// is, at a call the variant never makes, at a process already dead) would
// let "no violation" stand for a search that never inflicted it. Each
// search is 60 runs; the kinds that a variant refuses (a server's kinds on
// a file variant) are left out as the command leaves them out.
func TestEveryFaultKindTakesEffect(t *testing.T) {
	kinds := append(slices.Clone(sim.AllFaults), sim.OptInFaults...)
	for _, v := range lease.Variants() {
		if strings.Contains(v.Name, "~") || strings.HasPrefix(v.Name, "test") || strings.HasPrefix(v.Name, "sim-test") {
			continue
		}
		for _, k := range kinds {
			s := Search{Setup: sim.SetupOptions{Variant: v.Name, Faults: []trace.FaultKind{k}}, Runs: 60, Seed: 11, KeepGoing: true}
			o := s.Setup
			if o.Normalize() != nil {
				continue // refused: not this variant's kind
			}
			rep, err := s.Run(nil)
			if err != nil {
				t.Fatalf("%s %s: %v", v.Name, k, err)
			}
			c := rep.Coverage.Kind(k)
			if c.Drawn == 0 || c.Fired == 0 {
				t.Errorf("%s -faults %s: drawn in %d of %d runs, in effect in %d: %s", v.Name, k, c.Drawn, rep.Runs, c.Fired, rep.Coverage)
			}
		}
	}
}

// Coverage counts what the traces show: terms handed to the users' code,
// runs where the leader changed, and per kind the runs drawn, in effect
// and with no leader to hit, which a setup's faults and their fates give.
func TestCoverageCounts(t *testing.T) {
	s := Search{Setup: sim.SetupOptions{Variant: "reference", Faults: []trace.FaultKind{trace.Kill, trace.Stop}}, Runs: 200, Seed: 4, KeepGoing: true}
	rep, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	var want coverage
	o := s.Setup
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	var terms, changed, killsDrawn int
	for i := range s.Runs {
		cfg := sim.RandomSetup(o, RunSeed(s.Seed, i))
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int16]bool{}
		for _, e := range tr.Events {
			if e.Kind == trace.EvStarted {
				terms++
				leaders[e.Proc] = true
			}
		}
		if len(leaders) > 1 {
			changed++
		}
		if slices.ContainsFunc(cfg.Faults, func(f sim.Fault) bool { return f.Kind == trace.Kill }) {
			killsDrawn++
		}
		want.add(cfg, tr)
	}
	if rep.Coverage.Terms != terms || rep.Coverage.Changed != changed || rep.Coverage.Runs != s.Runs {
		t.Errorf("coverage %s; want %d terms, %d runs with a change of leader, %d runs", rep.Coverage, terms, changed, s.Runs)
	}
	if got, w := rep.Coverage.String(), want.result().String(); got != w {
		t.Errorf("coverage %s, want %s", got, w)
	}
	kill := rep.Coverage.Kind(trace.Kill)
	if kill.Drawn != killsDrawn || kill.Fired == 0 || kill.Fired+kill.NoLeader > kill.Drawn || rep.Coverage.Kind(trace.Power).Drawn != 0 {
		t.Errorf("coverage %s", rep.Coverage)
	}
}
