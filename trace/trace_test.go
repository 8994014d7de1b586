package trace_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

func TestClassify(t *testing.T) {
	_, empty := lease.ParseRecord(nil)
	_, garbage := lease.ParseRecord([]byte(`{"processId":`))
	_, wrongType := lease.ParseRecord([]byte(`{"processId":"x"}`))
	notExist := &fs.PathError{Op: "open", Path: "/l", Err: syscall.ENOENT}
	exist := &fs.PathError{Op: "open", Path: "/l", Err: syscall.EEXIST}
	eio := &fs.PathError{Op: "write", Path: "/l", Err: syscall.EIO}
	for _, c := range []struct {
		op   trace.StoreOp
		err  error
		want trace.StoreRes
	}{
		{trace.StoreRead, nil, trace.ResOK},
		{trace.StoreRead, notExist, trace.ResNotFound},
		{trace.StoreRead, empty, trace.ResCorrupt},
		{trace.StoreRead, garbage, trace.ResCorrupt},
		{trace.StoreRead, wrongType, trace.ResCorrupt},
		{trace.StoreRead, eio, trace.ResUnknown},
		{trace.StoreCreate, exist, trace.ResExists},
		{trace.StoreCreate, notExist, trace.ResUnknown},
		{trace.StoreRenew, fmt.Errorf("renew: %w", lease.ErrConflict), trace.ResConflict},
		{trace.StoreTakeover, &lease.StepError{Step: "remove", Err: notExist}, trace.ResConflict},
		{trace.StoreTakeover, &lease.StepError{Step: "create", Err: exist}, trace.ResConflict},
		{trace.StoreTakeover, &lease.StepError{Step: "write", Err: eio}, trace.ResUnknown},
		{trace.StoreRelease, notExist, trace.ResConflict},
		{trace.StoreRelease, eio, trace.ResUnknown},
		{trace.StoreRelease, errors.New("connection reset"), trace.ResUnknown},
	} {
		if got := trace.Classify(c.op, c.err); got != c.want {
			t.Errorf("Classify(%v, %v) = %v, want %v", c.op, c.err, got, c.want)
		}
	}
}

func TestEventAccessors(t *testing.T) {
	r := lease.Record{Holder: 7, Until: 1760476487, Epoch: 3, Version: 9}
	var e trace.Event
	e.SetRecord(r)
	if e.Record() != r {
		t.Errorf("Record() = %+v after SetRecord(%+v)", e.Record(), r)
	}
	f := trace.Fault(2, trace.Stop, 4*time.Second, 0, false, trace.Str{})
	if f.Kind != trace.EvFault || f.Proc != 2 || f.FaultKind() != trace.Stop || f.Missed() || f.PauseFor() != 4*time.Second {
		t.Errorf("Fault(stop for 4s) = %+v", f)
	}
	j := trace.Fault(-1, trace.Jump, 0, -time.Second, false, trace.Str{})
	if j.StepBy() != -time.Second || j.Missed() {
		t.Errorf("Fault(jump by -1s) = %+v", j)
	}
	m := trace.Fault(-1, trace.Kill, 0, 0, true, trace.Str{})
	if !m.Missed() || m.PauseFor() != 0 || m.FaultKind() != trace.Kill {
		t.Errorf("Fault(kill, missed) = %+v: want missed, no pause", m)
	}
}

