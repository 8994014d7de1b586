package sim

import (
	"slices"
	"strings"
	"testing"

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
