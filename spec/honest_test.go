package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A reported deadline counts at the latest from the call of the last
// write the store acknowledged: one that comes from a write that failed,
// or whose outcome was unknown, or from no write, is not honest.
func TestDeadlineBackedByAnAcknowledgedWrite(t *testing.T) {
	const s = int64(time.Second)
	cfg := lease.DefaultConfig()
	rd := int64(cfg.RenewDeadlineInEffect())
	write := func(op trace.StoreOp, res trace.StoreRes, mono int64) trace.Event {
		e := trace.StoreReturn(0, 0, op, res, lease.Record{Holder: 1, Epoch: 1, Version: 1}, 0)
		e.N, e.T = mono, mono
		return e
	}
	lead := func(mono int64) trace.Event {
		e := trace.Lead(0, 0, 1, mono)
		e.B, e.T = mono, mono
		return e
	}
	for _, c := range []struct {
		name   string
		events []trace.Event
		want   string // "" for none
	}{
		{"from the create's call", []trace.Event{write(trace.StoreCreate, trace.ResOK, s), lead(s + rd)}, ""},
		{"from a renewal's call", []trace.Event{write(trace.StoreCreate, trace.ResOK, s), write(trace.StoreRenew, trace.ResOK, 4*s), lead(4*s + rd)}, ""},
		{"past the create's", []trace.Event{write(trace.StoreCreate, trace.ResOK, s), lead(s + rd + 1)}, "past the renew deadline"},
		{"from a renewal whose outcome is unknown", []trace.Event{write(trace.StoreCreate, trace.ResOK, s), write(trace.StoreRenew, trace.ResUnknown, 4*s), lead(4*s + rd)}, "past the renew deadline"},
		{"from a renewal that conflicted", []trace.Event{write(trace.StoreCreate, trace.ResOK, s), write(trace.StoreRenew, trace.ResConflict, 4*s), lead(4*s + rd)}, "past the renew deadline"},
		{"from no write", []trace.Event{lead(s)}, "no write of its acknowledged"},
	} {
		tr := &trace.Trace{Run: trace.Run{Variant: "reference", Lease: cfg}, Procs: []trace.ProcInfo{{PID: 1}}, Events: c.events}
		v := CheckHonestRole(tr, nil)
		switch {
		case c.want == "" && v != nil:
			t.Errorf("%s: %v", c.name, v)
		case c.want != "" && (v == nil || !strings.Contains(v.Detail, c.want)):
			t.Errorf("%s: %v, want a violation saying %q", c.name, v, c.want)
		}
	}
	// The seed variants report no local deadline: not judged.
	tr := &trace.Trace{Run: trace.Run{Variant: "seed", Lease: cfg}, Procs: []trace.ProcInfo{{PID: 1}}, Events: []trace.Event{lead(s)}}
	if v := CheckHonestRole(tr, nil); v != nil {
		t.Errorf("seed: %v", v)
	}
}

// A recorded run whose leaders stop a command before they release
// (torture -singleton: trace.Run.StopGrace) is held to a SIGTERM
// hand-over that much longer, and to nothing else longer.
func TestStopGraceLengthensTheTermBound(t *testing.T) {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		t.Fatal(err)
	}
	cfg := lease.DefaultConfig()
	tr := trace.NewRecorded(trace.Run{Variant: "reference", Lease: cfg})
	plain := runBounds(v, tr)
	tr.Run.StopGrace = time.Second
	graced := runBounds(v, tr)
	if graced.Term != plain.Term+time.Second || graced.Kill != plain.Kill || graced.Wedge != plain.Wedge {
		t.Errorf("with a 1 s stop grace: bounds %+v, without %+v; want the SIGTERM bound alone 1 s longer", graced, plain)
	}
}
