package spec

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A lone leader's renewal reply is lost (it took effect), its next renewal
// conflicts with it, and the read after the conflict fails: the reference
// cannot tell its own renewal from a takeover and steps down.
func TestConflictThenFailedReadExcused(t *testing.T) {
	for _, variant := range []string{"redis", "sql", "etcd"} {
		for nth := 3; nth <= 5; nth++ {
			for seed := uint64(1); seed <= 20; seed++ {
				cfg := sim.Config{Variant: variant, Seed: seed, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
					Procs: []sim.ProcSpec{{PID: 100}}, SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
					Faults: []sim.Fault{
						{Kind: trace.FSError, Proc: 0, Call: "rpc", Nth: nth, Errno: syscall.ECONNRESET},
						{Kind: trace.FSError, Proc: 0, Call: "rpc", Nth: nth + 2, Errno: syscall.ECONNRESET},
					}}
				tr, err := sim.Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range Check(tr) {
					if v.Violation != nil {
						t.Errorf("%s nth %d seed %d: %s: %v", variant, nth, seed, v.Property, v.Violation)
						t.Logf("%s", strings.Join(tr.LogLines(), "\n"))
					}
				}
				tr.Release()
			}
		}
	}
}
