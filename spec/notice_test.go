package spec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// handover runs a server variant with two processes, SIGTERMs the leader
// at 10 s (or SIGKILLs it) and returns the trace and the time from the
// signal to the next leader.
func handover(t *testing.T, variant string, kind trace.FaultKind, faults ...sim.Fault) (*trace.Trace, time.Duration) {
	t.Helper()
	cfg := sim.Config{Variant: variant, Lease: lease.DefaultConfig(), Horizon: 40 * time.Second,
		Procs:  []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 5 * time.Millisecond}},
		Faults: append([]sim.Fault{{Kind: kind, Proc: 0, At: 10 * time.Second}}, faults...)}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	from := firstLed(tr, 1)
	if from < 0 {
		t.Fatalf("%s: process 200 never led", variant)
	}
	return tr, time.Duration(from) - 10*time.Second
}

// firstLed returns the instant process proc first led in tr (-1: never).
func firstLed(tr *trace.Trace, proc int) int64 {
	for _, iv := range tr.Leadership() {
		if iv.Proc == proc {
			return iv.From
		}
	}
	return -1
}

// A server's notices hand a released lease over at once and a crashed
// one over in a lease, with no watch interval: the bounds of a run whose
// every notice came are the tight ones, and each server variant meets
// them.
func TestServerNoticesHandOver(t *testing.T) {
	for _, v := range sim.ServerKinds {
		_, term := handover(t, v, trace.Term)
		if term > 5*time.Millisecond {
			t.Errorf("%s: SIGTERM handed over in %v, want a few system calls (<= 5 ms)", v, term)
		}
		tr, kill := handover(t, v, trace.Kill)
		b := runBounds(mustVariant(t, v), tr)
		lc := lease.DefaultConfig()
		if kill < lc.LeaseDuration-lc.RenewInterval || kill > lc.LeaseDuration+200*time.Millisecond {
			t.Errorf("%s: SIGKILL handed over in %v, want within a lease and its drift margin of the last renewal", v, kill)
		}
		if b.Kill >= lc.LeaseDuration+lc.WatchInterval {
			t.Errorf("%s: a run with every notice delivered is judged by %v, not the tight bound (no watch interval)", v, b.Kill)
		}
		t.Logf("%s: SIGTERM %v, SIGKILL %v (bound %v)", v, term, kill, b.Kill)
	}
}

// successorCalls returns the store operations process 1 called after
// process 0's release and before it led, in order.
func successorCalls(tr *trace.Trace) []trace.StoreOp {
	var rel int64 = -1
	for _, e := range tr.Events {
		if e.Kind == trace.EvStoreCall && e.Proc == 0 && e.Store == trace.StoreRelease {
			rel = e.T
		}
	}
	from := firstLed(tr, 1)
	var ops []trace.StoreOp
	for _, e := range tr.Events {
		if e.Kind == trace.EvStoreCall && e.Proc == 1 && rel >= 0 && e.T >= rel && e.T <= from {
			ops = append(ops, e.Store)
		}
	}
	return ops
}

