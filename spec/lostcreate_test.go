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

// A review (helper-103, 2026-12-07): B reads no record, is paused; A creates and leads; a
// wall-clock jump drops A's record on the server; B resumes and creates
// over it (the create's answer would say Vanished), but the reply is lost.
// With a lost create's nonce taken for its own at any version (the rule of
// the afternoon), B took its record back at once and led beside A until A's
// renewal failed (exclusive-leadership, seeds 1, 3, 4, 6, 8 on both
// stores); a lost create is its own only at the version next to the one
// its read showed (Reference.unknownCreate).
func TestLostCreateOverDropped(t *testing.T) {
	for _, variant := range []string{"redis", "sql"} {
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := sim.Config{Variant: variant, Seed: seed, Horizon: 30 * time.Second, Lease: lease.DefaultConfig(),
				Procs:      []sim.ProcSpec{{PID: 100, Start: 50 * ms}, {PID: 200}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
				Faults: []sim.Fault{
					{Kind: trace.Stop, Proc: 1, After: "rpc", Nth: 1, Dur: 1 * time.Second},
					{Kind: trace.Jump, At: 500 * ms, Delta: 60 * time.Second},
					{Kind: trace.FSError, Proc: 1, Call: "rpc", Nth: 2, Errno: syscall.EIO},
				}}
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			bad := false
			for _, v := range Check(tr) {
				if v.Violation != nil {
					bad = true
					t.Errorf("%s seed %d: %v", variant, seed, v.Violation)
				}
			}
			if bad || testing.Verbose() && seed == 1 {
				t.Logf("%s", strings.Join(tr.LogLines(), "\n"))
			}
			tr.Release()
		}
	}
}
