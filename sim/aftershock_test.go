package sim

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// An aftershock (Fault.Follows with Proc Leader) strikes whoever leads at
// the instant the fault it follows fires, whatever that fault is: here a
// watcher's failed listing, and the leader dies then. A chain to a fault
// of no one process, or with a call count, is refused.
func TestAftershock(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.FSError, Proc: 1, Call: "readdir", Nth: 3, Errno: syscall.EIO},
		{Kind: trace.Kill, Proc: Leader, Follows: 1},
	}
	tr := mustRun(t, cfg)
	errAt, killAt, killed := int64(-1), int64(-1), int16(-1)
	leader := make([]bool, len(tr.Procs))
	for _, e := range tr.Events {
		if e.Kind == trace.EvRole {
			leader[e.Proc] = e.Role == lease.RoleLeader
		}
		if e.Kind != trace.EvFault || e.Missed() {
			continue
		}
		switch e.FaultKind() {
		case trace.FSError:
			errAt = e.T
		case trace.Kill:
			killAt, killed = e.T, e.Proc
			if !leader[e.Proc] {
				t.Errorf("the aftershock killed process %d, not the leader", e.Proc)
			}
		}
	}
	if errAt < 0 || killAt != errAt || killed != 0 {
		t.Fatalf("the error at %d, the kill at %d of process %d: want process 0 (the leader) killed at the error's instant\n%s", errAt, killAt, killed, tr.Setup())
	}
	if s := tr.Setup(); !strings.Contains(s, "kill leader at once when fault 1 fires") {
		t.Errorf("setup line: %s", s)
	}
	// An aftershock of a fault that never fires never fires.
	cfg.Faults[0].Nth = 1000
	for _, e := range mustRun(t, cfg).Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Kill {
			t.Errorf("an aftershock of an unfired fault fired")
		}
	}
	for _, bad := range [][]Fault{
		{{Kind: trace.DiskFull, At: time.Second, Dur: time.Second}, {Kind: trace.Kill, Proc: Leader, Follows: 1}}, // the whole machine's
		{{Kind: trace.Jump, At: time.Second, Delta: time.Second}, {Kind: trace.Kill, Proc: Leader, Follows: 1}},   // the whole machine's
		{{Kind: trace.Stop, At: time.Second, Dur: time.Second}, {Kind: trace.Kill, Proc: Leader, Follows: 1, Nth: 2}},
		{{Kind: trace.Stop, At: time.Second, Dur: time.Second}, {Kind: trace.Drift, Proc: Leader, Follows: 1, PPM: 5}}, // not a signal
	} {
		cfg.Faults = bad
		if _, err := Run(cfg); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// A drift aimed at the leader is a split: the leader's clock at PPM,
// every other live process's at -PPM.
func TestSplitDrift(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{{Kind: trace.Drift, Proc: Leader, At: 5 * time.Second, PPM: -10000}}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Run()
	tr := w.Trace()
	defer tr.Release()
	var hit int16 = -1
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == trace.Drift && !e.Missed() {
			hit = e.Proc
		}
	}
	if hit < 0 {
		t.Fatalf("the drift never fired: %s", tr.Setup())
	}
	for i, p := range w.procs {
		want := int64(10000)
		if int16(i) == hit {
			want = -10000
		}
		if got := p.clock.segs[len(p.clock.segs)-1].ppm; got != want {
			t.Errorf("process %d (the drift hit %d): %d ppm, want %d", i, hit, got, want)
		}
	}
	if s := tr.Setup(); !strings.Contains(s, "drift leader at 5.000000s to -10000 ppm, every other process to 10000 ppm") {
		t.Errorf("setup line: %s", s)
	}
}