// A notice that says the lease was released is acted on at once: the
// successor's one store call between the release and its leadership is
// its create (no read first: lease.ReleaseHint) on etcd, and a read then
// the create on the servers whose records vanish (Redis, SQL), where only
// a read tells a release from a record dropped early and still held
// (TestStaleReleaseNoticeDoesNotSkipTheWait).
// An early notice announces a release the create cannot see yet: the
// create fails, and the watcher reads and hands over as before (a hint is
// never trusted beyond the create's own check).
func TestReleaseNoticeCreatesAtOnce(t *testing.T) {
	for _, v := range sim.ServerKinds {
		tr, got := handover(t, v, trace.Term)
		want := []trace.StoreOp{trace.StoreCreate}
		if v != "etcd" {
			want = []trace.StoreOp{trace.StoreRead, trace.StoreCreate}
		}
		if ops := successorCalls(tr); !slices.Equal(ops, want) {
			t.Errorf("%s: the successor called %v between the release and its leadership, want %v", v, ops, want)
		}
		t.Logf("%s: handed over in %v", v, got)
	}
	// Early notices, with system calls that take time, so that the
	// create the hint starts may or may not come after the release.
	lc := lease.DefaultConfig()
	wrong := 0
	for seed := uint64(1); seed <= 20; seed++ {
		cfg := sim.Config{Variant: "etcd", Seed: seed, Lease: lc, Horizon: 20 * time.Second,
			SyscallMin: 50 * time.Microsecond, SyscallMax: 2 * time.Millisecond,
			Procs: []sim.ProcSpec{{PID: 100}, {PID: 200, Start: 5 * time.Millisecond}},
			Faults: []sim.Fault{{Kind: trace.Term, Proc: 0, At: 10 * time.Second},
				{Kind: trace.Notice, Proc: 1, At: time.Second, Dur: 30 * time.Second, Call: "early"}}}
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		from := firstLed(tr, 1)
		if from < 0 || time.Duration(from) > 10*time.Second+lc.WatchInterval+5*time.Millisecond {
			t.Errorf("seed %d: early notices: process 200 led from %v, want within a watch interval of the SIGTERM at 10s", seed, time.Duration(from))
		}
		if ops := successorCalls(tr); len(ops) > 1 && ops[0] == trace.StoreCreate {
			wrong++ // a hinted create that found the lease still held
			if !slices.Contains(ops[1:], trace.StoreRead) {
				t.Errorf("seed %d: after a failed hinted create the watcher called %v, want a read", seed, ops)
			}
		}
	}
	if wrong == 0 {
		t.Error("no seed's early notice made a create fail: the case is not tested")
	}
	t.Logf("early notices: %d of 20 seeds' hinted creates found the lease still held", wrong)
}

// etcd tells its watchers when a record's etcd lease expires (a DELETE
// event), at that instant: after a SIGKILL the successor creates at the
// server's expiry, on the notice, without reading first. Redis publishes
// nothing at an expiry, and SQL has no expiry to publish: there the
// server drops the record only when a request finds it expired.
func TestEtcdExpiryNotice(t *testing.T) {
	// An expiry is no request: a Notice fault that makes notices come
	// early leaves its notice on time.
	early := sim.Fault{Kind: trace.Notice, Proc: 1, At: time.Second, Dur: 30 * time.Second, Call: "early"}
	for _, v := range append(sim.ServerKinds, "etcd with early notices") {
		var faults []sim.Fault
		if v == "etcd with early notices" {
			v, faults = "etcd", []sim.Fault{early}
		}
		tr, _ := handover(t, v, trace.Kill, faults...)
		var expiry *trace.Event
		for i := range tr.Events {
			if e := &tr.Events[i]; e.Kind == trace.EvStore && e.Store == trace.StoreExpire && e.Proc == -1 {
				expiry = e
				break
			}
		}
		if v != "etcd" {
			if expiry != nil {
				t.Errorf("%s: the server expired a record on its own at %v", v, time.Duration(expiry.T))
			}
			continue
		}
		if expiry == nil {
			t.Fatalf("%s: no expiry of the server's own after the leader's SIGKILL", v)
		}
		from := firstLed(tr, 1)
		var ops []trace.StoreOp
		for _, e := range tr.Events {
			if e.Kind == trace.EvStoreCall && e.Proc == 1 && e.T >= expiry.T && e.T <= from {
				ops = append(ops, e.Store)
			}
		}
		if !slices.Equal(ops, []trace.StoreOp{trace.StoreCreate}) || from != expiry.T {
			t.Errorf("%s: expiry at %v, then the successor called %v and led at %v; want [create] and leadership at the expiry",
				v, time.Duration(expiry.T), ops, time.Duration(from))
		}
	}
}

