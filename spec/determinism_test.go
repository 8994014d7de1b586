package spec

import (
	"testing"

	"github.com/leaselab/leaselab/sim"
)

// With no violating run kept, Replays simulates run 0 once more and
// compares it with run 0 as the search judged it (its hash, kept by the
// search), not with a third simulation of it: a long-horizon check of a
// few runs spent two more runs on it (-horizon 24h -runs 3: 28.8 s, 24.6
// s with one). A hash that is not run 0's is a trace that differs.
func TestReplaysComparesWithTheSearchsRun(t *testing.T) {
	s := Search{Setup: sim.SetupOptions{Variant: "reference"}, Runs: 2, Seed: 3}
	rep, err := s.Run(nil)
	if err != nil || len(rep.Found) > 0 || rep.firstSum == nil {
		t.Fatalf("%v, %d found, run 0's hash %x", err, len(rep.Found), rep.firstSum)
	}
	if run, same, err := s.Replays(rep); err != nil || !same || run != 0 {
		t.Errorf("run %d same %v: %v", run, same, err)
	}
	rep.firstSum = append([]byte(nil), rep.firstSum...)
	rep.firstSum[0] ^= 1
	if _, same, err := s.Replays(rep); err != nil || same {
		t.Errorf("another hash for run 0: same %v: %v", same, err)
	}
}
