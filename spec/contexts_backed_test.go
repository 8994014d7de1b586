package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A leader context live past the renew deadline after the call of its
// process's last acknowledged write breaks honest-role whatever the
// algorithm reports: here it reports its role and never a deadline
// (Proc.Lead), which left the context bounded by nothing (a probe's
// reference over Redis whose deadline ran from its write's return passed
// 10,000 runs once it stopped calling Lead; helper-105).
func TestContextBackedWithoutLead(t *testing.T) {
	const s = int64(time.Second)
	cfg := lease.DefaultConfig()
	rd := deadlineBound(cfg)
	rec := lease.Record{Holder: 1, Epoch: 1, Version: 1}
	at := func(e trace.Event, tt int64) trace.Event { e.T = tt; return e }
	mono := func(tt int64) trace.Event {
		return trace.Event{Proc: 0, Kind: trace.EvClock, Op: trace.OpClockMono, N: tt, T: tt}
	}
	write := func(op trace.StoreOp, res trace.StoreRes, tt int64) []trace.Event {
		ret := at(trace.StoreReturn(0, 0, op, res, rec, 0), tt+s/1000)
		ret.N = tt // its call's reading of the clock
		return []trace.Event{mono(tt), at(trace.StoreCall(0, 0, op, lease.Record{}, 1), tt), ret}
	}
	role := func(r lease.Role, tt int64) trace.Event {
		return trace.Event{Proc: 0, Kind: trace.EvRole, Role: r, T: tt}
	}
	// run is a lone process that creates at 1 s, leads from then, renews
	// at each of renewals (acknowledged), reads its clock at each of
	// reads, and whose context is last seen live at seen, seen done
	// 10 ms later.
	run := func(renewals, reads []int64, seen int64) *trace.Trace {
		var evs []trace.Event
		evs = append(evs, write(trace.StoreCreate, trace.ResOK, s)...)
		evs = append(evs, role(lease.RoleLeader, s+s/100), at(trace.Started(0, 0, 1).OfContext(1), s+s/100))
		type step struct {
			t  int64
			ev []trace.Event
		}
		var steps []step
		for _, r := range renewals {
			steps = append(steps, step{r, write(trace.StoreRenew, trace.ResOK, r)})
		}
		for _, r := range reads {
			steps = append(steps, step{r, []trace.Event{mono(r)}})
		}
		for i := range steps {
			for j := i + 1; j < len(steps); j++ {
				if steps[j].t < steps[i].t {
					steps[i], steps[j] = steps[j], steps[i]
				}
			}
		}
		for _, st := range steps {
			evs = append(evs, st.ev...)
		}
		n := len(evs)
		evs = append(evs, at(trace.Stopped(0, seen, n, false).OfContext(1), seen+s/100), role(lease.RoleWatcher, seen+s/100), mono(seen+s/100))
		return &trace.Trace{Run: trace.Run{Variant: "redis", Lease: cfg}, Procs: []trace.ProcInfo{{PID: 1}}, Events: evs, End: time.Duration(seen + s)}
	}
	for _, c := range []struct {
		name     string
		renewals []int64
		reads    []int64
		seen     int64
		want     string // "" for none
	}{
		{"within the create's deadline", nil, []int64{s + int64(rd) - 1}, s + int64(rd) - 1, ""},
		{"renewed", []int64{4 * s}, []int64{4*s + int64(rd) - 1}, 4*s + int64(rd) - 1, ""},
		{"its clock read past the deadline, live", nil, []int64{s + int64(rd) + s/10}, s + int64(rd) + s/5, "when its clock read 9.87"},
		{"seen live past the deadline, no reading then", nil, []int64{s + int64(rd) - s}, s + int64(rd) + s/2, "its clock read at least"},
		{"live past a renewal's deadline", []int64{4 * s}, []int64{4*s + int64(rd) + s/10}, 4*s + int64(rd) + s/10, "past the renew deadline"},
	} {
		tr := run(c.renewals, c.reads, c.seen)
		v := CheckHonestRole(tr, tr.Leadership())
		switch {
		case c.want == "" && v != nil:
			t.Errorf("%s: %v", c.name, v)
		case c.want != "" && (v == nil || !strings.Contains(v.Detail, c.want)):
			t.Errorf("%s: %v, want a violation saying %q", c.name, v, c.want)
		}
	}
}
