package sim_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// panickyStore is a store whose third renewal panics, as a user's fix
// with a nil map or an index out of range would.
type panickyStore struct {
	lease.Store
	renewals int
	m        map[string]int // never made
}

func (s *panickyStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if s.renewals++; s.renewals == 3 {
		var m map[string]int
		if s.renewals > 0 {
			m = s.m
		}
		m["boom"]++ // a nil map: the runtime's panic, as in a user's bug
	}
	return s.Store.Renew(cur, ttl)
}

var registerPanicky = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	newStore := v.NewStore
	v.Name, v.Summary = "sim-test-panics", "the reference, whose third renewal panics"
	v.NewStore = func(p lease.Proc, path string) lease.Store { return &panickyStore{Store: newStore(p, path)} }
	if err := lease.Register(v); err != nil {
		panic(err)
	}
})

// A panic in a process's code ends that process as Go's runtime ends a
// program, exit status 2, and the run goes on: the trace says why and
// where, the other process takes over, and the run replays exactly. (It
// crashed the whole search with the activity's stack before.)
func TestPanicEndsTheProcess(t *testing.T) {
	registerPanicky()
	cfg := sim.Config{Variant: "sim-test-panics", Seed: 7, Horizon: 40 * time.Second,
		Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond}
	run := func() *trace.Trace {
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := run()
	exit, took := -1, false
	for i, e := range tr.Events {
		switch {
		case e.Kind == trace.EvExit && e.Proc == 0:
			exit = i
		case e.Kind == trace.EvStarted && e.Proc == 1 && exit >= 0:
			took = true
		}
	}
	if exit < 0 {
		t.Fatalf("process 100 never exited:\n%s", tr.Setup())
	}
	line := tr.Format(exit)
	t.Log(line)
	if tr.Events[exit].ExitCode() != 2 || !strings.Contains(line, "panic: assignment to entry in nil map at sim/panic_test.go:") {
		t.Errorf("exit: %s", line)
	}
	if !took {
		t.Errorf("process 200 did not take over after process 100's panic")
	}
	all := func(tr *trace.Trace) string {
		var b strings.Builder
		for i := range tr.Events {
			b.WriteString(tr.Format(i) + "\n")
		}
		return b.String()
	}
	if a, b := all(tr), all(run()); a != b {
		t.Errorf("two runs of one config differ")
	}
}
