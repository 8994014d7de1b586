package spec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/scenario"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// scenarioTrace runs one of the post's scenarios on its own variant.
func scenarioTrace(t *testing.T, name string) *trace.Trace {
	t.Helper()
	s, err := scenario.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Trace == nil {
		t.Fatalf("scenario %s returned no trace", name)
	}
	return r.Trace
}

// verdicts runs Check and indexes its verdicts by property, checking that
// every property is reported once, in the order of Properties.
func verdicts(t *testing.T, tr *trace.Trace) map[string]Verdict {
	t.Helper()
	vs := Check(tr)
	var order []string
	out := map[string]Verdict{}
	for _, v := range vs {
		order = append(order, v.Property)
		out[v.Property] = v
	}
	if !reflect.DeepEqual(order, Properties) {
		t.Fatalf("Check reports %v, want every property in the order %v", order, Properties)
	}
	return out
}

// violated returns the names of the violated properties.
func violated(vs map[string]Verdict) []string {
	var out []string
	for _, p := range Properties {
		if vs[p].Violation != nil {
			out = append(out, p)
		}
	}
	return out
}

// run runs a hand-built setup with the scenarios' latency model.
func run(t *testing.T, cfg sim.Config) *trace.Trace {
	t.Helper()
	if cfg.Variant == "" {
		cfg.Variant = "seed"
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	cfg.SyscallMin, cfg.SyscallMax, cfg.TimerLateMax = 5*time.Microsecond, 50*time.Microsecond, 100*time.Microsecond
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func boundsOf(t *testing.T, tr *trace.Trace) Bounds {
	t.Helper()
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		t.Fatal(err)
	}
	return runBounds(v, tr) // the bounds the run is judged by (its CallMax's share included)
}

// intervalsOf returns process p's leadership intervals.
func intervalsOf(tr *trace.Trace, p int) []trace.Interval {
	var out []trace.Interval
	for _, iv := range tr.Leadership() {
		if iv.Proc == p {
			out = append(out, iv)
		}
	}
	return out
}

// exitOf returns the exit code of process p and whether it exited.
func exitOf(tr *trace.Trace, p int) (int64, int64, bool) {
	for _, e := range tr.Events {
		if e.Kind == trace.EvExit && int(e.Proc) == p {
			return e.ExitCode(), e.T, true
		}
	}
	return 0, 0, false
}

func dumpOnFailure(t *testing.T, tr *trace.Trace) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("setup: %s", tr.Setup())
			for _, l := range tr.Excerpt(0, tr.End) {
				t.Log(l)
			}
		}
	})
}

// The post's bounds: a 9 s lease watched every 3 s, noticed up to 1 s late
// (whole-second expiry), plus Slack; SIGTERM hands over within one watch.
// The reference is notified of changes and wakes at expiry: its bounds
// drop the watch interval and its tolerance is its drift margin (110 ms
// and the 90.9 ms a 1% slow clock adds to 9 s). flock's
// lock passes at once when its holder dies or unlocks; only a back-off
// after an I/O error, at most a watch interval on a clock that may run 1%
// slow (3.0303 s), leaves nobody leading.
// The reference over a server store polls it: a watch interval more.
func TestBoundsForPostIntervals(t *testing.T) {
	for _, v := range lease.Variants() {
		b := BoundsFor(v, lease.DefaultConfig())
		lag := v.Claims.ExpiryLag
		if v.Claims.OwnClock {
			lag += lease.DefaultConfig().DriftLag() // 90.9 ms: a watcher's clock 1% slow
		}
		want := Bounds{Wedge: 13*time.Second + Slack, Kill: 13*time.Second + Slack, Term: 3*time.Second + Slack}
		switch {
		case v.Claims.Handover == lease.KernelLock:
			want = Bounds{Wedge: 3*time.Second + 30303030*time.Nanosecond + Slack, Kill: Slack, Term: Slack}
		case v.Claims.Handover == lease.Notified:
			want = Bounds{Wedge: 9*time.Second + lag + Slack, Kill: 9*time.Second + lag + Slack, Term: Slack}
		case v.Claims.Handover == lease.ServerExpiry:
			// The reference over a server: it polls (a watch interval) and its
			// expiry lag is its drift margin.
			want = Bounds{Wedge: 12*time.Second + lag + Slack, Kill: 12*time.Second + lag + Slack, Term: 3*time.Second + Slack}
		}
		if b != want {
			t.Errorf("%s: BoundsFor = %+v, want %+v", v.Name, b, want)
		}
	}
}

func TestSteadyHasNoViolation(t *testing.T) {
	tr := scenarioTrace(t, "steady")
	if got := violated(verdicts(t, tr)); len(got) != 0 {
		t.Errorf("steady violates %v", got)
	}
}

