package lease_test

import (
	"strings"
	"testing"

	"github.com/leaselab/leaselab/spec"
)

// Honest-role's takeover rule (spec/takeovers.go) spares a process's own
// record, which it takes back at once. Under -faults samepid another
// process has its PID: a record of that PID which the store acknowledged
// to the other process is that one's lease, and taking it at once is a
// watcher's mistake like any other (reference~own-by-pid). Spared by PID
// alone, the rule found it in none of 3,000 runs of -faults samepid
// (exclusive-leadership in 1,215 of them); by writer, in every one of
// those (helper-109).
func TestTakeoverRuleJudgesSamePIDRecords(t *testing.T) {
	if err := registerMutants(); err != nil {
		t.Fatal(err)
	}
	o, err := checkOptions("reference~own-by-pid", "samepid", "mixed", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := spec.Search{Setup: o, Runs: 200, Seed: 1, KeepGoing: true, Properties: []string{spec.HonestRole}, Keep: 1}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Found {
		defer f.Trace.Release()
	}
	if rep.Counts[spec.HonestRole] == 0 || !strings.Contains(rep.Found[0].Violation.Detail, "took over version") {
		t.Fatalf("reference~own-by-pid under samepid: honest-role %v in %d runs, want its takeover rule broken", rep.Counts, rep.Runs)
	}
	t.Logf("honest-role broken in %d of %d runs: %s", rep.Counts[spec.HonestRole], rep.Runs, rep.Found[0].Violation.Detail)
}
