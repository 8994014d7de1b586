package sim_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// timerPlans are what the processes of the variants below do before the
// reference's algorithm (if they get that far), by variant and PID: each
// sets a timer on its monotonic clock (lease.MonoTimer) whose callback
// panics, and then waits in a way that has the simulator call it from a
// different place.
var timerPlans = map[string]func(p lease.Proc){
	// Its own step runs (the fast path of its sleep) when the timer is
	// due: the callback is called inside its own activity.
	"sim-test-timer-own": func(p lease.Proc) {
		armPanic(p, time.Millisecond)
		p.Sleep(2 * time.Millisecond)
		p.Log(lease.MsgShutdown, 1, 0) // never: it died in the sleep
	},
	// A timer due at once, then a system call: the callback is called as
	// the world looks at the contexts at its scheduling point.
	"sim-test-timer-point": func(p lease.Proc) {
		p.Sleep(time.Millisecond)
		armPanic(p, 0)
		p.Log(lease.MsgShutdown, 1, 0) // never
	},
	// The same, then a wait that blocks (a hand-off no one sends on).
	"sim-test-timer-block": func(p lease.Proc) {
		p.Sleep(time.Millisecond)
		armPanic(p, 0)
		p.NewHandoff().Recv()
	},
	// PID 100 sleeps past its timer; PID 200's steps go on, and the
	// world looks at the contexts in one of them: the callback is called
	// inside another process's activity.
	"sim-test-timer-other": func(p lease.Proc) {
		if p.PID() == 100 {
			armPanic(p, 5*time.Millisecond)
			p.Sleep(time.Hour)
			return
		}
		for range 20 {
			p.Log(lease.MsgShutdown, 2, 0)
			p.Sleep(time.Millisecond)
		}
	},
	// Asleep past its timer, alone: a fault (the config's) looks at the
	// world, and the scheduler calls it between steps.
	"sim-test-timer-sched": func(p lease.Proc) {
		armPanic(p, 5*time.Millisecond)
		p.Sleep(time.Hour)
	},
	// Awake every millisecond, but paused across its timer (the config's
	// Stop): the scheduler calls it as the process resumes, before its
	// step, or at the run's end.
	"sim-test-timer-paused": func(p lease.Proc) {
		armPanic(p, 5*time.Millisecond)
		for range 30 {
			p.Sleep(time.Millisecond)
		}
		p.Sleep(time.Hour)
	},
	// The process exits before its timer is due: it never fires.
	"sim-test-timer-exits": func(p lease.Proc) {
		armPanic(p, 5*time.Millisecond)
		p.Exit(0)
	},
	// The process's own code panics with its timer due: it dies of its
	// own panic, and the timer does not fire in its death.
	"sim-test-timer-both": func(p lease.Proc) {
		p.Sleep(time.Millisecond)
		p.(lease.MonoTimer).AfterMono(p.Mono(), func() { panic("timer boom") })
		panic("own boom")
	},
	// The callback calls a Proc method, which the simulator's code does
	// not allow there (it dereferences the activity running, none): the
	// simulator's own panic, which still crashes.
	"sim-test-timer-misuse": func(p lease.Proc) {
		p.(lease.MonoTimer).AfterMono(p.Mono()+5*time.Millisecond, func() { p.Log(lease.MsgShutdown, 3, 0) })
		p.Sleep(time.Hour)
	},
}

// armPanic sets a timer d from now whose callback panics.
func armPanic(p lease.Proc, d time.Duration) {
	p.(lease.MonoTimer).AfterMono(p.Mono()+d, func() {
		panic(fmt.Sprintf("timer boom %d", p.PID()))
	})
}

var registerTimerPanics = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	run := v.Run
	for name, plan := range timerPlans {
		x := v
		x.Name, x.Summary = name, "the reference, after a timer whose callback panics"
		x.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			plan(p)
			return run(p, s, path, cfg)
		}
		if err := lease.Register(x); err != nil {
			panic(err)
		}
	}
})