// kill-leader: 9.53 s without a leader after the SIGKILL, inside the kill
// bound of 9+3+1 s + Slack.
func TestKillLeaderWithinBound(t *testing.T) {
	tr := scenarioTrace(t, "kill-leader")
	vs := verdicts(t, tr)
	if got := violated(vs); len(got) != 0 {
		t.Errorf("kill-leader violates %v", got)
	}
	// The run is the one the bound is about: the leader dies at 12 s and
	// the next leader comes 9.53 s later, well past the SIGTERM bound and
	// within the SIGKILL bound.
	iv := tr.Leadership()
	if len(iv) != 2 || iv[0].Proc != 0 || !iv[0].EndedByDie || iv[0].To != int64(12*time.Second) || iv[1].Proc == 0 {
		t.Fatalf("leadership %+v: want process 0 until its death at 12 s, then another", iv)
	}
	gap := time.Duration(iv[1].From - iv[0].To)
	b := boundsOf(t, tr)
	if gap.Round(10*time.Millisecond) != 9530*time.Millisecond || gap <= b.Term || gap > b.Kill {
		t.Errorf("gap %v: want 9.53 s, within (%v, %v]", gap, b.Term, b.Kill)
	}
	// Each check on its own, on the same intervals.
	if v := CheckFailover(tr, iv, b); v != nil {
		t.Errorf("failover-bound: %v", v)
	}
	if v := CheckNoWedge(tr, iv, b); v != nil {
		t.Errorf("no-wedge: %v", v)
	}
	// The same run against a kill bound shorter than its gap must fail:
	// the property is not vacuous on this trace.
	tight := b
	tight.Kill = gap - time.Millisecond
	v := CheckFailover(tr, iv, tight)
	if v == nil || v.Property != FailoverBound || v.At != 12*time.Second+tight.Kill || v.PIDs[0] != tr.Procs[0].PID ||
		!strings.Contains(v.Detail, "SIGKILL") {
		t.Errorf("with kill bound %v: got %v, want a SIGKILL failover-bound violation at 12 s + bound", tight.Kill, v)
	}
}

// FailoverCounts counts the leader signals failover-bound judged: the
// kill-leader scenario's one; none once another fault comes within its
// bound; none for a kill of a process that does not lead.
func TestFailoverCounts(t *testing.T) {
	if j, n := FailoverCounts(scenarioTrace(t, "kill-leader")); j != 1 || n != 1 {
		t.Errorf("kill-leader: %d judged of %d, want 1 of 1", j, n)
	}
	cfg := sim.Config{Variant: "reference", Seed: 1, Horizon: 40 * time.Second,
		Procs:  []sim.ProcSpec{{PID: 101}, {PID: 102, Start: time.Second}, {PID: 103, Start: time.Second}},
		Faults: []sim.Fault{{Kind: trace.Kill, Proc: 0, At: 5 * time.Second}, {Kind: trace.Stop, Proc: 2, At: 8 * time.Second, Dur: time.Second}}}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if j, n := FailoverCounts(tr); j != 0 || n != 1 {
		t.Errorf("a kill with a pause 3 s after it: %d judged of %d, want 0 of 1", j, n)
	}
	cfg.Faults = []sim.Fault{{Kind: trace.Kill, Proc: 1, At: 5 * time.Second}}
	if tr, err = sim.Run(cfg); err != nil {
		t.Fatal(err)
	}
	if j, n := FailoverCounts(tr); j != 0 || n != 0 {
		t.Errorf("a kill of a watcher: %d judged of %d, want 0 of 0", j, n)
	}
}

// The post's SIGTERM hand-over breaks nothing but stopped-callback: its
// handler releases the lease and exits, so the work it runs goes on past
// the release until the exit, and no OnStoppedLeading comes first (the
// torture table's "releases, then exits" episode on the real kernel).
func TestTermLeaderHasNoViolation(t *testing.T) {
	tr := scenarioTrace(t, "term-leader")
	if got := violated(verdicts(t, tr)); len(got) != 1 || got[0] != StoppedCallback {
		t.Errorf("term-leader violates %v, want %s alone", got, StoppedCallback)
	}
}

// empty-file: three live processes and never a leader.
func TestEmptyFileWedges(t *testing.T) {
	tr := scenarioTrace(t, "empty-file")
	vs := verdicts(t, tr)
	if v := vs[ExclusiveLeadership].Violation; v != nil {
		t.Errorf("exclusive-leadership: %v (nobody ever leads)", v)
	}
	v := vs[NoWedge].Violation
	if v == nil {
		t.Fatal("no-wedge not violated")
	}
	// The first process starts at 10 ms; the wedge is reported a bound later.
	if want := 10*time.Millisecond + boundsOf(t, tr).Wedge; v.At != want || !reflect.DeepEqual(v.PIDs, []int{63010}) {
		t.Errorf("no-wedge %v, PIDs %v: want at %v by 63010", v, v.PIDs, want)
	}
	if vs[LinearizableStore].Violation == nil {
		t.Error("linearizable-store not violated: reads of the empty file return corrupt")
	}
	if vs[FailoverBound].Violation != nil {
		t.Errorf("failover-bound: %v (no fault)", vs[FailoverBound].Violation)
	}
}

