package sim

import (
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// quietRole is a lease.Proc that never reports the leader's role: the
// reference run on it leads (its user's code gets a live context) while
// its reports say watcher.
type quietRole struct{ lease.Proc }

func (q quietRole) Role(r lease.Role) {
	if r != lease.RoleLeader {
		q.Proc.Role(r)
	}
}

// registerQuietRole registers, for the tests that need it, the reference
// on a process that does not report the leader's role.
var registerQuietRole = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	run := v.Run
	v.Name, v.Summary = "sim-test-quiet-role", "the reference, never reporting the leader's role"
	v.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		return run(quietRole{p}, s, path, cfg)
	}
	if err := lease.Register(v); err != nil {
		panic(err)
	}
})

// A fault aimed at the leader hits the process whose user's code holds a
// live leader context, whatever its role reports say: a variant that
// never reports the role meets it as an honest one does (it used to take
// no effect, "no leader"), and a crash point aimed at the leader's calls
// counts that process's calls.
func TestLeaderIsWhoHoldsTheContext(t *testing.T) {
	registerQuietRole()
	for _, variant := range []string{"reference", "sim-test-quiet-role"} {
		t.Run(variant, func(t *testing.T) {
			for _, f := range []Fault{
				{Kind: trace.Kill, Proc: Leader, At: 20 * time.Second},
				{Kind: trace.Term, Proc: Leader, After: "link", Nth: 2},
			} {
				cfg := worldCfg(3)
				cfg.Variant = variant
				cfg.Faults = []Fault{f}
				tr := mustRun(t, cfg)
				holds, hit := holdsAtFault(tr, f.Kind)
				if hit < 0 || holds[hit] == 0 {
					t.Errorf("%v: the fault hit process %d, which held no leader context (%v)\n%s", f, hit, holds, tr.Setup())
				}
			}
		})
	}
}

// Of two processes holding leader contexts, a fault aimed at the leader
// hits the one handed its context last: a paused ex-leader, whose context
// its code has not yet seen end, is not the leader once another took
// over (it was the first by index, and took the SIGKILL meant for the
// process leading then).
func TestLeaderIsTheLastHanded(t *testing.T) {
	cfg := worldCfg(5)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.Stop, Proc: 0, At: 5 * time.Second, Dur: 25 * time.Second},
		{Kind: trace.Kill, Proc: Leader, At: 24 * time.Second},
	}
	tr := mustRun(t, cfg)
	holds, hit := holdsAtFault(tr, trace.Kill)
	if holds[0] != 1 || holds[1] != 1 {
		t.Fatalf("want both processes holding a context at the SIGKILL, got %v\n%s", holds, tr.Setup())
	}
	if hit != 1 {
		t.Errorf("the SIGKILL aimed at the leader hit process %d, not 1, the leader since the other's pause", hit)
	}
}

// holdsAtFault returns how many leader contexts each process held when
// the first fault of kind fired, and the process it hit (-1: none fired).
func holdsAtFault(tr *trace.Trace, kind trace.FaultKind) (holds []int, hit int) {
	holds = make([]int, len(tr.Procs))
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.EvStarted:
			holds[e.Proc]++
		case e.Kind == trace.EvStopped:
			holds[e.Proc]--
		case e.Kind == trace.EvFault && e.FaultKind() == kind:
			return holds, int(e.Proc)
		}
	}
	return holds, -1
}