// An error aimed at the Nth call of any kind fails the Nth call that can
// fail (a log line cannot); a slow process's calls take longer.
func TestAnyCallErrorAndSlowProcess(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{{Kind: trace.FSError, Proc: 1, Call: "any", Nth: 7, Errno: syscall.EIO}}
	tr := mustRun(t, cfg)
	n, failed := 0, -1
	for _, e := range tr.Events {
		if e.Proc != 1 || e.Kind != trace.EvSyscall {
			continue
		}
		if e.Op <= trace.OpLink || e.Op == trace.OpReadDir {
			n++
			if e.Errno != 0 && failed < 0 {
				failed = n
			}
		}
	}
	if failed != 7 {
		t.Errorf("the first failed call of process 1 is its failable call #%d, want #7\n%s", failed, tr.Setup())
	}

	span := func(slow time.Duration) time.Duration { // process 0's first acquisition
		cfg := worldCfg(3, ProcSpec{PID: 100, Slow: slow})
		cfg.Variant = "reference"
		tr := mustRun(t, cfg)
		for _, e := range tr.Events {
			if e.Kind == trace.EvRole && e.Proc == 0 && e.Role == lease.RoleLeader {
				return time.Duration(e.T)
			}
		}
		t.Fatal("process 0 never led")
		return 0
	}
	fast, slow := span(0), span(10*time.Millisecond)
	if slow < fast+20*time.Millisecond {
		t.Errorf("a process whose calls take up to 10 ms more acquired in %v, the fast one in %v: want far slower", slow, fast)
	}
}

// A swarm draws aftershocks, split drifts, calls of any kind, slow
// processes and pauses near the lease, each in a fair share of setups;
// a run over one or two kinds (no swarm) draws none of them.
func TestSwarmDrawsAim(t *testing.T) {
	counts := func(faults string) map[string]int {
		o := SetupOptions{Variant: "reference"}
		o.Faults, _ = ParseFaults(faults)
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		lease := o.Lease.LeaseDuration
		c := map[string]int{}
		for seed := range uint64(2000) {
			cfg := RandomSetup(o, seed)
			if err := cfg.Normalize(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, p := range cfg.Procs {
				if p.Slow > 0 {
					c["slow"]++
					break
				}
			}
			for _, f := range cfg.Faults {
				switch {
				case f.Kind == trace.Jump && f.After != "":
					// (By the run's longest lease: a mixed run's may be
					// another configuration's, drawMix's multiples.)
					near := false
					for _, m := range [][2]time.Duration{{1, 1}, {1, 3}, {1, 2}, {2, 3}, {3, 2}, {2, 1}, {3, 1}} {
						l := lease * m[0] / m[1]
						near = near || f.Delta.Abs() >= l-l/20 && f.Delta.Abs() <= l+l/20
					}
					if f.At != 0 || !near {
						t.Errorf("seed %d: an aimed step %v, want at no instant, by a lease within a twentieth", seed, f)
					}
					c["step"]++
				case f.Kind == trace.FSError && f.Follows > 0:
					c["burst"]++
				case f.Follows > 0 && f.Proc == Leader:
					c["aftershock"]++
				case f.Kind == trace.Drift && f.Proc == Leader:
					c["split"]++
				case f.After == "any" || f.Kind == trace.FSError && f.Call == "any":
					c["any"]++
				case f.Kind == trace.Stop && f.Dur >= lease-lease/10 && f.Dur <= lease+lease/10:
					c["near"]++
				}
			}
		}
		return c
	}
	swarm := counts("all")
	t.Logf("-faults all, 2000 setups: %v", swarm)
	for _, k := range []string{"slow", "aftershock", "split", "any", "near", "step", "burst"} {
		if swarm[k] < 40 {
			t.Errorf("-faults all, 2000 setups: %d with %s, want a fair share (%v)", swarm[k], k, swarm)
		}
	}
	if c := counts("kill,term,stop,emfile,diskfull"); c["burst"] > 0 {
		t.Errorf("a swarm without injected errors drew %d chained ones", c["burst"])
	}
	for _, faults := range []string{"kill,stop", "drift,fserr", "stop", "jump,stop", "term,fserr"} {
		c := counts(faults)
		for _, k := range []string{"slow", "aftershock", "split", "any", "step", "burst"} {
			if c[k] > 0 {
				t.Errorf("-faults %s (no swarm): %d setups with %s", faults, c[k], k)
			}
		}
	}
}

// An I/O error aimed at a call that cannot fail (a log line) is refused,
// rather than accepted and never fired.
func TestFSErrorOnLogRefused(t *testing.T) {
	cfg := worldCfg(3)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{{Kind: trace.FSError, Proc: 1, Call: "log", Nth: 1, Errno: syscall.EIO}}
	if _, err := Run(cfg); err == nil {
		t.Error("an fserr on a log line was accepted")
	}
}