// takeover-race: 200 and 300 both take over at 12.1 s.
func TestTakeoverRaceTwoLeaders(t *testing.T) {
	tr := scenarioTrace(t, "takeover-race")
	vs := verdicts(t, tr)
	v := vs[ExclusiveLeadership].Violation
	if v == nil {
		t.Fatal("exclusive-leadership not violated")
	}
	if !reflect.DeepEqual(v.PIDs, []int{200, 300}) {
		t.Errorf("PIDs %v, want [200 300]", v.PIDs)
	}
	if v.At < 12100*time.Millisecond || v.At > 12110*time.Millisecond {
		t.Errorf("at %v, want about 12.1 s", v.At)
	}
	// The events are the two EvRole leader events; the later one is the
	// instant of the violation.
	if len(v.Events) != 2 {
		t.Fatalf("events %v, want two", v.Events)
	}
	for k, i := range v.Events {
		if i < 0 || i >= len(tr.Events) {
			t.Fatalf("event index %d out of range", i)
		}
		e := tr.Events[i]
		if e.Kind != trace.EvRole || e.Role != lease.RoleLeader || tr.Procs[e.Proc].PID != v.PIDs[k] {
			t.Errorf("event %d is %s, want %d becoming leader", i, tr.Format(i), v.PIDs[k])
		}
	}
	if last := tr.Events[v.Events[1]].T; time.Duration(last) != v.At {
		t.Errorf("violation at %v, but the second leader's event is at %v", v.At, time.Duration(last))
	}
	if vs[LinearizableStore].Violation == nil {
		t.Error("linearizable-store not violated: two takeovers of one record both succeeded")
	}
}

// The signal handler is installed after the acquisition: a SIGTERM right
// after the "acquired" log line takes the default action and leaves the
// lease to expire, so the watcher takes over only after lease + watch,
// far past the SIGTERM bound. Both processes start together (100 wins the
// create with this seed), so that the watcher runs from before the SIGTERM.
func TestFailoverSIGTERMBeforeHandler(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 30 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 0}},
		// Log #1 is "started", #2 is "acquired".
		Faults: []sim.Fault{{Kind: trace.Term, Proc: 0, After: "log", Nth: 2}},
	})
	dumpOnFailure(t, tr)
	code, died, ok := exitOf(tr, 0)
	if !ok || code != trace.ExitTerminated {
		t.Fatalf("process 100: exit %d (exited %v), want -15: the default action of SIGTERM", code, ok)
	}
	for _, e := range tr.Events {
		if e.Kind == trace.EvSignal && e.Proc == 0 {
			t.Fatalf("process 100 installed its handler at %v, before the SIGTERM", time.Duration(e.T))
		}
	}
	lead := intervalsOf(tr, 0)
	if len(lead) != 1 || !lead[0].EndedByDie || lead[0].To != died {
		t.Fatalf("process 100 leadership %+v: want one interval ended by its death at %v", lead, time.Duration(died))
	}
	b := boundsOf(t, tr)
	next := intervalsOf(tr, 1)
	if len(next) == 0 {
		t.Fatal("process 200 never took over")
	}
	if gap := time.Duration(next[0].From - died); gap <= b.Term+Slack || gap > b.Kill {
		t.Fatalf("takeover %v after the SIGTERM: want after the lease expired (> %v), within %v", gap, b.Term+Slack, b.Kill)
	}
	vs := verdicts(t, tr)
	v := vs[FailoverBound].Violation
	if v == nil {
		t.Fatal("failover-bound not violated")
	}
	if want := time.Duration(died) + b.Term; v.At != want || !reflect.DeepEqual(v.PIDs, []int{100, 200}) ||
		!strings.Contains(v.Detail, "SIGTERM") || !strings.Contains(v.Detail, b.Term.String()) {
		t.Errorf("failover-bound %v, PIDs %v: want a SIGTERM violation at %v by [100 200]", v, v.PIDs, want)
	}
	if len(v.Events) != 1 || tr.Events[v.Events[0]].Kind != trace.EvFault || tr.Events[v.Events[0]].FaultKind() != trace.Term {
		t.Errorf("events %v: want the SIGTERM fault", v.Events)
	}
	// The wait is the lease's, which no-wedge allows; one leader at a time.
	for _, p := range []string{ExclusiveLeadership, NoWedge} {
		if vs[p].Violation != nil {
			t.Errorf("%s: %v", p, vs[p].Violation)
		}
	}
}

// After the handler is installed, SIGTERM releases the lease and a watcher
// takes over at its next tick: within the SIGTERM bound.
func TestFailoverSIGTERMAfterHandler(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 30 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults:  []sim.Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}},
	})
	dumpOnFailure(t, tr)
	if code, _, ok := exitOf(tr, 0); !ok || code != 0 {
		t.Fatalf("process 100: exit %d (exited %v), want 0 from its handler", code, ok)
	}
	next := intervalsOf(tr, 1)
	if b := boundsOf(t, tr); len(next) == 0 || time.Duration(next[0].From) > 5*time.Second+b.Term {
		t.Fatalf("process 200 leadership %+v: want a takeover within %v of the SIGTERM", next, b.Term)
	}
	vs := verdicts(t, tr)
	for _, p := range []string{ExclusiveLeadership, NoWedge, FailoverBound} {
		if vs[p].Violation != nil {
			t.Errorf("%s: %v", p, vs[p].Violation)
		}
	}
}

