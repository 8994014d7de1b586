package sim

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// worldCfg is a small run: processes 100 at 0 and 200 at 100 ms unless
// procs are given, fast system calls, a 40 s horizon.
func worldCfg(seed uint64, procs ...ProcSpec) Config {
	if len(procs) == 0 {
		procs = []ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: 100 * time.Millisecond}}
	}
	return Config{
		Procs:      procs,
		Seed:       seed,
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
		TimerLateMax: 100 * time.Microsecond,
		Horizon:      40 * time.Second,
	}
}

func mustRun(t *testing.T, cfg Config) *trace.Trace {
	t.Helper()
	tr, err := Run(cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return tr
}

// logsOf returns process proc's log lines of message m.
func logsOf(tr *trace.Trace, proc int, m lease.Msg) []trace.Event {
	var out []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.EvLog && int(e.Proc) == proc && e.Msg == m {
			out = append(out, e)
		}
	}
	return out
}

// leaderEvents returns the times at which process proc came to believe it
// leads.
func leaderEvents(tr *trace.Trace, proc int) []int64 {
	var out []int64
	for _, e := range tr.Events {
		if e.Kind == trace.EvRole && int(e.Proc) == proc && e.Role == lease.RoleLeader {
			out = append(out, e.T)
		}
	}
	return out
}

func exitsOf(tr *trace.Trace, proc int) []trace.Event {
	var out []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.EvExit && int(e.Proc) == proc {
			out = append(out, e)
		}
	}
	return out
}

