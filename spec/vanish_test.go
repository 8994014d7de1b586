package spec

import (
	"strings"
	"testing"

	"github.com/leaselab/leaselab/sim"
)

// Records a server drops without a release (its wall clock stepped) are
// waited out, each: a watcher paused across two such drops, which had
// waited out the first, took the second, a live leader's record, for the
// same and led beside it (a search: `check -variant sql -faults all,lose
// -runs 20000 -seed 52`, run 2,326). The run below is that one: two of
// its processes see a record vanish, one of them two in a row.
func TestEveryVanishedRecordIsWaitedOut(t *testing.T) {
	o := sim.SetupOptions{Variant: "sql", Scheduler: "mixed"}
	var err error
	if o.Faults, err = sim.ParseFaults("all,lose"); err != nil {
		t.Fatal(err)
	}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	tr, err := sim.Run(sim.RandomSetup(o, 6130128612393021912))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(tr.LogLines(), "\n"), "The store lost the lease held by"); n < 2 {
		t.Fatalf("%d waits for a vanished record: the run no longer shows the case", n)
	}
	for _, v := range Check(tr) {
		if v.Violation != nil {
			t.Errorf("%s: %v", v.Property, v.Violation)
		}
	}
}