// A stopped process gets SIGTERM when it is continued: the bound runs from
// then, not from the kill(2) that the stopped leader could not act on.
func TestFailoverSIGTERMToStoppedLeader(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 30 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults: []sim.Fault{
			{Kind: trace.Stop, Proc: 0, At: 5 * time.Second, Dur: 2 * time.Second},
			{Kind: trace.Term, Proc: 0, At: 5500 * time.Millisecond},
		},
	})
	dumpOnFailure(t, tr)
	code, died, ok := exitOf(tr, 0)
	if !ok || code != 0 || died < int64(7*time.Second) {
		t.Fatalf("process 100: exit %d at %v (exited %v), want 0 from its handler after the SIGCONT at 7 s", code, time.Duration(died), ok)
	}
	b := boundsOf(t, tr)
	next := intervalsOf(tr, 1)
	if len(next) == 0 {
		t.Fatal("process 200 never took over")
	}
	// The watcher ticks at 6.1 s and 9.1 s: it takes over more than the
	// bound after the SIGTERM was sent, and within it of its delivery.
	if from := time.Duration(next[0].From); from <= 5500*time.Millisecond+b.Term || from > 7*time.Second+b.Term {
		t.Fatalf("takeover at %v: the case needs one after %v and by %v", from, 5500*time.Millisecond+b.Term, 7*time.Second+b.Term)
	}
	if v := verdicts(t, tr)[FailoverBound].Violation; v != nil {
		t.Errorf("failover-bound: %v", v)
	}
}

// A lone process killed: nobody could lead, so nothing is wedged and
// nobody failed to take over.
func TestNoWedgeAllDead(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 40 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}},
		Faults:  []sim.Fault{{Kind: trace.Kill, Proc: 0, At: 5 * time.Second}},
	})
	dumpOnFailure(t, tr)
	if lead := intervalsOf(tr, 0); len(lead) != 1 || lead[0].To != int64(5*time.Second) {
		t.Fatalf("leadership %+v: want one interval ending at the kill", lead)
	}
	vs := verdicts(t, tr)
	if got := violated(vs); len(got) != 0 {
		t.Errorf("violates %v", got)
	}
}

// The leader is killed while the only other process is stopped: no-wedge
// counts a paused process out, and failover-bound needs a running one.
func TestNoWedgeOnlyLiveProcessPaused(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 50 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults: []sim.Fault{
			{Kind: trace.Stop, Proc: 1, At: 4 * time.Second, Dur: 25 * time.Second},
			{Kind: trace.Kill, Proc: 0, At: 5 * time.Second},
		},
	})
	dumpOnFailure(t, tr)
	// 24 s without a leader, more than the wedge bound; 200 takes over as
	// soon as it is continued at 29 s.
	next := intervalsOf(tr, 1)
	if len(next) == 0 || next[0].From < int64(29*time.Second) || next[0].From > int64(29*time.Second+time.Second) {
		t.Fatalf("process 200 leadership %+v: want a takeover right after the SIGCONT at 29 s", next)
	}
	vs := verdicts(t, tr)
	for _, p := range []string{NoWedge, FailoverBound, ExclusiveLeadership} {
		if vs[p].Violation != nil {
			t.Errorf("%s: %v", p, vs[p].Violation)
		}
	}
	// A control: had 200 not taken over, its 21 s of running after the
	// SIGCONT would be a wedge.
	iv := tr.Leadership()[:1]
	if v := CheckNoWedge(tr, iv, boundsOf(t, tr)); v == nil || !reflect.DeepEqual(v.PIDs, []int{200}) {
		t.Errorf("no-wedge %v when 200 runs from 29 s to 50 s and never leads: want a violation by 200", v)
	}
}

// A process that is stopped and continued before it starts is running
// only from its start: no-wedge must not count the time before.
func TestNoWedgeCountsFromStart(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 22 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 10 * time.Second}},
		Files:   []sim.File{{Path: sim.DefaultLockPath, Data: ""}}, // nobody can lead
		Faults: []sim.Fault{
			{Kind: trace.Kill, Proc: 0, At: time.Millisecond},
			{Kind: trace.Stop, Proc: 1, At: 500 * time.Millisecond, Dur: 500 * time.Millisecond},
		},
	})
	dumpOnFailure(t, tr)
	// 200 runs from 10 s to 22 s: 12 s, less than the bound.
	if v := verdicts(t, tr)[NoWedge].Violation; v != nil {
		t.Errorf("no-wedge: %v (process 200 ran for 12 s only)", v)
	}
}

// A crash after the O_EXCL create leaves an empty lock file: the other
// process runs and never leads.
func TestNoWedgeCrashAfterCreate(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 30 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults:  []sim.Fault{{Kind: trace.Kill, Proc: 0, After: "open-excl", Nth: 1}},
	})
	dumpOnFailure(t, tr)
	if code, _, ok := exitOf(tr, 0); !ok || code != trace.ExitKilled {
		t.Fatalf("process 100: exit %d (exited %v), want SIGKILL", code, ok)
	}
	if n := len(tr.Leadership()); n != 0 {
		t.Fatalf("%d leadership intervals, want none", n)
	}
	vs := verdicts(t, tr)
	v := vs[NoWedge].Violation
	if v == nil {
		t.Fatal("no-wedge not violated")
	}
	if want := 100*time.Millisecond + boundsOf(t, tr).Wedge; v.At != want || !reflect.DeepEqual(v.PIDs, []int{200}) {
		t.Errorf("no-wedge %v, PIDs %v: want at %v by 200", v, v.PIDs, want)
	}
	// Process 100 never led: its death is no failover.
	if vs[FailoverBound].Violation != nil {
		t.Errorf("failover-bound: %v", vs[FailoverBound].Violation)
	}
}

