package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// script is a chooser that returns its values in order, then 0.
func script(vs ...int) func(int) int {
	return func(n int) int {
		if len(vs) == 0 {
			return 0
		}
		v := vs[0]
		vs = vs[1:]
		if v >= n {
			v = n - 1
		}
		return v
	}
}

func TestPowerLossData(t *testing.T) {
	for _, c := range []struct {
		torn int
		want string
	}{{TornOld, "old"}, {TornNew, "new data"}, {TornZeros, "\x00\x00\x00\x00\x00\x00\x00\x00"}} {
		f := NewFileSystem()
		f.MkdirAll("/d")
		f.Place("/d/a", []byte("old"), 0o644)
		f.TrackDurability()
		v := f.View(f.NewFDTable())
		if err := lease.WriteFile(v, "/d/a", []byte("new data"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.PowerLoss(script(0, c.torn)) // journal prefix (empty), then the file's fate
		if b, _ := v.ReadFile("/d/a"); string(b) != c.want {
			t.Errorf("torn %d: %q, want %q", c.torn, b, c.want)
		}
	}
	// fsynced data survives whatever the chooser says.
	f := NewFileSystem()
	f.MkdirAll("/d")
	f.Place("/d/a", []byte("old"), 0o644)
	f.TrackDurability()
	v := f.View(f.NewFDTable())
	fd, _ := v.Open("/d/a", lease.O_WRONLY|lease.O_TRUNC, 0)
	v.Write(fd, []byte("synced"))
	v.Fsync(fd)
	v.Close(fd)
	f.PowerLoss(script(0, TornOld))
	if b, _ := v.ReadFile("/d/a"); string(b) != "synced" {
		t.Errorf("fsynced data lost: %q", b)
	}
	// A prefix of the new data.
	f = NewFileSystem()
	f.MkdirAll("/d")
	f.Place("/d/a", nil, 0o644)
	f.TrackDurability()
	v = f.View(f.NewFDTable())
	lease.WriteFile(v, "/d/a", []byte("abcdef"), 0o644)
	f.PowerLoss(script(0, TornPrefix, 2))
	if b, _ := v.ReadFile("/d/a"); string(b) != "ab" {
		t.Errorf("torn prefix: %q", b)
	}
}

func TestPowerLossNames(t *testing.T) {
	setup := func() (*FileSystem, lease.FS) {
		f := NewFileSystem()
		f.MkdirAll("/d")
		f.TrackDurability()
		v := f.View(f.NewFDTable())
		lease.WriteFile(v, "/d/tmp", []byte("x"), 0o644) // journal: create tmp
		v.Link("/d/tmp", "/d/v1")                        // link v1
		v.Remove("/d/tmp")                               // unlink tmp
		return f, v
	}
	exists := func(v lease.FS, name string) bool { _, err := v.Stat(name); return err == nil }
	for k, want := range []struct{ tmp, v1 bool }{{false, false}, {true, false}, {true, true}, {false, true}} {
		f, v := setup()
		f.PowerLoss(script(k, TornNew))
		if exists(v, "/d/tmp") != want.tmp || exists(v, "/d/v1") != want.v1 {
			t.Errorf("journal prefix %d: tmp %v v1 %v, want %+v", k, exists(v, "/d/tmp"), exists(v, "/d/v1"), want)
		}
	}
	// An fsync of the directory makes the names durable.
	f, v := setup()
	fd, err := v.Open("/d", lease.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	v.Fsync(fd)
	v.Close(fd)
	v.Link("/d/v1", "/d/v2") // after the commit: may be lost
	f.PowerLoss(script(0))
	if !exists(v, "/d/v1") || exists(v, "/d/tmp") || exists(v, "/d/v2") {
		t.Errorf("after a directory fsync: v1 %v tmp %v v2 %v", exists(v, "/d/v1"), exists(v, "/d/tmp"), exists(v, "/d/v2"))
	}
	// A rename is atomic: old or new name, never both or neither.
	f = NewFileSystem()
	f.MkdirAll("/d")
	f.Place("/d/a", []byte("x"), 0o644)
	f.TrackDurability()
	v = f.View(f.NewFDTable())
	v.Rename("/d/a", "/d/b")
	for k := range 2 {
		g := NewFileSystem()
		*g = *f
		g.names = nameTable{m: cloneNames(f.names.m)}
		g.journal = append([]nsChange(nil), f.journal...)
		gv := g.View(g.NewFDTable())
		g.PowerLoss(script(k))
		if exists(gv, "/d/a") == exists(gv, "/d/b") {
			t.Errorf("rename, prefix %d: a %v b %v", k, exists(gv, "/d/a"), exists(gv, "/d/b"))
		}
	}
	// Without tracking, a power loss changes nothing.
	g := NewFileSystem()
	g.MkdirAll("/d")
	gv := g.View(g.NewFDTable())
	lease.WriteFile(gv, "/d/a", []byte("x"), 0o644)
	g.PowerLoss(script(0, TornOld))
	if b, err := gv.ReadFile("/d/a"); string(b) != "x" || err != nil {
		t.Errorf("untracked: %q %v", b, err)
	}
}

func cloneNames(m map[string]*inode) map[string]*inode {
	out := map[string]*inode{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A power loss aimed at a call (Fault.After) loses what was not durable,
// as one at a time does: the seed's lock file, written and never fsynced,
// does not survive whole in every run (a probe: such a loss tracked
// nothing, and every write since the last fsync survived it).
func TestPowerLossAimedAtACallLosesData(t *testing.T) {
	whole, other := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		cfg := Config{Variant: "seed", Seed: seed, Horizon: 4 * time.Second, Procs: []ProcSpec{{PID: 10}},
			Faults: []Fault{{Kind: trace.Power, Proc: 0, After: "write", Nth: 1}}}
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		if !slices.ContainsFunc(w.Trace().Events, func(e trace.Event) bool {
			return e.Kind == trace.EvFault && e.FaultKind() == trace.Power && !e.Missed()
		}) {
			t.Fatalf("seed %d: no power loss in the run: the test shows nothing", seed)
		}
		b, err := w.fs.View(w.fs.NewFDTable()).ReadFile(w.cfg.LockPath)
		if err == nil && len(b) > 0 && b[len(b)-1] == '}' {
			whole++
		} else {
			other++
		}
	}
	if other == 0 {
		t.Errorf("the lock file survived the power loss whole in all %d runs: nothing was lost", whole)
	}
}

// A power loss aimed after a call, with a restart delay (Fault.Dur),
// starts the machine's programs again that long after wherever it fell:
// each configured process that had started, once, with its PID and its
// lease configuration (which the checker judges it by), within the spread
// (Delta), and the run's calm runs from the last start. A
// second loss starts them once again, not twice.
func TestPowerLossAimedRestarts(t *testing.T) {
	const dur, spread = 1500 * time.Millisecond, 700 * time.Millisecond
	for _, losses := range []int{1, 2} {
		for seed := uint64(0); seed < 20; seed++ {
			alt := lease.DefaultConfig() // a process of a rolling change: its own lease, judged by it
			alt.LeaseDuration, alt.RenewInterval, alt.WatchInterval = 13500*time.Millisecond, 4500*time.Millisecond, 4500*time.Millisecond
			cfg := Config{Variant: "reference", Seed: seed, Horizon: 3 * time.Second, Calm: 5 * time.Second,
				Procs: []ProcSpec{{PID: 10}, {PID: 20, Lease: alt, Slow: time.Millisecond}}}
			cfg.Faults = []Fault{{Kind: trace.Power, Proc: 0, After: "any", Nth: 1 + int(seed%8), Dur: dur, Delta: spread}}
			if losses == 2 { // after the first restart, at a time
				cfg.Faults = append(cfg.Faults, Fault{Kind: trace.Power, At: 2900 * time.Millisecond, Dur: dur, Delta: spread})
			}
			tr, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			at := powerLosses(tr)
			if len(at) != losses {
				t.Fatalf("seed %d: %d power losses, want %d: the test shows nothing", seed, len(at), losses)
			}
			if want := 2 + 2*len(at); len(tr.Procs) != want {
				t.Fatalf("seed %d, %d losses: %d processes, want %d (two configured, two a restart)", seed, len(at), len(tr.Procs), want)
			}
			var last int64
			for i, p := range tr.Procs[2:] {
				boot := at[i/2]
				if p.Lease.LeaseDuration != cfg.Procs[i%2].Lease.LeaseDuration || p.Lease.WatchInterval != cfg.Procs[i%2].Lease.WatchInterval {
					t.Errorf("seed %d: restarted process %d: the trace judges it by lease %v, want its own, %v", seed, 2+i, p.Lease.LeaseDuration, cfg.Procs[i%2].Lease.LeaseDuration)
				}
				if p.PID != cfg.Procs[i%2].PID || int64(p.Start) < boot+int64(dur) || int64(p.Start) >= boot+int64(dur+spread) {
					t.Errorf("seed %d: restarted process %d: pid %d at %v, want pid %d within [%v, %v)", seed, 2+i, p.PID, p.Start,
						cfg.Procs[i%2].PID, time.Duration(boot)+dur, time.Duration(boot)+dur+spread)
				}
				last = max(last, int64(p.Start))
				ran := slices.ContainsFunc(tr.Events, func(e trace.Event) bool { return int(e.Proc) == 2+i && e.Kind == trace.EvSyscall })
				if !ran && len(at) == 1 {
					t.Errorf("seed %d: restarted process %d made no system call", seed, 2+i)
				}
			}
			if end := tr.End; len(at) == 1 && int64(end) < last+int64(cfg.Calm) {
				t.Errorf("seed %d: the run ended at %v, before the calm after the last restart (%v)", seed, end, time.Duration(last)+cfg.Calm)
			}
		}
	}
}

// A fault that counts one process's calls names one (a power loss's was
// not checked, and New indexed the processes with it); a restart's spread
// needs its delay; no duration passes a day (a restart's delay near the
// largest overflowed into processes starting at negative times).
func TestFaultAfterCallValidated(t *testing.T) {
	for _, f := range []Fault{
		{Kind: trace.Power, Proc: 5, After: "write"},
		{Kind: trace.Power, Proc: -2, After: "write"},
		{Kind: trace.Power, At: time.Second, Delta: time.Second},
		{Kind: trace.Power, At: time.Second, Dur: time.Second, Delta: -time.Second},
		{Kind: trace.Power, At: time.Second, Dur: 1<<63 - 1},
		{Kind: trace.Power, At: time.Second, Dur: time.Second, Delta: 1<<63 - 1},
		{Kind: trace.Stop, At: time.Second, Dur: 1<<63 - 1},
	} {
		cfg := Config{Variant: "seed", Horizon: time.Second, Procs: []ProcSpec{{PID: 10}}, Faults: []Fault{f}}
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v: accepted", f)
		}
	}
}

// Half the power losses a check draws are aimed after a call that
// changes the disk (the window between a write and its fsync), for a drawn
// process or the leader, with a restart 1 to 2 s after them; the other
// half at a time, with the restart configured. Run, each aimed loss falls
// once: at its call (two fifths to nearly all of them, by variant), or, when
// the call never comes (a kind the variant never makes, fewer than N), at
// its instant; and the machine's programs start again after it.
func TestRandomPowerLossesAimedAtCalls(t *testing.T) {
	for _, v := range []string{"seed", "reference", "flock", "redis"} {
		o := SetupOptions{Variant: v}
		o.Faults, _ = ParseFaults("power")
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		aimed, timed, fired, restarted, leader, byCall := 0, 0, 0, 0, 0, 0
		for seed := range uint64(200) {
			cfg := RandomSetup(o, seed)
			var p *Fault
			for i := range cfg.Faults {
				if cfg.Faults[i].Kind == trace.Power {
					p = &cfg.Faults[i]
				}
			}
			if p == nil {
				t.Fatalf("%s seed %d: -faults power drew no power loss", v, seed)
			}
			if p.After == "" {
				timed++
				continue
			}
			aimed++
			if p.Proc == Leader {
				leader++
			}
			calls := powerCalls
			if v == "redis" {
				calls = errCallsServer
			}
			if !slices.Contains(calls, p.After) && p.After != "any" || p.Dur < time.Second || p.Dur >= 2*time.Second || p.Delta >= time.Second || p.At < 2*time.Second {
				t.Fatalf("%s seed %d: aimed loss %+v", v, seed, *p)
			}
			if seed%2 != 0 {
				continue
			}
			tr, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			n, losses := len(cfg.Procs), 0
			for _, e := range tr.Events {
				if e.Kind == trace.EvFault && e.FaultKind() == trace.Power && !e.Missed() {
					losses++
					if e.T != int64(p.At) {
						byCall++
					}
					if len(tr.Procs) > n {
						restarted++
					}
				}
			}
			fired += losses
			if losses != 1 {
				t.Errorf("%s seed %d: %d power losses, want 1 (at its call, or at %v if the call never came)", v, seed, losses, p.At)
			}
		}
		if aimed < 70 || timed < 70 || leader < 20 || aimed-leader < 20 {
			t.Errorf("%s: %d losses aimed at calls (%d at the leader's), %d at a time, of 200: want about half each", v, aimed, leader, timed)
		}
		t.Logf("%s: aimed %d (leader %d), timed %d, fired %d, %d of them at their call", v, aimed, leader, timed, fired, byCall)
		if byCall < 12 || restarted != fired {
			t.Errorf("%s: of the aimed losses run, %d fired at their call, %d in all, and %d restarted the machine", v, byCall, fired, restarted)
		}
	}
}

// A power loss aimed after a call, with At set, falls at its call if the
// call comes first and then not again at At; otherwise at At, and then not
// again at the call.
func TestPowerLossAimedFallsBack(t *testing.T) {
	for _, c := range []struct {
		proc   int
		after  string
		nth    int
		atCall bool
	}{
		{0, "write", 1, true},   // the leader's first record write, at once
		{0, "rename", 1, false}, // the reference renames nothing
		{0, "any", 400, false},  // more calls than come before At
		// A leader's first writes as leader are its renewals, the first
		// at 3 s, after At; after the restart the new leader's (at 14.5 s
		// and 17.5 s) would count on to the second.
		{Leader, "write", 2, false},
	} {
		cfg := Config{Variant: "reference", Seed: 1, Horizon: 20 * time.Second, Procs: []ProcSpec{{PID: 10}, {PID: 20}},
			Faults: []Fault{{Kind: trace.Power, Proc: c.proc, After: c.after, Nth: c.nth, At: 1500 * time.Millisecond, Dur: time.Second}}}
		tr, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		at := powerLosses(tr)
		switch {
		case len(at) != 1:
			t.Errorf("after %s #%d: %d power losses (at %v), want 1", c.after, c.nth, len(at), at)
		case c.atCall && at[0] == int64(1500*time.Millisecond):
			t.Errorf("after %s #%d: the loss fell at its instant, not at its call", c.after, c.nth)
		case !c.atCall && at[0] != int64(1500*time.Millisecond):
			t.Errorf("after %s #%d: the loss fell at %v, want its instant (1.5s): the call never comes before it", c.after, c.nth, time.Duration(at[0]))
		}
	}
}

// The machine restarts once per loss, whatever falls in its downtime: a
// second loss before the restart's processes start moves them to its own
// restart (not a second set beside them), and a process configured to
// start while the machine is down starts with the restart instead (it
// ran alone on a machine without power, a review found). A restarted
// process keeps its whole configuration: its speed, clock and boot id.
func TestPowerLossRestartsOnce(t *testing.T) {
	run := func(t *testing.T, cfg Config) (*World, []int64) {
		t.Helper()
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		return w, powerLosses(w.Trace())
	}
	calls := func(w *World, p int, before int64) int {
		n := 0
		for _, e := range w.Trace().Events {
			if int(e.Proc) == p && e.Kind == trace.EvSyscall && e.T < before {
				n++
			}
		}
		return n
	}
	t.Run("second loss in the downtime", func(t *testing.T) {
		cfg := Config{Variant: "reference", Seed: 1, Horizon: 10 * time.Second, Procs: []ProcSpec{{PID: 10}, {PID: 20}},
			Faults: []Fault{{Kind: trace.Power, At: time.Second, Dur: 2 * time.Second, Delta: time.Second},
				{Kind: trace.Power, At: 1500 * time.Millisecond, Dur: 2 * time.Second, Delta: time.Second}}}
		w, at := run(t, cfg)
		tr := w.Trace()
		if len(at) != 2 || len(tr.Procs) != 4 {
			t.Fatalf("%d losses, %d processes: want 2 and 4 (each program once after the restart)", len(at), len(tr.Procs))
		}
		for i, p := range tr.Procs[2:] {
			if p.PID != cfg.Procs[i].PID || p.Start < 3500*time.Millisecond || p.Start >= 4500*time.Millisecond {
				t.Errorf("restarted process %d: pid %d at %v, want pid %d within [3.5s, 4.5s)", 2+i, p.PID, p.Start, cfg.Procs[i].PID)
			}
			if calls(w, 2+i, int64(p.Start)) != 0 {
				t.Errorf("restarted process %d made calls before its start", 2+i)
			}
		}
		if tr.Procs[2].Start == tr.Procs[3].Start {
			t.Errorf("both restarted at %v: the spread (Delta) spreads nothing", tr.Procs[2].Start)
		}
	})
	t.Run("launch in the downtime", func(t *testing.T) {
		alt := lease.DefaultConfig()
		alt.LeaseDuration, alt.RenewInterval, alt.WatchInterval = 13500*time.Millisecond, 4500*time.Millisecond, 4500*time.Millisecond
		cfg := Config{Variant: "reference", Seed: 1, Horizon: 10 * time.Second,
			Procs:  []ProcSpec{{PID: 10, Slow: time.Millisecond, Skew: time.Second, DriftPPM: 300, NoBootID: true, Lease: alt}, {PID: 20, Start: 500 * time.Millisecond}},
			Faults: []Fault{{Kind: trace.Power, Proc: 0, After: "any", Nth: 1, Dur: time.Second}}}
		w, at := run(t, cfg)
		tr := w.Trace()
		if len(at) != 1 || at[0] >= int64(500*time.Millisecond) || len(tr.Procs) != 3 {
			t.Fatalf("losses at %v, %d processes: want one before 500ms and 3 processes (10, 20 moved to the restart, 10 again)", at, len(tr.Procs))
		}
		if got := tr.Procs[1].Start; int64(got) != at[0]+int64(time.Second) {
			t.Errorf("process 20, configured at 500ms, started at %v: want with the restart, %v", got, time.Duration(at[0])+time.Second)
		}
		if n := calls(w, 1, at[0]+int64(time.Second)); n != 0 {
			t.Errorf("process 20 made %d calls while the machine was down", n)
		}
		ps, p := w.cfg.Procs[2], w.procs[2]
		want := cfg.Procs[0]
		if ps.PID != want.PID || ps.Skew != want.Skew || ps.DriftPPM != want.DriftPPM || !ps.NoBootID || ps.Lease.LeaseDuration != alt.LeaseDuration || p.slow != want.Slow {
			t.Errorf("process 10 restarted as %+v (speed %v): want its configuration %+v", ps, p.slow, want)
		}
	})
}

// A restart's processes, and the time the run goes on after it, count in
// the run's bound on system calls (Config.MaxSyscalls 0): the config's
// counted neither, and a run of twice its processes could be cut short
// as a spinning one.
func TestPowerLossRestartRaisesTheCallBound(t *testing.T) {
	cfg := Config{Variant: "reference", Seed: 1, Horizon: 3 * time.Second, Calm: 30 * time.Second, Procs: []ProcSpec{{PID: 10}, {PID: 20}},
		Faults: []Fault{{Kind: trace.Power, Proc: 0, After: "any", Nth: 5, Dur: time.Second}}}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := w.limit
	w.Run()
	if len(w.procs) != 4 {
		t.Fatalf("%d processes: no restart, the test shows nothing", len(w.procs))
	}
	c := w.cfg
	c.Horizon, c.Calm = time.Duration(w.end), 0
	if want := c.syscallLimit(); w.limit < want || w.limit <= before {
		t.Errorf("the bound on calls is %d (%d before the restart): want at least %d, for four processes over %v", w.limit, before, want, time.Duration(w.end))
	}
}

// powerLosses returns the instants of a run's power losses.
func powerLosses(tr *trace.Trace) []int64 {
	var at []int64
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Power && !e.Missed() {
			at = append(at, e.T)
		}
	}
	return at
}