// syscallsOf returns process proc's system calls of kind op.
func syscallsOf(tr *trace.Trace, proc int, op trace.Op) []trace.Event {
	var out []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.EvSyscall && int(e.Proc) == proc && e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// fileData returns the content of path at the end of the run.
func fileData(tr *trace.Trace, path string) (string, bool) {
	for _, f := range tr.Files {
		if f.Name == path {
			return string(f.Data), true
		}
	}
	return "", false
}

func traceText(t *testing.T, tr *trace.Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dump logs the trace when the test has failed, to debug it.
func dump(t *testing.T, tr *trace.Trace) {
	t.Helper()
	if t.Failed() {
		t.Logf("trace:\n%s", traceText(t, tr))
	}
}

// everyFault is a run with three processes and a fault of every kind.
func everyFault(seed uint64) Config {
	cfg := worldCfg(seed,
		ProcSpec{PID: 100, Start: 0},
		ProcSpec{PID: 200, Start: 100 * time.Millisecond, Skew: 300 * time.Millisecond},
		ProcSpec{PID: 300, Start: 200 * time.Millisecond, DriftPPM: 50},
	)
	cfg.Faults = []Fault{
		{Kind: trace.FSError, Proc: 2, Call: "read", Nth: 3, Errno: syscall.EIO},
		{Kind: trace.Stop, Proc: 0, At: 4 * time.Second, Dur: 12 * time.Second},
		{Kind: trace.Skew, Proc: 1, At: 7 * time.Second, Delta: 2 * time.Second},
		{Kind: trace.Drift, Proc: 2, At: 8 * time.Second, PPM: -200},
		{Kind: trace.Jump, At: 10 * time.Second, Delta: 5 * time.Second},
		{Kind: trace.Kill, Proc: Leader, At: 22 * time.Second},
		{Kind: trace.Term, Proc: 2, At: 30 * time.Second},
		{Kind: trace.Kill, Proc: 1, After: "open-trunc", Nth: 4},
	}
	return cfg
}

func TestDeterminism(t *testing.T) {
	a := traceText(t, mustRun(t, everyFault(42)))
	tr := mustRun(t, everyFault(42))
	if b := traceText(t, tr); a != b {
		t.Fatalf("two runs of one config differ:\n%s", firstLineDiff(a, b))
	}
	// Every kind of fault fired, so the runs compared above exercised them.
	for _, kind := range []string{"fserr", "stop", "skew", "drift", "jump", "kill", "term"} {
		found := false
		for i, e := range tr.Events {
			// Format rather than Path: the fault's description.
			if s := tr.Format(i); e.Kind == trace.EvFault && strings.Contains(s, "FAULT "+kind+" ") && !strings.Contains(s, "no effect") {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s fault fired in the run", kind)
		}
	}
	if len(tr.Events) < 100 {
		t.Errorf("only %d events", len(tr.Events))
	}
	if tr.End != 40*time.Second {
		t.Errorf("End = %v, want the horizon 40s", tr.End)
	}
	for _, seed := range []uint64{0, 1, 43, 1 << 40} {
		if b := traceText(t, mustRun(t, everyFault(seed))); a == b {
			t.Errorf("seeds 42 and %d give the same trace", seed)
		}
	}
}

func firstLineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n\t%s\n\t%s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// TestCrashAfterExclCreate is the post's empty-file wedge: the first
// process dies between its O_EXCL create and its write; the file stays
// empty, and the second can neither read it nor create it, forever.
func TestCrashAfterExclCreate(t *testing.T) {
	cfg := worldCfg(7)
	cfg.Faults = []Fault{{Kind: trace.Kill, Proc: 0, After: "open-excl", Nth: 1}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)

	if ex := exitsOf(tr, 0); len(ex) != 1 || ex[0].N != -9 {
		t.Errorf("process 100 exits: %+v, want one, killed (-9)", ex)
	}
	if opens := syscallsOf(tr, 0, trace.OpOpen); len(opens) != 1 || opens[0].Flag&syscall.O_EXCL == 0 || opens[0].Errno != 0 {
		t.Errorf("process 100 opens: %+v; want exactly its successful O_EXCL open before dying", opens)
	}
	if got, ok := fileData(tr, DefaultLockPath); !ok || got != "" {
		t.Errorf("lock file = %q (exists %v), want it left empty", got, ok)
	}
	unreadable := logsOf(tr, 1, lease.MsgWatchUnreadable)
	// One per watch tick from 3.1 s to 39.1 s.
	if len(unreadable) < 12 {
		t.Errorf("process 200 logged %q %d times, want it at every tick (>= 12)",
			lease.MsgWatchUnreadable.Format(0, 0, time.UTC), len(unreadable))
	}
	for p := range 2 {
		if l := leaderEvents(tr, p); len(l) != 0 {
			t.Errorf("process %d became leader at %v; nobody should", tr.Procs[p].PID, l)
		}
	}
	want := "[Process: 200] [WATCHER] Could not read lease file, will retry"
	lines := tr.LogLines()
	if len(lines) == 0 || !strings.HasSuffix(lines[len(lines)-1], want) {
		t.Errorf("last log line = %q, want it to end with %q", lines[len(lines)-1], want)
	}
	// The wedge defeats O_EXCL: every acquisition attempt fails EEXIST.
	for _, e := range syscallsOf(tr, 1, trace.OpOpen) {
		if e.Errno.Sys() != syscall.EEXIST {
			t.Errorf("process 200's open at %s = %v, want EEXIST", trace.Secs(e.T), e.Errno)
		}
	}
}

// TestTermBeforeHandler: SIGTERM before signal.Notify kills the process,
// as the default action does; no handler runs, the empty file stays.
func TestTermBeforeHandler(t *testing.T) {
	cfg := worldCfg(3, ProcSpec{PID: 100})
	cfg.Faults = []Fault{{Kind: trace.Term, Proc: 0, After: "open-excl", Nth: 1}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	if ex := exitsOf(tr, 0); len(ex) != 1 || ex[0].N != -15 {
		t.Errorf("exits = %+v, want one with N == -15", ex)
	}
	for i, e := range tr.Events {
		if e.Kind == trace.EvSignal {
			t.Errorf("signal event %q: the handler was never installed", tr.Format(i))
		}
	}
	if l := logsOf(tr, 0, lease.MsgShutdown); len(l) != 0 {
		t.Errorf("the handler ran: %+v", l)
	}
	if got, ok := fileData(tr, DefaultLockPath); !ok || got != "" {
		t.Errorf("lock file = %q (exists %v), want it left empty", got, ok)
	}
	// Nothing happens in the process after its death.
	exit := exitsOf(tr, 0)[0]
	for _, e := range tr.Events {
		if e.Proc == 0 && e.T > exit.T {
			t.Errorf("event after death: %+v", e)
		}
	}
}

// TestTermLeader: SIGTERM once the handler is installed runs it: the
// leader logs the shutdown, removes the lock file, logs the release and
// exits 0.
func TestTermLeader(t *testing.T) {
	cfg := worldCfg(3, ProcSpec{PID: 100})
	cfg.Faults = []Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)

	installed := false
	for _, e := range tr.Events {
		if e.Kind == trace.EvSignal && e.Op == trace.OpSigaction && e.T < int64(5*time.Second) {
			installed = true
		}
	}
	if !installed {
		t.Error("no sigaction before the SIGTERM")
	}
	var got []lease.Msg
	for _, e := range tr.Events {
		if e.Kind == trace.EvLog && e.T >= int64(5*time.Second) {
			got = append(got, e.Msg)
		}
	}
	if want := []lease.Msg{lease.MsgShutdown, lease.MsgReleased}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages after SIGTERM = %v, want %v", got, want)
	}
	if _, ok := fileData(tr, DefaultLockPath); ok {
		t.Error("the lock file is still there")
	}
	if ex := exitsOf(tr, 0); len(ex) != 1 || ex[0].N != 0 {
		t.Errorf("exits = %+v, want one with code 0", ex)
	}
	if rm := syscallsOf(tr, 0, trace.OpRemove); len(rm) != 1 || rm[0].Errno != 0 {
		t.Errorf("removes = %+v, want one, successful", rm)
	}
	lines := tr.LogLines()
	if n := len(lines); n < 2 || !strings.HasSuffix(lines[n-2], "[Process: 100] Received shutdown signal, releasing lease") ||
		!strings.HasSuffix(lines[n-1], "[Process: 100] Lease released") {
		t.Errorf("last log lines = %q", lines[max(0, n-2):])
	}

	// With a watcher, the released lease is acquired at its next tick.
	cfg = worldCfg(3)
	cfg.Faults = []Fault{{Kind: trace.Term, Proc: 0, At: 5 * time.Second}}
	tr = mustRun(t, cfg)
	if l := leaderEvents(tr, 1); len(l) == 0 || l[0] < int64(5*time.Second) || l[0] > int64(8200*time.Millisecond) {
		t.Errorf("process 200 became leader at %v, want at its first tick after 5s", l)
	}
}

// TestStopLeader: a leader paused for 20 s, longer than its 9 s lease. A
// watcher takes over meanwhile; the paused process takes no step until
// SIGCONT, then finds the lease taken.
func TestStopLeader(t *testing.T) {
	const stopAt, dur = 5 * time.Second, 20 * time.Second
	cfg := worldCfg(11)
	cfg.Faults = []Fault{{Kind: trace.Stop, Proc: 0, At: stopAt, Dur: dur}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	from, to := int64(stopAt), int64(stopAt+dur)

	if l := leaderEvents(tr, 0); len(l) == 0 || l[0] > from {
		t.Fatalf("process 100 led at %v; want it leading before the stop", l)
	}
	took := false
	for _, at := range leaderEvents(tr, 1) {
		if at > from && at < to {
			took = true
		}
	}
	if !took {
		t.Errorf("process 200 became leader at %v, want during the pause [%v, %v]", leaderEvents(tr, 1), stopAt, stopAt+dur)
	}
	var after []trace.Event
	for _, e := range tr.Events {
		if e.Proc != 0 || e.Kind == trace.EvFault {
			continue
		}
		if e.T > from && e.T < to {
			t.Errorf("process 100 stepped while stopped: %s", tr.Format(indexOf(tr, e)))
		}
		if e.T >= to {
			after = append(after, e)
		}
	}
	if len(after) == 0 || after[0].T > to+int64(time.Millisecond) {
		t.Fatalf("process 100's first step after SIGCONT: %+v; want one at once", after)
	}
	// It finds the other's lease and steps down, or (with another
	// interleaving) overwrites it.
	for _, e := range after {
		if e.Kind != trace.EvLog {
			continue
		}
		switch e.Msg {
		case lease.MsgTaken:
			if e.A != 200 {
				t.Errorf("MsgTaken names %d, want 200", e.A)
			}
		case lease.MsgRenewed:
		default:
			t.Errorf("process 100's first line after SIGCONT is %q, want a step-down or a renewal", e.Msg.Format(e.A, e.B, time.UTC))
		}
		break
	}
}

func indexOf(tr *trace.Trace, e trace.Event) int {
	for i := range tr.Events {
		if tr.Events[i] == e {
			return i
		}
	}
	return -1
}

// TestJumpExpiresEarly: a wall-clock step of +20 s makes the watcher see
// a lease expired that the leader renewed a moment ago.
func TestJumpExpiresEarly(t *testing.T) {
	cfg := worldCfg(5)
	cfg.Horizon = 20 * time.Second
	control := mustRun(t, cfg)
	if l := leaderEvents(control, 1); len(l) != 0 {
		t.Fatalf("without the jump process 200 became leader at %v", l)
	}

	cfg.Faults = []Fault{{Kind: trace.Jump, At: 6050 * time.Millisecond, Delta: 20 * time.Second}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	l := leaderEvents(tr, 1)
	if len(l) == 0 {
		t.Fatal("process 200 never became leader")
	}
	// The last lease the leader wrote before the takeover.
	var wrote int64 = -1
	for _, e := range syscallsOf(tr, 0, trace.OpWrite) {
		if e.Errno == 0 && e.T < l[0] {
			wrote = e.T
		}
	}
	if wrote < 0 {
		t.Fatal("process 100 wrote no lease")
	}
	if held := time.Duration(l[0] - wrote); held >= 9*time.Second {
		t.Errorf("takeover %v after the last renewal; want it before the 9 s lease elapsed", held)
	} else if held > time.Second {
		t.Errorf("takeover %v after the last renewal; want it at the first watch tick after the jump", held)
	}
	if ex := logsOf(tr, 1, lease.MsgExpired); len(ex) == 0 || ex[0].A != 100 {
		t.Errorf("process 200's expiry lines: %+v, want one naming 100", ex)
	}
}

// TestFSErrorRenewal: the leader's second file write (its first renewal)
// fails with ENOSPC after the truncating open, which leaves the file empty.
func TestFSErrorRenewal(t *testing.T) {
	cfg := worldCfg(9)
	cfg.Faults = []Fault{{Kind: trace.FSError, Proc: 0, Call: "write", Nth: 2, Errno: syscall.ENOSPC}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)

	writes := syscallsOf(tr, 0, trace.OpWrite)
	if len(writes) < 2 || writes[0].Errno != 0 || writes[1].Errno.Sys() != syscall.ENOSPC {
		t.Fatalf("process 100's writes: %+v; want the second to fail with ENOSPC", writes)
	}
	failed := logsOf(tr, 0, lease.MsgRenewFailed)
	if len(failed) != 1 || failed[0].T < writes[1].T {
		t.Errorf("MsgRenewFailed lines: %+v; want one, after the failed write", failed)
	}
	want := "[Process: 100] [LEADER] Failed to renew lease, will retry"
	found := false
	for _, l := range tr.LogLines() {
		found = found || strings.HasSuffix(l, want)
	}
	if !found {
		t.Errorf("no log line %q", want)
	}
	// The truncated file wedges everyone: the leader steps down after
	// three unreadable reads and nobody leads again.
	if sd := logsOf(tr, 0, lease.MsgStepDown); len(sd) != 1 {
		t.Errorf("process 100 stepped down %d times, want once", len(sd))
	}
	if l := leaderEvents(tr, 1); len(l) != 0 {
		t.Errorf("process 200 became leader at %v", l)
	}
	if got, ok := fileData(tr, DefaultLockPath); !ok || got != "" {
		t.Errorf("lock file = %q (exists %v), want it left empty", got, ok)
	}
}

// TestTickerAfterStop: a renewal ticker that missed several ticks while
// its process was stopped delivers one tick at once on resume, then keeps
// its phase (time.Ticker's semantics): no burst of the missed ones.
func TestTickerAfterStop(t *testing.T) {
	cfg := worldCfg(13, ProcSpec{PID: 100})
	cfg.Horizon = 20 * time.Second
	const cont = 14500 * time.Millisecond
	cfg.Faults = []Fault{{Kind: trace.Stop, Proc: 0, At: 4 * time.Second, Dur: cont - 4*time.Second}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)

	count := func(from, to time.Duration) int {
		n := 0
		for _, e := range syscallsOf(tr, 0, trace.OpRead) {
			if e.T >= int64(from) && e.T < int64(to) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		from, to time.Duration
		want     int
		what     string
	}{
		{0, 4 * time.Second, 1, "before the stop (the tick at 3 s)"},
		{4 * time.Second, cont, 0, "while stopped"},
		{cont, cont + 400*time.Millisecond, 1, "at resume (one late tick, not the three missed)"},
		{cont + 400*time.Millisecond, 15500 * time.Millisecond, 1, "at 15 s (the ticker's phase)"},
		{15500 * time.Millisecond, 20 * time.Second, 1, "at 18 s"},
	} {
		if got := count(tc.from, tc.to); got != tc.want {
			t.Errorf("%d renewal reads in [%v, %v), want %d %s", got, tc.from, tc.to, tc.want, tc.what)
		}
	}
	// Each read is a renewal: one renewed line per read.
	if r, w := len(syscallsOf(tr, 0, trace.OpRead)), len(logsOf(tr, 0, lease.MsgRenewed)); r != w {
		t.Errorf("%d reads, %d renewals", r, w)
	}
}

func TestNormalize(t *testing.T) {
	var c Config
	c.Procs = []ProcSpec{{PID: 1}}
	if err := c.Normalize(); err != nil {
		t.Fatalf("Normalize of a minimal config: %v", err)
	}
	if c.Variant != "seed" || c.LockPath != DefaultLockPath || c.Horizon != DefaultHorizon ||
		!c.WallBase.Equal(DefaultWallBase) || c.Lease.LeaseDuration != 9*time.Second ||
		c.Lease.RenewInterval != 3*time.Second || c.Lease.WatchInterval != 3*time.Second {
		t.Errorf("defaults: %+v", c)
	}

	ok := func() Config { return worldCfg(1) }
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"no procs", func(c *Config) { c.Procs = nil }, []string{"at least one process"}},
		{"duplicate pid", func(c *Config) { c.Procs[1].PID = 100 }, []string{"distinct", "100"}},
		{"zero pid", func(c *Config) { c.Procs[0].PID = 0 }, []string{"positive"}},
		{"negative start", func(c *Config) { c.Procs[1].Start = -1 }, []string{"negative"}},
		{"stopped clock", func(c *Config) { c.Procs[0].DriftPPM = -1e6 }, []string{"drift"}},
		{"unknown variant", func(c *Config) { c.Variant = "nope" }, []string{`"nope"`, "seed-naive", "seed"}},
		{"lease == renew", func(c *Config) {
			c.Lease = lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: time.Second}
		}, []string{"lease 3s", "renew interval 3s"}},
		{"lease < renew", func(c *Config) {
			c.Lease = lease.Config{LeaseDuration: 2 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: time.Second}
		}, []string{"lease 2s"}},
		{"partial lease config", func(c *Config) { c.Lease = lease.Config{LeaseDuration: 9 * time.Second} }, []string{"positive"}},
		{"relative lock path", func(c *Config) { c.LockPath = "leader.lock" }, []string{"absolute"}},
		{"latency bounds", func(c *Config) { c.SyscallMin, c.SyscallMax = 2, 1 }, []string{"latency"}},
		{"negative timer lateness", func(c *Config) { c.TimerLateMax = -1 }, []string{"latency"}},
		{"fault proc out of range", func(c *Config) { c.Faults = []Fault{{Kind: trace.Kill, Proc: 2}} }, []string{"no process 2"}},
		{"fault proc negative", func(c *Config) { c.Faults = []Fault{{Kind: trace.Stop, Proc: -2, Dur: 1}} }, []string{"no process -2"}},
		{"fault kind zero", func(c *Config) { c.Faults = []Fault{{Proc: 0}} }, []string{"unknown kind"}},
		{"fault kind cont", func(c *Config) { c.Faults = []Fault{{Kind: trace.Cont, Proc: 0}} }, []string{"unknown kind"}},
		{"unknown call kind", func(c *Config) { c.Faults = []Fault{{Kind: trace.Kill, Proc: 0, After: "frobnicate"}} }, []string{`"frobnicate"`, "open-excl"}},
		{"fserr unknown call", func(c *Config) {
			c.Faults = []Fault{{Kind: trace.FSError, Proc: 0, Call: "mmap", Errno: syscall.EIO}}
		}, []string{"call kind"}},
		{"fserr no errno", func(c *Config) { c.Faults = []Fault{{Kind: trace.FSError, Proc: 0, Call: "write"}} }, []string{"errno"}},
		{"drift fault stops the clock", func(c *Config) {
			c.Faults = []Fault{{Kind: trace.Drift, Proc: 0, At: time.Second, PPM: -1e6}}
		}, []string{"drift", "-1000000"}},
		{"negative fault time", func(c *Config) { c.Faults = []Fault{{Kind: trace.Kill, Proc: 0, At: -1}} }, []string{"negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.mod(&c)
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
						t.Errorf("Normalize panicked: %v", r)
					}
				}()
				return c.Normalize()
			}()
			if err == nil {
				t.Fatal("Normalize accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
			if tc.name == "unknown variant" && !errors.Is(err, lease.ErrUnknownVariant) {
				t.Errorf("error %v is not ErrUnknownVariant", err)
			}
			// Run reports the same error and returns no trace.
			c = ok()
			tc.mod(&c)
			if tr, err := Run(c); err == nil || tr != nil {
				t.Errorf("Run = %v, %v; want nil and an error", tr, err)
			}
		})
	}
}

// TestNoGoroutineLeak: runs that end with activities blocked, stopped,
// killed or in the middle of a hand-off leave no goroutine behind. Idle
// coroutines kept for reuse are allowed, so the count is taken after a
// warm-up and must then stay flat.
func TestNoGoroutineLeak(t *testing.T) {
	configs := func(seed uint64) []Config {
		a := everyFault(seed)
		b := worldCfg(seed)
		b.Faults = []Fault{{Kind: trace.Stop, Proc: 0, At: 5 * time.Second, Dur: time.Hour}}
		c := worldCfg(seed)
		c.Faults = []Fault{{Kind: trace.Kill, Proc: 0, After: "open-excl"}}
		d := worldCfg(seed)
		d.Horizon = 3*time.Second + 50*time.Microsecond // mid-renewal
		return []Config{a, b, c, d}
	}
	for seed := range uint64(5) {
		for _, c := range configs(seed) {
			mustRun(t, c)
		}
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	for seed := range uint64(50) {
		for _, c := range configs(100 + seed) {
			mustRun(t, c)
		}
	}
	after := 0
	for deadline := time.Now().Add(2 * time.Second); ; {
		runtime.GC()
		after = runtime.NumGoroutine()
		if after-before <= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if after-before > 4 {
		t.Errorf("goroutines: %d before 200 runs, %d after", before, after)
	}
}

// The reference, SIGTERMed while a watcher, says it held nothing (not that
// the lease is "no longer ours") and exits without touching the store.
func TestReferenceTermOfWatcher(t *testing.T) {
	cfg := worldCfg(5)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{{Kind: trace.Term, Proc: 1, At: 5 * time.Second}}
	tr := mustRun(t, cfg)
	var got []lease.Msg
	for _, e := range tr.Events {
		if e.Kind == trace.EvLog && e.Proc == 1 && e.T >= int64(5*time.Second) {
			got = append(got, e.Msg)
		}
	}
	if want := []lease.Msg{lease.MsgShutdown, lease.MsgRefNotLeading}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the watcher's messages after SIGTERM = %v, want %v", got, want)
	}
	if ex := exitsOf(tr, 1); len(ex) != 1 || ex[0].N != 0 {
		t.Errorf("exits = %+v, want one with code 0", ex)
	}
}

// Trace.Setup marks the faults that never fired, and the ones that found
// no leader: a kill after a call the process never makes, a kill of a
// process already dead, and a stop of the leader when none leads.
func TestSetupMarksFaultsThatNeverFired(t *testing.T) {
	cfg := worldCfg(3, ProcSpec{PID: 100, Start: time.Second}, ProcSpec{PID: 200, Start: 1100 * time.Millisecond})
	cfg.Faults = []Fault{
		{Kind: trace.Stop, Proc: Leader, At: 50 * time.Millisecond, Dur: time.Second}, // before anyone leads
		{Kind: trace.Kill, Proc: 0, At: 5 * time.Second},
		{Kind: trace.Kill, Proc: 0, At: 6 * time.Second},                     // already dead
		{Kind: trace.Kill, Proc: 1, After: "fsync", Nth: 2},                  // the seed never fsyncs
		{Kind: trace.Stop, Proc: 1, After: "read", Nth: 1, Dur: time.Second}, // fires, at the time of its read
		{Kind: trace.Term, Proc: 1, At: 30 * time.Second},                    // fires
		{Kind: trace.Skew, Proc: 1, At: 35 * time.Second, Delta: time.Hour},  // after its exit: never
	}
	tr := mustRun(t, cfg)
	got := tr.Setup()
	for _, want := range []string{
		" fault=[stop leader at 0.050000s for 1s, no leader to hit]",
		" fault=[kill proc 0 at 5.000000s]",
		" fault=[kill proc 0 at 6.000000s, never fired]",
		" fault=[kill proc 1 after fsync #2, never fired]",
		" fault=[stop proc 1 after read #1 for 1s]",
		" fault=[term proc 1 at 30.000000s]",
		" fault=[skew proc 1 at 35.000000s by 1h0m0s, never fired]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Setup() lacks %q:\n%s", want, got)
		}
	}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, strings.Split(cfg.String(), " fault=")[0]+" fault=") {
		t.Errorf("Setup() does not start with the configuration:\n%s\n%s", got, cfg)
	}
}

// Drawn setups of any lease Validate accepts, up to a day, make worlds:
// faults drawn in leases (a pause up to two, a stretch up to eight) are
// held to the longest run, and so is the horizon (a probe's check with
// -lease 4h stopped at its first run, "fault emfile: a duration over
// 24h0m0s").
func TestRandomSetupsOfLongLeases(t *testing.T) {
	for _, l := range []time.Duration{3 * time.Hour, 4 * time.Hour, 13 * time.Hour, 24 * time.Hour} {
		o := SetupOptions{Variant: "reference", Faults: AllFaults, Scheduler: "mixed"}
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		o.Lease.LeaseDuration, o.Lease.RenewInterval, o.Lease.WatchInterval = l, l/4, l/4
		for seed := range uint64(200) {
			w, err := New(RandomSetup(o, seed))
			if err != nil {
				t.Fatalf("lease %v, seed %d: %v", l, seed, err)
			}
			w.Release()
		}
	}
}