// A paused leader still leads: a watcher that takes over during the pause
// makes two leaders.
func TestExclusivePausedLeader(t *testing.T) {
	tr := run(t, sim.Config{
		Horizon: 40 * time.Second,
		Procs:   []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}},
		Faults:  []sim.Fault{{Kind: trace.Stop, Proc: 0, At: 5 * time.Second, Dur: 20 * time.Second}},
	})
	dumpOnFailure(t, tr)
	lead, next := intervalsOf(tr, 0), intervalsOf(tr, 1)
	if len(lead) == 0 || lead[0].From > int64(5*time.Second) || lead[0].To < int64(25*time.Second) {
		t.Fatalf("process 100 leadership %+v: want leading through its pause (5 s to 25 s)", lead)
	}
	if len(next) == 0 || next[0].From <= int64(5*time.Second) || next[0].From >= int64(25*time.Second) {
		t.Fatalf("process 200 leadership %+v: want a takeover during the pause", next)
	}
	v := verdicts(t, tr)[ExclusiveLeadership].Violation
	if v == nil {
		t.Fatal("exclusive-leadership not violated")
	}
	if time.Duration(next[0].From) != v.At || !reflect.DeepEqual(v.PIDs, []int{100, 200}) {
		t.Errorf("%v, PIDs %v: want at the takeover %v, by [100 200]", v, v.PIDs, time.Duration(next[0].From))
	}
}

// Intervals that meet at one instant are a hand-over, not an overlap; the
// kill-leader run hands over with a gap.
func TestExclusiveHandOver(t *testing.T) {
	tr := scenarioTrace(t, "kill-leader")
	if v := CheckExclusive(tr, tr.Leadership()); v != nil {
		t.Errorf("kill-leader: %v", v)
	}
	s := int64(5 * time.Second)
	if v := CheckExclusive(tr, []trace.Interval{{Proc: 0, From: 1, To: s, Seen: s}, {Proc: 1, From: s, To: 2 * s, Seen: 2 * s}}); v != nil {
		t.Errorf("hand-over at one instant: %v", v)
	}
	// One process leading twice, back to back, is not two leaders.
	if v := CheckExclusive(tr, []trace.Interval{{Proc: 0, From: 1, To: s, Seen: s}, {Proc: 0, From: s - 1, To: 2 * s, Seen: 2 * s}}); v != nil {
		t.Errorf("one process: %v", v)
	}
	v := CheckExclusive(tr, []trace.Interval{{Proc: 1, From: s - 1, To: 2 * s, Seen: 2 * s}, {Proc: 0, From: 1, To: s, Seen: s}})
	if v == nil || v.At != time.Duration(s-1) || !reflect.DeepEqual(v.PIDs, []int{tr.Procs[0].PID, tr.Procs[1].PID}) {
		t.Errorf("overlap of 1 ns: got %v, want a violation at %v by processes 0 and 1", v, time.Duration(s-1))
	}
	// The first overlap is reported, not the first pair.
	v = CheckExclusive(tr, []trace.Interval{
		{Proc: 0, From: 1, To: 4 * s, Seen: 4 * s}, {Proc: 1, From: 3 * s, To: 4 * s, Seen: 4 * s}, {Proc: 2, From: 2 * s, To: 3 * s, Seen: 3 * s},
	})
	if v == nil || v.At != time.Duration(2*s) || !reflect.DeepEqual(v.PIDs, []int{tr.Procs[0].PID, tr.Procs[2].PID}) {
		t.Errorf("three intervals: got %v, want the overlap of processes 0 and 2 at %v", v, time.Duration(2*s))
	}
}

// The seed variants have no epochs: fencing is not applicable and never
// violated; leader-known does not apply where watchers wait for the
// kernel's lock, errors-reported where the variant claims no OnError;
// every other property applies.
func TestFencingNotApplicable(t *testing.T) {
	for _, variant := range lease.Variants() {
		s, err := scenario.Lookup("takeover-race")
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(scenario.Options{Variant: variant.Name})
		if err != nil {
			t.Fatal(err)
		}
		for p, v := range verdicts(t, r.Trace) {
			if p == Fencing {
				if v.Applicable != variant.Epochs || !v.Applicable && v.Violation != nil {
					t.Errorf("%s (epochs %v): fencing %+v, want applicable only with epochs, no violation without", variant.Name, variant.Epochs, v)
				}
				if (variant.Name == "seed" || variant.Name == "seed-naive") && (v.Applicable || v.Violation != nil) {
					t.Errorf("%s: fencing %+v, want not applicable and no violation", variant.Name, v)
				}
			} else if p == ErrorsReported {
				if v.Applicable != variant.Claims.Reports || !v.Applicable && v.Violation != nil {
					t.Errorf("%s: errors-reported %+v, want applicable %v", variant.Name, v, variant.Claims.Reports)
				}
			} else if p == LeaderKnown {
				if want := variant.Claims.Handover != lease.KernelLock; v.Applicable != want || !v.Applicable && v.Violation != nil {
					t.Errorf("%s: leader-known %+v, want applicable %v", variant.Name, v, want)
				}
			} else if !v.Applicable {
				t.Errorf("%s: %s not applicable", variant.Name, p)
			}
		}
	}
}

