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

// Every system call the reference makes, failing with EIO or ENOSPC, at
// every one of its first occurrences in a process: the acquisition, the
// renewals, the takeover after the first leader is killed, and the
// release at SIGTERM. No property may break. The sweep is exhaustive over
// (process, call kind, errno, occurrence) within the bounds below, on a
// three-process run with a SIGKILL of the leader and a SIGTERM of its
// successor, so every store operation of the reference meets each fault.
func TestReferenceIOFaults(t *testing.T) {
	kinds := []string{"open", "write", "fsync", "close", "read", "readdir", "link", "remove"}
	nth := 24
	if testing.Short() {
		nth = 6
	}
	runs, skipped := 0, 0
	hit := map[string]int{}
	for proc := range 3 {
		for _, call := range kinds {
			for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
				for n := 1; n <= nth; n++ {
					cfg := sim.Config{
						Variant: "reference",
						Procs:   []sim.ProcSpec{{PID: 101}, {PID: 102, Start: 500 * time.Millisecond}, {PID: 103, Start: time.Second}},
						Horizon: 70 * time.Second,
						Seed:    uint64(n),
						Faults: []sim.Fault{
							{Kind: trace.FSError, Proc: proc, Call: call, Nth: n, Errno: errno},
							{Kind: trace.Kill, Proc: sim.Leader, At: 20 * time.Second},
							{Kind: trace.Term, Proc: sim.Leader, At: 45 * time.Second},
						},
					}
					tr, err := sim.Run(cfg)
					if err != nil {
						t.Fatal(err)
					}
					runs++
					if !injected(tr) {
						skipped++ // the process made fewer such calls
						continue
					}
					hit[call]++
					for _, v := range Check(tr) {
						if v.Violation != nil {
							t.Errorf("proc %d, %s #%d fails with %v: %s", proc, call, n, errno, v.Violation)
						}
					}
				}
			}
		}
	}
	for _, call := range kinds {
		if hit[call] == 0 {
			t.Errorf("no %s ever failed: the sweep misses a call kind", call)
		}
	}
	if runs-skipped < runs/3 {
		t.Errorf("only %d of %d runs injected their fault: the sweep tests too little", runs-skipped, runs)
	}
	t.Logf("%d runs, %d with the fault injected (by call: %v), no violation", runs, runs-skipped, hit)
}

func injected(tr *trace.Trace) bool {
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.FSError {
			return true
		}
	}
	return false
}

// The reference reports the store's errors through Callbacks.OnError, and
// only those that are none of the contract's outcomes.
func TestReferenceReportsStoreErrors(t *testing.T) {
	var got []string
	cfg := sim.Config{
		Variant: "reference",
		Procs:   []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}},
		Horizon: 30 * time.Second,
		Faults:  []sim.Fault{{Kind: trace.FSError, Proc: 0, Call: "link", Nth: 3, Errno: syscall.EIO}},
	}
	cfg.Lease = lease.DefaultConfig()
	cfg.Lease.Callbacks.OnError = func(op string, err error) { got = append(got, op+": "+err.Error()) }
	if _, err := sim.Run(cfg); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "renew: ") || !strings.Contains(got[0], "input/output error") {
		t.Errorf("OnError calls: %q; want the one failed renewal (the watcher's lost races are outcomes, not errors)", got)
	}
}
