package spec

import (
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// exitOnError is a store that ends its process, status 1, on any error but
// the ones an election expects (a conflict, no record, a record already
// there): a program that calls log.Fatal on an I/O error.
type exitOnError struct {
	lease.Store
	p lease.Proc
}

func (s exitOnError) fatal(err error) {
	if err != nil && !errors.Is(err, lease.ErrConflict) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
		s.p.Exit(1)
	}
}

func (s exitOnError) Unwrap() lease.Store { return s.Store }

func (s exitOnError) Read() (lease.Record, error) {
	r, err := s.Store.Read()
	s.fatal(err)
	return r, err
}

func (s exitOnError) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	r, err := s.Store.Create(holder, ttl)
	s.fatal(err)
	return r, err
}

func (s exitOnError) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	r, err := s.Store.Renew(cur, ttl)
	s.fatal(err)
	return r, err
}

func (s exitOnError) Takeover(cur lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	r, err := s.Store.Takeover(cur, holder, ttl)
	s.fatal(err)
	return r, err
}

func (s exitOnError) Release(cur lease.Record) error {
	err := s.Store.Release(cur)
	s.fatal(err)
	return err
}

var registerExitOnError = sync.OnceFunc(func() {
	registerWrapped("reference", "spec-test-exit-on-error", "the reference, exiting on any I/O error of its store", func(run runFunc) runFunc {
		return func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return run(p, exitOnError{s, p}, path, cfg)
		}
	})
})

// A process that exits of its own accord breaks no-own-exit, and the
// liveness properties, which excuse a process that has ended, would not
// see it (found by review: every process of the mutant below exited in
// 117 of 200 runs, and every property held).
func TestNoOwnExit(t *testing.T) {
	registerExitOnError()
	rep, err := Search{Setup: sim.SetupOptions{Variant: "spec-test-exit-on-error", Faults: []trace.FaultKind{trace.DiskEIO, trace.DiskFull, trace.FSError}},
		Runs: 200, Seed: 3, KeepGoing: true}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[NoOwnExit] == 0 {
		t.Errorf("a reference that exits on I/O errors: counts %v in %d runs, want no-own-exit broken", rep.Counts, rep.Runs)
	}
	t.Logf("%d runs: %v", rep.Runs, rep.Counts)

	// Exits on request are not judged: the handler's after a SIGTERM, a
	// SIGTERM's default action, a SIGKILL.
	at := func(e trace.Event, t time.Duration) trace.Event { e.T = int64(t); return e }
	term := trace.Fault(0, trace.Term, 0, 0, false, trace.Str{})
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}}}
	tr.Events = []trace.Event{
		at(term, time.Second), at(trace.Exit(0, 0), time.Second+50*time.Millisecond),
		at(trace.Exit(1, trace.ExitKilled), 3*time.Second),
	}
	if v := CheckNoOwnExit(tr); v != nil {
		t.Errorf("an exit after a SIGTERM and a SIGKILL's: %v", v)
	}
	tr.Events = append(tr.Events, at(trace.Exit(1, 0), 4*time.Second))
	if v := CheckNoOwnExit(tr); v == nil || !strings.Contains(v.Detail, "process 200 exited with status 0") {
		t.Errorf("process 200 exits 0 unbidden: %v", v)
	}
	tr.Events = tr.Events[1:] // without the SIGTERM, process 100's exit is its own
	if v := CheckNoOwnExit(tr); v == nil || v.At != time.Second+50*time.Millisecond {
		t.Errorf("process 100 exits 0 with no SIGTERM: %v", v)
	}
	// A graceful stop exits 0: any other status after a SIGTERM is taken
	// for a failure by a supervisor (a probe's mutant exiting 1 passed).
	tr.Events = []trace.Event{at(term, time.Second), at(trace.Exit(0, 1), 2*time.Second)}
	if v := CheckNoOwnExit(tr); v == nil || !strings.Contains(v.Detail, "status 1 after its SIGTERM") {
		t.Errorf("process 100 exits 1 after its SIGTERM: %v", v)
	}
}

// A process told to stop ends within ExitBound of its running time after
// its SIGTERM (a probe's reference whose watcher's wait ignored the
// signal ended only when the wait did, seconds later): a pause and a
// stalled machine do not count, a SIGKILL ends it as well, and a run that
// ends first judges nothing.
func TestExitInTime(t *testing.T) {
	const ms = time.Millisecond
	at := func(e trace.Event, t time.Duration) trace.Event { e.T = int64(t); return e }
	term := at(trace.Fault(0, trace.Term, 0, 0, false, trace.Str{}), time.Second)
	stop := trace.Fault(0, trace.Stop, 2*time.Second, 0, false, trace.Str{})
	cont := trace.Fault(0, trace.Cont, 0, 0, false, trace.Str{})
	for _, c := range []struct {
		name   string
		events []trace.Event
		end    time.Duration
		want   time.Duration // 0: no violation
	}{
		{"at once", []trace.Event{term, at(trace.Exit(0, 0), time.Second+50*ms)}, 10 * time.Second, 0},
		{"2 s later", []trace.Event{term, at(trace.Exit(0, 0), 3*time.Second)}, 10 * time.Second, time.Second + ExitBound(&trace.Trace{})},
		{"killed 2 s later", []trace.Event{term, at(trace.Exit(0, trace.ExitKilled), 3*time.Second)}, 10 * time.Second, time.Second + ExitBound(&trace.Trace{})},
		{"never", []trace.Event{term}, 10 * time.Second, time.Second + ExitBound(&trace.Trace{})},
		{"the run ends first", []trace.Event{term}, time.Second + 50*ms, 0},
		{"paused 2 s of it", []trace.Event{term, at(stop, time.Second+10*ms), at(cont, 3*time.Second+10*ms), at(trace.Exit(0, 0), 3*time.Second+50*ms)}, 10 * time.Second, 0},
	} {
		tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 100}}, Events: c.events, End: c.end}
		v := CheckNoOwnExit(tr)
		switch {
		case c.want == 0 && v != nil:
			t.Errorf("%s: %v", c.name, v)
		case c.want != 0 && (v == nil || v.At != c.want || !strings.Contains(v.Detail, "had not ended")):
			t.Errorf("%s: %v, want a violation at %v", c.name, v, c.want)
		}
	}
}