func TestParseProperties(t *testing.T) {
	for _, s := range []string{"", "all"} {
		if got, err := ParseProperties(s); err != nil || !reflect.DeepEqual(got, Properties) {
			t.Errorf("ParseProperties(%q) = %v, %v; want every property", s, got, err)
		}
	}
	if got, err := ParseProperties("no-wedge,exclusive-leadership"); err != nil || !reflect.DeepEqual(got, []string{NoWedge, ExclusiveLeadership}) {
		t.Errorf("ParseProperties = %v, %v", got, err)
	}
	_, err := ParseProperties("no-wedge,nope")
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), strings.Join(Properties, ", ")) {
		t.Errorf("ParseProperties(nope): %v, want an error naming it and the valid ones", err)
	}
}

func killStop() []trace.FaultKind { return []trace.FaultKind{trace.Kill, trace.Stop} }

// foundKey is what a search reports of a violation, without the trace.
type foundKey struct {
	Property, Replay, Detail string
	Run                      int
	RunSeed                  uint64
	At                       time.Duration
	PIDs                     []int
}

func keys(fs []Found) []foundKey {
	var out []foundKey
	for _, f := range fs {
		out = append(out, foundKey{f.Property, f.Replay, f.Detail, f.Run, f.RunSeed, f.At, f.PIDs})
	}
	return out
}

// Two searches with the same options find the same violations in the same
// runs, and each is reproduced by re-running its seed.
func TestSearchDeterministic(t *testing.T) {
	s := Search{Setup: sim.SetupOptions{Variant: "seed", Faults: killStop()}, Runs: 200, Seed: 7, KeepGoing: true}
	a, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Found) == 0 {
		t.Fatal("the search found nothing: the comparison would be vacuous")
	}
	if a.Runs != 200 || b.Runs != 200 {
		t.Errorf("runs %d and %d, want 200 with KeepGoing", a.Runs, b.Runs)
	}
	if !reflect.DeepEqual(keys(a.Found), keys(b.Found)) || !reflect.DeepEqual(a.Counts, b.Counts) {
		t.Errorf("two searches differ:\n%+v\n%v\n%+v\n%v", keys(a.Found), a.Counts, keys(b.Found), b.Counts)
	}
	o := s.Setup
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	perProp := map[string]int{}
	for _, f := range a.Found {
		perProp[f.Property]++
		if f.RunSeed != RunSeed(s.Seed, f.Run) || f.Replay != ReplayCommand(o, f.RunSeed) {
			t.Errorf("run %d: seed %d, replay %q; want RunSeed %d and ReplayCommand", f.Run, f.RunSeed, f.Replay, RunSeed(s.Seed, f.Run))
		}
		tr, err := sim.Run(sim.RandomSetup(o, f.RunSeed))
		if err != nil {
			t.Fatal(err)
		}
		var again *Violation
		for _, v := range Check(tr) {
			if v.Property == f.Property {
				again = v.Violation
			}
		}
		if again == nil || again.At != f.At || !reflect.DeepEqual(again.PIDs, f.PIDs) || again.Detail != f.Detail {
			t.Errorf("run %d: re-running seed %d gives %v, the search found %v", f.Run, f.RunSeed, again, &f.Violation)
		}
	}
	for p, n := range perProp {
		if n > DefaultKeep || n > a.Counts[p] {
			t.Errorf("%s: %d kept of %d counted (keep at most %d)", p, n, a.Counts[p], DefaultKeep)
		}
	}
}

// Without KeepGoing a search stops after the first violating run, and it
// reports only the properties asked for.
func TestSearchStopsAndFilters(t *testing.T) {
	rep, err := Search{Setup: sim.SetupOptions{Variant: "seed-naive"}, Runs: 300, Seed: 1,
		Properties: []string{ExclusiveLeadership}}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) != 1 || rep.Found[0].Property != ExclusiveLeadership || rep.Runs != rep.Found[0].Run+1 {
		t.Fatalf("found %+v in %d runs: want one exclusive-leadership violation in the last run", keys(rep.Found), rep.Runs)
	}
	if len(rep.Counts) != 1 || rep.Counts[ExclusiveLeadership] != 1 {
		t.Errorf("counts %v: want only exclusive-leadership, once", rep.Counts)
	}
	if _, err := (Search{Setup: sim.SetupOptions{Variant: "nope"}, Runs: 1}).Run(nil); err == nil {
		t.Error("a search of an unknown variant succeeded")
	}
	if _, err := (Search{Runs: 0}).Run(nil); err == nil {
		t.Error("a search of 0 runs succeeded")
	}
}

func TestRunSeedDistinct(t *testing.T) {
	type at struct {
		seed uint64
		i    int
	}
	seen := map[uint64]at{}
	for _, seed := range []uint64{0, 1, 2} {
		for i := range 5000 {
			r := RunSeed(seed, i)
			if prev, ok := seen[r]; ok {
				t.Fatalf("RunSeed(%d, %d) = RunSeed(%d, %d) = %d", seed, i, prev.seed, prev.i, r)
			}
			seen[r] = at{seed, i}
		}
	}
}

