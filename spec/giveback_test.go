package spec

import (
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// exitOnReleaseError is a store whose process exits, status 0, when a
// release fails, once it has told OnError: a SIGTERMed leader that gives
// up after its first error (a probe's mutant M100 logged "Lease released"
// all the same).
type exitOnReleaseError struct {
	lease.Store
	p       lease.Proc
	onError func(op string, err error)
}

func (s exitOnReleaseError) Unwrap() lease.Store { return s.Store }

func (s exitOnReleaseError) Release(cur lease.Record) error {
	err := s.Store.Release(cur)
	if err != nil {
		if s.onError != nil {
			s.onError("release", err)
		}
		s.p.Exit(0)
	}
	return err
}

var registerReleaseGivesUp = sync.OnceFunc(func() {
	registerWrapped("reference", "spec-test-release-gives-up", "the reference, exiting at its release's first error", func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return run(p, exitOnReleaseError{s, p, cfg.Callbacks.OnError}, path, cfg)
		}
	})
})

// A SIGTERMed leader whose release fails once (EIO at its link) must try
// again: the correct reference reads the record, finds it still its own
// and releases it, and a watcher leads at once. One that exits at that
// first error leaves its record to expire; failover-bound excused the
// window (the I/O error is a fault in it) and every property held, until
// its rule on a graceful exit. Two failures in a row (the link, then the
// read after it) are a store that keeps failing: the reference gives up
// then, and is not blamed.
func TestSIGTERMedHolderGivesItsRecordBack(t *testing.T) {
	registerReleaseGivesUp()
	setup := func(variant string, readFails bool) sim.Config {
		cfg := sim.Config{Variant: variant, Seed: 1, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
			Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}, {PID: 300, Start: 200 * time.Millisecond}},
			SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
			Faults: []sim.Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}},
		}
		links := callsBefore(t, cfg, trace.OpLink, 5*time.Second)
		cfg.Faults = append(cfg.Faults, sim.Fault{Kind: trace.FSError, Proc: 0, Call: "link", Nth: links + 1, Errno: syscall.EIO})
		if readFails {
			dirs := callsBefore(t, cfg, trace.OpReadDir, 5*time.Second)
			cfg.Faults = append(cfg.Faults, sim.Fault{Kind: trace.FSError, Proc: 0, Call: "readdir", Nth: dirs + 1, Errno: syscall.EIO})
		}
		return cfg
	}
	for _, c := range []struct {
		variant   string
		readFails bool
		broken    bool
	}{
		{"reference", false, false},
		{"reference", true, false},
		{"spec-test-release-gives-up", false, true},
	} {
		tr, err := sim.Run(setup(c.variant, c.readFails))
		if err != nil {
			t.Fatal(err)
		}
		var fo *Violation
		for _, v := range Check(tr) {
			switch {
			case v.Property == FailoverBound:
				fo = v.Violation
			case v.Violation != nil:
				t.Errorf("%s (read fails: %v): %s: %v", c.variant, c.readFails, v.Property, v.Violation)
			}
		}
		switch {
		case c.broken && (fo == nil || !strings.Contains(fo.Detail, "gives its record back")):
			t.Errorf("%s: failover-bound does not see its record left behind (%v)", c.variant, fo)
		case !c.broken && fo != nil:
			t.Errorf("%s (read fails: %v): %v", c.variant, c.readFails, fo)
		}
	}
}

// callsBefore counts process 0's system calls op before at in cfg's run.
func callsBefore(t *testing.T, cfg sim.Config, op trace.Op, at time.Duration) int {
	t.Helper()
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range tr.Events {
		if e.Proc == 0 && e.Kind == trace.EvSyscall && e.Op == op && e.T < int64(at) {
			n++
		}
	}
	return n
}