// Each fate a Notice fault gives the watcher's notices shows in the
// hand-over of a released lease, and no fate costs more than the watch
// interval the watcher still polls at. The run is then held to the
// polled bounds, and holds them.
func TestNoticeFates(t *testing.T) {
	lc := lease.DefaultConfig()
	for _, c := range []struct {
		fate     string
		delta    time.Duration
		min, max time.Duration
	}{
		{"lost", 0, 5 * time.Millisecond, lc.WatchInterval + 5*time.Millisecond},
		{"delayed", 700 * time.Millisecond, 700 * time.Millisecond, 705 * time.Millisecond},
		{"delayed", 10 * time.Second, 5 * time.Millisecond, lc.WatchInterval + 5*time.Millisecond},
		{"duplicated", time.Second, 0, 5 * time.Millisecond},
		// An early notice wakes the watcher before the release: whether
		// its read comes before the release takes effect is for the
		// latencies to say (none here); at worst its poll finds it.
		{"early", 0, 0, lc.WatchInterval + 5*time.Millisecond},
	} {
		f := sim.Fault{Kind: trace.Notice, Proc: 1, At: time.Second, Dur: 30 * time.Second, Call: c.fate, Delta: c.delta}
		tr, got := handover(t, "redis", trace.Term, f)
		if got < c.min || got > c.max {
			t.Errorf("%s %v: hand-over %v, want %v to %v", c.fate, c.delta, got, c.min, c.max)
		}
		if !misledByNotices(tr) {
			t.Errorf("%s: no notice event in the trace", c.fate)
		}
		// The SIGTERM's window is judged (against the polled bound): a
		// touched notice is not a fault that excuses it.
		if judged, signals := FailoverCounts(tr); judged != 1 || signals != 1 {
			t.Errorf("%s: failover-bound judged on %d of %d leader signals, want 1 of 1", c.fate, judged, signals)
		}
		for _, v := range Check(tr) {
			if v.Violation != nil {
				t.Errorf("%s %v: %v", c.fate, c.delta, v.Violation)
			}
		}
		t.Logf("%s %v: hand-over %v", c.fate, c.delta, got)
	}
}

// The tight bound can fail: the same run with its notices lost, but their
// events taken out of the trace (a checker that did not know), breaks
// failover-bound.
func TestNoticeBoundCanFail(t *testing.T) {
	f := sim.Fault{Kind: trace.Notice, Proc: 1, At: time.Second, Dur: 30 * time.Second, Call: "lost"}
	tr, got := handover(t, "etcd", trace.Term, f)
	if v := CheckFailover(tr, tr.Leadership(), runBounds(mustVariant(t, "etcd"), tr)); v != nil {
		t.Fatalf("judged by the polled bound, a %v hand-over fails: %v", got, v)
	}
	tr.Events = slices.DeleteFunc(tr.Events, func(e trace.Event) bool {
		return e.Kind == trace.EvFault && e.FaultKind() == trace.Notice
	})
	v := CheckFailover(tr, tr.Leadership(), runBounds(mustVariant(t, "etcd"), tr))
	if v == nil || !strings.Contains(v.Detail, "SIGTERM") {
		t.Fatalf("a %v hand-over of a SIGTERMed lease, with no notice fault known, passed: %v", got, v)
	}
}

// A search draws Notice faults only for the variants whose store sends
// notices, and leaves every other variant's draws as they were.
func TestNoticeDrawnOnlyWherePushed(t *testing.T) {
	for _, c := range []struct {
		variant string
		want    bool
	}{{"redis", true}, {"etcd", true}, {"sql", true}, {"reference", false}, {"seed", false}, {"flock", false}} {
		with := sim.SetupOptions{Variant: c.variant, Faults: sim.AllFaults}
		without := sim.SetupOptions{Variant: c.variant, Faults: slices.DeleteFunc(slices.Clone(sim.AllFaults), func(k trace.FaultKind) bool { return k == trace.Notice })}
		if err := with.Normalize(); err != nil {
			t.Fatal(err)
		}
		if err := without.Normalize(); err != nil {
			t.Fatal(err)
		}
		drawn, same := false, true
		for i := range 300 {
			a, b := sim.RandomSetup(with, RunSeed(1, i)), sim.RandomSetup(without, RunSeed(1, i))
			same = same && a.String() == b.String()
			for _, f := range a.Faults {
				drawn = drawn || f.Kind == trace.Notice
			}
		}
		if drawn != c.want {
			t.Errorf("%s: notice faults drawn %v, want %v", c.variant, drawn, c.want)
		}
		if !c.want && !same {
			t.Errorf("%s: the notice kind changed the draws of a variant that sends no notices", c.variant)
		}
	}
	o := sim.SetupOptions{Variant: "seed", Faults: []trace.FaultKind{trace.Notice}}
	if err := o.Normalize(); err == nil {
		t.Error("-faults notice on the seed variant: no error")
	}
}