// SetupHash fingerprints the setup: equal options give equal hashes, and
// changing any option changes it whenever the setup it gives differs (an
// option the seed's setup does not use, such as a fault kind never drawn,
// leaves the run and so the hash as they were).
func TestSetupHashChangesWithEveryOption(t *testing.T) {
	base := func() sim.SetupOptions {
		return sim.SetupOptions{Variant: "seed", Procs: 3, Faults: []trace.FaultKind{trace.Drift}, Scheduler: "random"}
	}
	lc := func(l, r, w time.Duration) lease.Config {
		return lease.Config{LeaseDuration: l, RenewInterval: r, WatchInterval: w}
	}
	for _, c := range []struct {
		name   string
		change func(*sim.SetupOptions)
		always bool // the setup differs for every seed
	}{
		{"variant", func(o *sim.SetupOptions) { o.Variant = "seed-naive" }, true},
		{"procs", func(o *sim.SetupOptions) { o.Procs = 4 }, true},
		{"procs drawn", func(o *sim.SetupOptions) { o.Procs = 0 }, true},
		{"faults", func(o *sim.SetupOptions) { o.Faults = []trace.FaultKind{trace.Kill} }, true},
		{"no faults", func(o *sim.SetupOptions) { o.Faults = nil }, true},
		{"scheduler", func(o *sim.SetupOptions) { o.Scheduler = "pct" }, true},
		// Every fault is a drift fault, whose rate the bound scales.
		{"max drift", func(o *sim.SetupOptions) { o.MaxDriftPPM = 500 }, true},
		{"lease", func(o *sim.SetupOptions) { o.Lease = lc(10*time.Second, 3*time.Second, 3*time.Second) }, true},
		{"renew", func(o *sim.SetupOptions) { o.Lease = lc(9*time.Second, 2*time.Second, 3*time.Second) }, true},
		{"watch", func(o *sim.SetupOptions) { o.Lease = lc(9*time.Second, 3*time.Second, 2*time.Second) }, true},
		// A kind added to the list changes the setup only for the seeds
		// that draw it.
		{"more faults", func(o *sim.SetupOptions) { o.Faults = []trace.FaultKind{trace.Kill, trace.Drift} }, false},
	} {
		changed := 0
		for seed := uint64(1); seed <= 20; seed++ {
			o0, o := base(), base()
			c.change(&o)
			if err := o0.Normalize(); err != nil {
				t.Fatal(err)
			}
			if err := o.Normalize(); err != nil {
				t.Fatal(err)
			}
			h := SetupHash(o0, seed)
			if len(h) != 10 || strings.Trim(h, "0123456789abcdef") != "" {
				t.Fatalf("SetupHash = %q, want 10 hex digits", h)
			}
			if again := base(); again.Normalize() == nil && SetupHash(again, seed) != h {
				t.Errorf("seed %d: equal options give different hashes", seed)
			}
			if SetupHash(o0, seed+1) == h {
				t.Errorf("seeds %d and %d give the same hash", seed, seed+1)
			}
			same := o.Scheduler == o0.Scheduler && sim.RandomSetup(o, seed).String() == sim.RandomSetup(o0, seed).String()
			if c.always && same {
				t.Fatalf("%s, seed %d: the setup did not change; the case is wrong", c.name, seed)
			}
			if !same {
				changed++
			}
			if got := SetupHash(o, seed) != h; got == same {
				t.Errorf("%s, seed %d: hash changed %v, setup changed %v", c.name, seed, got, !same)
			}
		}
		if changed == 0 {
			t.Errorf("%s: no seed's setup changed", c.name)
		}
	}
	// Without faults the scheduler's own draw is all that differs, and the
	// setup prints the same: the hash must still tell them apart.
	r, p := sim.SetupOptions{Scheduler: "random"}, sim.SetupOptions{Scheduler: "pct"}
	if r.Normalize() != nil || p.Normalize() != nil {
		t.Fatal("normalize")
	}
	for seed := uint64(1); seed <= 20; seed++ {
		if SetupHash(r, seed) == SetupHash(p, seed) {
			t.Errorf("seed %d: random and pct schedulers give the same hash", seed)
		}
	}
}

func TestReplayCommand(t *testing.T) {
	o := sim.SetupOptions{Variant: "seed-naive", Procs: 3, Faults: []trace.FaultKind{trace.Kill, trace.Stop}, Scheduler: "pct", MaxDriftPPM: 500,
		Lease: lease.Config{LeaseDuration: 5 * time.Second, RenewInterval: 1500 * time.Millisecond, WatchInterval: 2 * time.Second}}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	got := ReplayCommand(o, 42)
	want := "leaselab replay -variant seed-naive -procs 3 -faults kill,stop -scheduler pct -max-drift 0.0005 -lease 5s -renew 1.5s -watch 2s -seed 42 -expect " + SetupHash(o, 42)
	if got != want {
		t.Errorf("ReplayCommand =\n%s\nwant\n%s", got, want)
	}
	// The defaults are left out.
	d := sim.SetupOptions{}
	if err := d.Normalize(); err != nil {
		t.Fatal(err)
	}
	if got, want := SetupFlags(d), "-variant seed -procs 0 -faults none -scheduler random"; got != want {
		t.Errorf("SetupFlags(defaults) = %q, want %q", got, want)
	}
}