// recorded builds a small trace of two processes as a recorder would, with
// events added out of order.
func recorded() *trace.Trace {
	tr := trace.NewRecorded(trace.Run{Variant: "reference", Lease: lease.DefaultConfig(), LockPath: "/l"})
	a := tr.AddProc(100, 0)
	b := tr.AddProc(200, time.Second)
	call := trace.Event{T: 2e9, Proc: int16(a), Kind: trace.EvStoreCall, Store: trace.StoreRenew, N: 100}
	call.SetRecord(lease.Record{Holder: 100, Epoch: 1, Version: 4})
	ret := trace.Event{T: 2e9 + 1000, Proc: int16(a), Kind: trace.EvStore, Store: trace.StoreRenew, Res: trace.ResOK}
	ret.SetRecord(lease.Record{Holder: 100, Epoch: 1, Version: 5})
	seedRet := trace.Event{T: 2e9 + 2000, Proc: int16(b), Kind: trace.EvStore, Store: trace.StoreRead, Res: trace.ResOK}
	seedRet.SetRecord(lease.Record{Holder: 100, Until: 1760476496})
	tr.Add(trace.Event{T: 5e9, Proc: int16(a), Kind: trace.EvExit, N: trace.ExitKilled}, "")
	tr.Add(trace.Event{T: 1e9, Proc: int16(a), Kind: trace.EvRole, Role: lease.RoleLeader}, "")
	tr.Add(trace.Event{T: 1e9, Proc: int16(a), Kind: trace.EvLead, N: 1, A: 10e9}, "")
	tr.Add(call, "")
	tr.Add(ret, "")
	tr.Add(seedRet, "")
	kill := trace.Fault(int16(a), trace.Kill, 0, 0, false, trace.Str{})
	kill.T = 5e9
	tr.Add(kill, "kill proc 0 (pid 100)")
	tr.Finish(6 * time.Second)
	return tr
}

func TestRecordedTrace(t *testing.T) {
	tr := recorded()
	var last int64
	for i, e := range tr.Events {
		if e.T < last {
			t.Fatalf("event %d at %d after one at %d: Finish does not order by time", i, e.T, last)
		}
		last = e.T
	}
	if tr.Events[0].Kind != trace.EvRole || tr.Events[1].Kind != trace.EvLead {
		t.Errorf("events of one instant are not kept in the order added: %v, %v", tr.Events[0].Kind, tr.Events[1].Kind)
	}
	var b strings.Builder
	if err := tr.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"store renew {100 4}",           // a versioned record: holder and version
		"store renew = {100 5}",         // its result
		"store read = {100 1760476496}", // the seed's: holder and expiry second
		"FAULT kill proc 0 (pid 100)",
		"killed",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the trace lacks %q:\n%s", want, b.String())
		}
	}
	if got := tr.Setup(); !strings.HasPrefix(got, "variant=reference lease=9s renew=3s watch=3s") {
		t.Errorf("Setup() = %q", got)
	}
	iv := tr.Leadership()
	if len(iv) != 1 || iv[0].Proc != 0 || iv[0].From != 1e9 || iv[0].To != 5e9 || !iv[0].EndedByDie {
		t.Errorf("Leadership() = %+v, want process 0 from 1 s until its death at 5 s", iv)
	}
	if at, ok := tr.FirstFault(); !ok || at != 5e9 {
		t.Errorf("FirstFault() = %d, %v", at, ok)
	}
}

func TestReleaseRecycles(t *testing.T) {
	tr := trace.New()
	s := tr.Str("/tmp/leader.lock")
	if tr.S(s) != "/tmp/leader.lock" || tr.S(tr.Str("/tmp/leader.lock")) != "/tmp/leader.lock" {
		t.Fatal("the arena does not give back what was put in it")
	}
	tr.Release()
	if tr.Events != nil {
		t.Error("a released trace keeps its events")
	}
	tr.Release() // twice is harmless
}

// A spinning run's trace is not recycled: handed to later runs, each of a
// search's traces would hold its memory.
func TestReleaseDropsHugeTraces(t *testing.T) {
	for range 3 {
		tr := trace.New()
		tr.Events = append(tr.Events, make([]trace.Event, 1<<13)...)
		tr.Release()
		if got := cap(trace.New().Events); got >= 1<<13 {
			t.Fatalf("a new trace was handed a released trace's %d events of memory", got)
		}
	}
}

// ProcName is a process's PID, with its index when the run lets
// processes share PIDs and another has its PID; a restart after a power
// loss (the same PID, in a run that shares none) is named by its PID.
func TestProcName(t *testing.T) {
	tr := &trace.Trace{Procs: []trace.ProcInfo{{PID: 1}, {PID: 1}, {PID: 1003}}}
	for p, want := range []string{"1", "1", "1003"} {
		if got := tr.ProcName(p); got != want {
			t.Errorf("without shared PIDs, process %d: %q, want %q", p, got, want)
		}
	}
	tr.Run.SharedPIDs = true
	for p, want := range []string{"1#0", "1#1", "1003"} {
		if got := tr.ProcName(p); got != want {
			t.Errorf("with shared PIDs, process %d: %q, want %q", p, got, want)
		}
	}
}
