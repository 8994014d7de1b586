package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/leaselab/leaselab/sim"
)

// stuckAfter is how long a simulated run may take no step, in real time,
// before the command says it is stuck and exits 2. LEASELAB_STUCK sets it
// (a Go duration; 0 turns the watchdog off). A run of the post's 48 s
// takes a millisecond and one of 24 h a few seconds, so a minute without
// a step is a run whose process's code waits on something the simulator
// does not control: without the watchdog the command waited for it for
// ever, silently.
const stuckAfter = time.Minute

// startWatchdog starts the watchdog of the simulated runs of this
// process (sim.Running), which reports a stuck run on stderr and ends
// the process with status 2.
func startWatchdog(stderr io.Writer) error {
	after := stuckAfter
	if s := os.Getenv("LEASELAB_STUCK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return fmt.Errorf("LEASELAB_STUCK=%q: want a duration such as 2m (0: no watchdog)", s)
		}
		after = d
	}
	if after == 0 {
		return nil
	}
	go func() {
		f := watchRuns(after, watchTick(after))
		run := fmt.Sprintf("a run of variant %s (seed %d)", f.Variant, f.Seed)
		if f.Seed == 0 {
			run = "a run of variant " + f.Variant // (an exploration's: its schedule is not a seed)
		}
		fmt.Fprintf(stderr, "leaselab: %s has taken no step for %v of real time: "+
			"its code waits on something the simulator does not control (a channel, a mutex held across a Proc call, "+
			"a goroutine started with go, real I/O or time.Sleep), or loops without a system call. "+
			"A variant's code waits only through its lease.Proc (README: Checking your own fix); LEASELAB_STUCK sets the limit\n",
			run, after)
		os.Exit(2)
	}()
	return nil
}

// watchTick is how often the watchdog samples the runs for a limit of
// after: a quarter of it, at most a second, at least a millisecond (a
// limit of a few nanoseconds made a tick of 0, and time.NewTicker
// panicked).
func watchTick(after time.Duration) time.Duration {
	return max(min(after/4, time.Second), time.Millisecond)
}

// watchRuns samples the runs in progress every tick and returns the first
// one seen to take no step for after.
func watchRuns(after, tick time.Duration) sim.Flight {
	type seen struct {
		beats uint64
		since time.Time
	}
	last := map[uint64]seen{}
	t := time.NewTicker(tick)
	defer t.Stop()
	for now := range t.C {
		next := map[uint64]seen{}
		for _, f := range sim.Running() {
			s, ok := last[f.ID]
			if !ok || s.beats != f.Beats {
				s = seen{f.Beats, now}
			}
			if now.Sub(s.since) >= after {
				return f
			}
			next[f.ID] = s
		}
		last = next
	}
	panic("unreachable")
}
