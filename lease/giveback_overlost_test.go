package lease_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// registerOwnRecordNotReleased registers redis's and the SQL store's
// reference with mistake own-record-not-released (the catalogue has the
// file reference's only).
var registerOwnRecordNotReleased = sync.OnceValue(func() error {
	for _, kind := range []string{"redis", "sql"} {
		v, err := lease.LookupVariant(kind)
		if err != nil {
			return err
		}
		v.Name, v.Run = kind+"~test-own-record-not-released", serverRun(lease.MistakeOwnRecordNotReleased, nil)
		if err := lease.Register(v); err != nil {
			return err
		}
	}
	return nil
})

// failover-bound's exemption for a record created over one the server
// dropped (spec.gaveUp's overLost, a review of 53eac6e) does not reach a
// create made the ordinary way: process 200 waits out the record of 100,
// SIGKILLed, reads it gone and creates; paused right after that create's
// request, past its deadline but not past the lease, and SIGTERMed then,
// it must give back the record it made (the reference's rule 6). The
// mutant that leaves it to expire is caught, with a SIGSTOP and with its
// machine suspended alike; the correct reference releases it.
func TestGivesBackLateCreateAfterWaitingOut(t *testing.T) {
	if err := registerOwnRecordNotReleased(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"redis", "sql"} {
		for _, pause := range []trace.FaultKind{trace.Stop, trace.Suspend} {
			for _, variant := range []string{kind, kind + "~test-own-record-not-released"} {
				cfg := sim.Config{Variant: variant, Seed: 1, Horizon: 60 * time.Second, Lease: lease.DefaultConfig(),
					Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 300 * time.Millisecond}, {PID: 300, Start: 25 * time.Second}},
					Faults: []sim.Fault{
						{Kind: trace.Kill, Proc: 0, At: 4 * time.Second},
						{Kind: pause, Proc: 1, After: "rpc", Nth: 5, Dur: 8920 * time.Millisecond},
						{Kind: trace.Term, Follows: 2, Nth: 1},
					}}
				tr, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				log := strings.Join(tr.LogLines(), "\n")
				if !strings.Contains(log, "[Process: 200] [LEADER] Local deadline passed without a renewal") || strings.Contains(log, "[Process: 200] [LEADER] Acquired") {
					t.Fatalf("%s, %v: not the scenario (a create acknowledged past its deadline):\n%s", variant, pause, log)
				}
				var found []string
				for _, v := range spec.Check(tr) {
					if v.Violation != nil {
						found = append(found, v.Violation.String())
					}
				}
				mutant := variant != kind
				switch {
				case !mutant && len(found) > 0:
					t.Errorf("%s, %v: %v", variant, pause, found)
				case mutant && (len(found) != 1 || !strings.HasPrefix(found[0], spec.FailoverBound)):
					t.Errorf("%s, %v: the record left to expire not found: %v\n%s", variant, pause, found, log)
				}
				tr.Release()
			}
		}
	}
}
