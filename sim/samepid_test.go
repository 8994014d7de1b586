package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// Adding "samepid" to a fault list changes nothing of any setup but the
// PIDs, in about half the runs: every process PID 1, or two sharing one;
// a process restarted after a power loss keeps the PID of the one it
// restarts; and the setup line says so.
func TestSamePIDSetups(t *testing.T) {
	for _, base := range []string{"none", "kill,term,stop,power", "all"} {
		o := SetupOptions{Variant: "reference"}
		o.Faults, _ = ParseFaults(base)
		with := o
		with.Faults, _ = ParseFaults(base + ",samepid")
		if base == "none" {
			with.Faults, _ = ParseFaults("samepid")
		}
		if base == "all" { // all names samepid: compare with all but it
			o.Faults = slices.DeleteFunc(slices.Clone(o.Faults), func(k trace.FaultKind) bool { return k == trace.SamePID })
		}
		for _, x := range []*SetupOptions{&o, &with} {
			if err := x.Normalize(); err != nil {
				t.Fatal(err)
			}
		}
		shared, allOne, restarts := 0, 0, 0
		const seeds = 400
		for seed := range uint64(seeds) {
			a, b := RandomSetup(o, seed), RandomSetup(with, seed)
			if a.SharedPIDs {
				t.Fatalf("%s: seed %d shares PIDs without samepid", base, seed)
			}
			if err := b.Normalize(); err != nil {
				t.Fatalf("%s + samepid, seed %d: %v", base, seed, err)
			}
			if b.SharedPIDs != strings.Contains(b.String(), " samepid") {
				t.Fatalf("seed %d: the setup line %q does not say SharedPIDs=%v", seed, b.String(), b.SharedPIDs)
			}
			n := 0 // processes before any restart: those a's PIDs are distinct among
			for n < len(a.Procs) && !slices.ContainsFunc(a.Procs[:n], func(p ProcSpec) bool { return p.PID == a.Procs[n].PID }) {
				n++
			}
			if b.SharedPIDs {
				shared++
				pids := map[int]bool{}
				for _, p := range b.Procs[:n] {
					pids[p.PID] = true
				}
				if len(pids) == 1 && b.Procs[0].PID == 1 {
					allOne++
				} else if len(pids) != n-1 {
					t.Fatalf("seed %d: PIDs %v, want every one 1 or exactly two alike", seed, b.Procs)
				}
				// A restart keeps its process's PID.
				for i := n; i < len(b.Procs); i++ {
					restarts++
					j := slices.IndexFunc(a.Procs[:n], func(p ProcSpec) bool { return p.PID == a.Procs[i].PID })
					if j < 0 || b.Procs[i].PID != b.Procs[j].PID {
						t.Fatalf("seed %d: restart %d has PID %d, its process %d has %d", seed, i, b.Procs[i].PID, j, b.Procs[max(j, 0)].PID)
					}
				}
			}
			// Everything else as without it.
			b.SharedPIDs = false
			for i := range b.Procs {
				b.Procs[i].PID = a.Procs[i].PID
			}
			if a.String() != b.String() {
				t.Fatalf("%s: samepid changed the rest of seed %d's setup:\n%s\n%s", base, seed, a, b)
			}
		}
		if shared < seeds/3 || shared > 2*seeds/3 || allOne == 0 || allOne == shared {
			t.Errorf("%s: %d of %d setups share PIDs (%d all PID 1); want about half, of both kinds", base, shared, seeds, allOne)
		}
		if strings.Contains(base, "power") && restarts == 0 {
			t.Errorf("%s: no restart after a power loss in a setup that shares PIDs", base)
		}
	}
}

// Processes of one PID name their temporary files apart (lease.Instancer):
// the first of its PID as before (so that runs without shared PIDs keep
// their traces), every later one from a base of its own; no name is made
// by two processes.
func TestSamePIDTemporaryNamesApart(t *testing.T) {
	cfg := Config{Variant: "reference", Seed: 3, Horizon: 20 * time.Second, SharedPIDs: true,
		Procs:  []ProcSpec{{PID: 1}, {PID: 1, Start: 10 * time.Millisecond}, {PID: 1, Start: 20 * time.Millisecond}},
		Faults: []Fault{{Kind: trace.Term, Proc: Leader, At: 4 * time.Second}, {Kind: trace.Term, Proc: Leader, At: 10 * time.Second}}}
	tr, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	maker := map[string]int{}
	for _, e := range tr.Events {
		if e.Kind != trace.EvSyscall || e.Op != trace.OpOpen {
			continue
		}
		name := tr.S(e.Path)
		if !strings.Contains(name, ".tmp.") {
			continue
		}
		if q, ok := maker[name]; ok && q != int(e.Proc) {
			t.Errorf("%s made by processes %d and %d", name, q, e.Proc)
		}
		maker[name] = int(e.Proc)
		if e.Proc == 0 && !strings.HasSuffix(name, ".tmp.1.1") && len(maker) == 1 {
			t.Errorf("the first process's first temporary name is %s, want PATH.tmp.1.1", name)
		}
	}
	makers := map[int]bool{}
	for _, p := range maker {
		makers[p] = true
	}
	if len(makers) != 3 {
		t.Fatalf("temporary names made by %d processes, want each of the three to lead in turn", len(makers))
	}
}
