package spec

import (
	"errors"
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
// all the same). With conflict, only a release's conflict ends it: a
// leader that takes the record behind it for another's, though it is its
// own renewal whose outcome it could not know.
type exitOnReleaseError struct {
	lease.Store
	p        lease.Proc
	onError  func(op string, err error)
	conflict bool
}

func (s exitOnReleaseError) Unwrap() lease.Store { return s.Store }

func (s exitOnReleaseError) Release(cur lease.Record) error {
	err := s.Store.Release(cur)
	if s.conflict {
		if errors.Is(err, lease.ErrConflict) {
			s.p.Exit(0)
		}
		return err
	}
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
			return run(p, exitOnReleaseError{s, p, cfg.Callbacks.OnError, false}, path, cfg)
		}
	})
	registerWrapped("reference", "spec-test-release-skips-own", "the reference, exiting at its release's first conflict", func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return run(p, exitOnReleaseError{s, p, cfg.Callbacks.OnError, true}, path, cfg)
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

// A leader SIGTERMed right after a renewal whose listing failed (EIO: its
// outcome unknown; it took effect) finds its release in conflict with that
// renewal's record: the correct reference reads it, knows it for its own
// (its term's epoch) and releases it. One that takes it for another's and
// exits leaves its own record to expire: failover-bound blames it (the
// record read after the exit is a later version of its term's).
func TestSIGTERMedHolderGivesItsUnknownRenewalBack(t *testing.T) {
	registerReleaseGivesUp()
	for _, c := range []struct {
		variant string
		broken  bool
	}{{"reference", false}, {"spec-test-release-skips-own", true}} {
		cfg := sim.Config{Variant: c.variant, Seed: 1, Horizon: 40 * time.Second, Lease: lease.DefaultConfig(),
			Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}},
			SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
		}
		// (The leader's first listing after 5 s is its renewal's, at 6 s.)
		dirs := callsBefore(t, cfg, trace.OpReadDir, 5*time.Second) + 1
		cfg.Faults = []sim.Fault{
			{Kind: trace.FSError, Proc: 0, Call: "readdir", Nth: dirs, Errno: syscall.EIO},
			{Kind: trace.Term, Proc: 0, After: "readdir", Nth: dirs},
		}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		renewed := false
		for _, e := range tr.Events {
			renewed = renewed || e.Proc == 0 && e.Kind == trace.EvStore && e.Store == trace.StoreRenew && e.Res == trace.ResUnknown
		}
		if !renewed {
			t.Fatalf("%s: no renewal of unknown outcome", c.variant)
		}
		var fo *Violation
		for _, v := range Check(tr) {
			switch {
			case v.Property == FailoverBound:
				fo = v.Violation
			case v.Violation != nil:
				t.Errorf("%s: %s: %v", c.variant, v.Property, v.Violation)
			}
		}
		switch {
		case c.broken && (fo == nil || !strings.Contains(fo.Detail, "gives its record back")):
			t.Errorf("%s: failover-bound does not see its renewal's record left behind (%v)", c.variant, fo)
		case !c.broken && fo != nil:
			t.Errorf("%s: %v", c.variant, fo)
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

// The correct reference, in runs where the graceful-exit rule's first
// version blamed it (a review's sweep, seed 1 of check -variant reference
// -faults all): a leader paused past its deadline whose release found its
// term over (its deadline's timer had read the clock, unrecorded), and one
// whose renewal came back after its term had lapsed in a pause (the term
// is over; its record expires). Pinned by their setup hashes. In the
// first, the leader's release past its deadline now takes (a
// compare-and-set of its own last write, since 2026-12-07's evening): a
// watcher takes over at once; the mutant reference~late-release-skipped,
// which writes nothing there, is blamed on this run by the default
// command.
func TestGivesBackNotBlamedPastTheDeadline(t *testing.T) {
	kinds, err := sim.ParseFaults("all")
	if err != nil {
		t.Fatal(err)
	}
	o := sim.SetupOptions{Variant: "reference", Faults: kinds, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seed     uint64
		hash     string
		released bool // whether a release took effect
	}{{2212207835535967911, "7c9988ebf2", true}, {8332949032042383781, "b2cb9aaa78", false}} {
		if h := SetupHash(o, c.seed); h != c.hash {
			t.Fatalf("the setup drawn for seed %d changed (hash %s): the run this test pins is gone", c.seed, h)
		}
		tr, err := sim.Run(sim.RandomSetup(o, c.seed))
		if err != nil {
			t.Fatal(err)
		}
		if v := checkGivesBack(tr); v != nil {
			t.Errorf("seed %d: %v", c.seed, v)
		}
		released := false
		for _, e := range tr.Events {
			released = released || e.Kind == trace.EvStore && e.Store == trace.StoreRelease && e.Res == trace.ResOK
		}
		if released != c.released {
			t.Errorf("seed %d: a release took effect: %v, want %v", c.seed, released, c.released)
		}
		tr.Release()
	}
}