// A search says which properties did not apply, and why, from its runs'
// own verdicts: fencing for a variant without epochs and errors-reported
// for one that claims no OnError, nothing for the reference, with or
// without power loss (its store is judged up to it).
func TestSearchNotApplicable(t *testing.T) {
	for _, c := range []struct {
		variant string
		faults  []trace.FaultKind
		want    map[string]string
	}{
		{"seed", []trace.FaultKind{trace.Kill}, map[string]string{Fencing: "no epochs", ErrorsReported: "it claims no OnError"}},
		{"reference", []trace.FaultKind{trace.Kill}, map[string]string{}},
		{"reference", []trace.FaultKind{trace.Power}, map[string]string{}}, // judged up to the power loss
		{"redis", []trace.FaultKind{trace.Power}, map[string]string{}},     // a server keeps its state
	} {
		rep, err := Search{Setup: sim.SetupOptions{Variant: c.variant, Faults: c.faults}, Runs: 30, Seed: 1, KeepGoing: true}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rep.NotApplicable) != fmt.Sprint(c.want) {
			t.Errorf("%s %v: NotApplicable %v, want %v", c.variant, c.faults, rep.NotApplicable, c.want)
		}
		for _, f := range rep.Found {
			if len(f.Verdicts) != len(Properties) {
				t.Errorf("%s: a found run carries %d verdicts, want one per property", c.variant, len(f.Verdicts))
			}
		}
	}
}

// A search's report does not depend on how many runs are simulated at
// once: one worker and four find the same runs, keep the same ones
// (-smallest too), count the same, and stop at the same run.
func TestSearchWorkersSameReport(t *testing.T) {
	for _, s := range []Search{
		{Setup: sim.SetupOptions{Variant: "seed", Faults: killStop()}, Runs: 150, Seed: 3, KeepGoing: true},
		{Setup: sim.SetupOptions{Variant: "seed", Faults: killStop()}, Runs: 150, Seed: 3, KeepGoing: true, Smallest: true},
		{Setup: sim.SetupOptions{Variant: "seed-naive"}, Runs: 300, Seed: 1},
	} {
		var reps []Report
		for _, w := range []int{1, 4} {
			s.Workers = w
			rep, err := s.Run(nil)
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, rep)
		}
		a, b := reps[0], reps[1]
		if len(a.Found) == 0 {
			t.Fatal("the search found nothing: the comparison would be vacuous")
		}
		if a.Runs != b.Runs || !reflect.DeepEqual(keys(a.Found), keys(b.Found)) || !reflect.DeepEqual(a.Counts, b.Counts) || !reflect.DeepEqual(a.NotApplicable, b.NotApplicable) {
			t.Errorf("smallest=%v keep-going=%v: one worker: %d runs %+v %v; four: %d runs %+v %v", s.Smallest, s.KeepGoing, a.Runs, keys(a.Found), a.Counts, b.Runs, keys(b.Found), b.Counts)
		}
		for i := range a.Found {
			if i < len(b.Found) && (a.Found[i].RunSeed != b.Found[i].RunSeed || len(a.Found[i].Trace.Events) != len(b.Found[i].Trace.Events) || !reflect.DeepEqual(a.Found[i].Trace.LogLines(), b.Found[i].Trace.LogLines())) {
				t.Errorf("found %d: run seeds %d and %d, or their traces differ", i, a.Found[i].RunSeed, b.Found[i].RunSeed)
			}
		}
	}
}

// Episodes lists every overlap, wedge and late failover of a run, not the
// first of each: a seed run with several double leaderships shows them
// all, the first being Check's.
func TestEpisodes(t *testing.T) {
	rep, err := Search{Setup: sim.SetupOptions{Variant: "seed", Faults: killStop()}, Runs: 300, Seed: 1, KeepGoing: true, Workers: 1}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, f := range rep.Found {
		eps := Episodes(f.Trace, f.Verdicts)
		per := map[string][]Violation{}
		for _, e := range eps {
			per[e.Property] = append(per[e.Property], e)
		}
		for _, vd := range f.Verdicts {
			if vd.Violation == nil {
				if len(per[vd.Property]) > 0 {
					t.Errorf("run %d: %d episodes of %s, which holds", f.Run, len(per[vd.Property]), vd.Property)
				}
				continue
			}
			got := per[vd.Property]
			if len(got) == 0 || got[0].At != vd.Violation.At || got[0].Detail != vd.Violation.Detail {
				t.Errorf("run %d: %s: first episode %v, Check's %v", f.Run, vd.Property, got, vd.Violation)
			}
			for i := 1; i < len(got); i++ {
				if got[i].At < got[i-1].At {
					t.Errorf("run %d: %s: episodes out of order", f.Run, vd.Property)
				}
			}
			most = max(most, len(got))
		}
	}
	if most < 2 {
		t.Errorf("no run with two episodes of a property in 300 seed runs: the test shows nothing")
	}
}