// timerConfig is a run of variant with one process (PID 100) or two,
// and faults.
func timerConfig(variant string, procs int, faults ...sim.Fault) sim.Config {
	cfg := sim.Config{Variant: variant, Seed: 3, Horizon: 2 * time.Second,
		Procs:      []sim.ProcSpec{{PID: 100}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond, Faults: faults}
	if procs == 2 {
		cfg.Procs = append(cfg.Procs, sim.ProcSpec{PID: 200})
	}
	return cfg
}

// runTwice runs cfg twice and returns the first trace, failing t if the
// two differ.
func runTwice(t *testing.T, cfg sim.Config) *trace.Trace {
	t.Helper()
	var all [2]string
	var first *trace.Trace
	for i := range all {
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for j := range tr.Events {
			b.WriteString(tr.Format(j) + "\n")
		}
		all[i] = b.String()
		if i == 0 {
			first = tr
		}
	}
	if all[0] != all[1] {
		t.Errorf("two runs of one config differ")
	}
	return first
}

// exits returns the indexes of process proc's exit events.
func exits(tr *trace.Trace, proc int16) []int {
	var out []int
	for i, e := range tr.Events {
		if e.Kind == trace.EvExit && e.Proc == proc {
			out = append(out, i)
		}
	}
	return out
}

// A panic in a callback of a process's timer (AfterMono) ends that
// process as one in its activities does: exit status 2, the exit event
// naming the panic and the callback's line, whether the simulator calls
// the callback inside the process's own activity, inside another
// process's, or from the scheduler between steps (a fault's look at the
// world, the process's resumption, the run's end). The run goes on, and
// replays exactly. (Each crashed the whole run with the simulator's stack
// before.)
func TestTimerPanicEndsTheProcess(t *testing.T) {
	registerTimerPanics()
	for _, c := range []struct {
		name string
		cfg  sim.Config
		at   time.Duration // the exit's instant, at or after
	}{
		{"own activity", timerConfig("sim-test-timer-own", 1), time.Millisecond},
		{"own system call", timerConfig("sim-test-timer-point", 1), time.Millisecond},
		{"own blocking wait", timerConfig("sim-test-timer-block", 1), time.Millisecond},
		{"another's activity", timerConfig("sim-test-timer-other", 2), 5 * time.Millisecond},
		{"a fault's look", timerConfig("sim-test-timer-sched", 1, sim.Fault{Kind: trace.Jump, At: 40 * time.Millisecond, Delta: time.Second}), 40 * time.Millisecond},
		{"resumed", timerConfig("sim-test-timer-paused", 1, sim.Fault{Kind: trace.Stop, Proc: 0, At: 2 * time.Millisecond, Dur: 10 * time.Millisecond}), 12 * time.Millisecond},
		{"the run's end", timerConfig("sim-test-timer-paused", 1, sim.Fault{Kind: trace.Stop, Proc: 0, At: 2 * time.Millisecond, Dur: time.Hour}), 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := runTwice(t, c.cfg)
			ex := exits(tr, 0)
			if len(ex) != 1 {
				t.Fatalf("%d exits of process 100:\n%s", len(ex), tr.Setup())
			}
			e, line := tr.Events[ex[0]], tr.Format(ex[0])
			t.Log(line)
			if e.ExitCode() != 2 || !strings.Contains(line, "panic: timer boom 100 at sim/timerpanic_test.go:") || time.Duration(e.T) < c.at {
				t.Errorf("exit: %s", line)
			}
			for _, e := range tr.Events[ex[0]+1:] {
				if e.Proc == 0 {
					t.Errorf("process 100 after its exit: kind %d", e.Kind)
				}
			}
			if len(c.cfg.Procs) == 2 {
				logs := 0
				for _, e := range tr.Events[ex[0]+1:] {
					if e.Proc == 1 && e.Kind == trace.EvLog {
						logs++
					}
				}
				if logs == 0 || len(exits(tr, 1)) > 0 {
					t.Errorf("process 200 did not go on: %d logs after, exits %v", logs, exits(tr, 1))
				}
			}
		})
	}
}

// A process that dies first never fires its timers: one that exits, or
// is killed, before its timer is due has the exit it had. One whose own
// code panics while a timer is due dies of that panic, once: its timers
// do not fire in its death (kill looks at the world first, which fired
// them, and the callback's panic there ended the process inside its own
// death).
func TestTimerOfADeadProcess(t *testing.T) {
	registerTimerPanics()
	for _, c := range []struct {
		name string
		cfg  sim.Config
		code int64
		text string
	}{
		{"exits", timerConfig("sim-test-timer-exits", 1), 0, ""},
		{"killed", timerConfig("sim-test-timer-sched", 1, sim.Fault{Kind: trace.Kill, Proc: 0, At: 2 * time.Millisecond}), -9, ""},
		{"its own panic", timerConfig("sim-test-timer-both", 1), 2, "panic: own boom at sim/timerpanic_test.go:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := runTwice(t, c.cfg)
			ex := exits(tr, 0)
			if len(ex) != 1 {
				t.Fatalf("%d exits of process 100:\n%s", len(ex), tr.Setup())
			}
			line := tr.Format(ex[0])
			t.Log(line)
			if tr.Events[ex[0]].ExitCode() != c.code || !strings.Contains(line, c.text) || strings.Contains(line, "timer boom") {
				t.Errorf("exit: %s", line)
			}
		})
	}
}

// A panic the simulator's own code raises in a timer's callback (here, a
// Proc call the callback may not make) is not the process's: it still
// crashes the run, as the bug it is.
func TestTimerPanicOfTheSimulatorCrashes(t *testing.T) {
	registerTimerPanics()
	cfg := timerConfig("sim-test-timer-misuse", 1, sim.Fault{Kind: trace.Jump, At: 40 * time.Millisecond, Delta: time.Second})
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "nil pointer dereference") {
			t.Errorf("recovered %v", r)
		}
	}()
	tr, err := sim.Run(cfg)
	t.Errorf("the run ended: %v\n%s", err, tr.Setup())
}
