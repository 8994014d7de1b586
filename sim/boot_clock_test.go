package sim

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// After a power loss, the processes of the machine's restart read a
// monotonic clock that counts from its boot, as CLOCK_MONOTONIC does
// after a reboot, while the wall clock reads on; so do the processes
// configured to start after the loss. (Before, monotonic clocks ran on
// across a power loss, and a fix that kept its deadline on the monotonic
// clock in the lock file passed -faults power: helper-110.)
func TestMonotonicClockCountsFromBoot(t *testing.T) {
	const loss, down = 10 * time.Second, 2 * time.Second
	boot := int64(loss + down)
	run := func(variant string) *trace.Trace {
		cfg := worldCfg(3, ProcSpec{PID: 100}, ProcSpec{PID: 200}, ProcSpec{PID: 300, Start: 15 * time.Second})
		cfg.Variant = variant
		cfg.Faults = []Fault{{Kind: trace.Power, At: loss, Dur: down}}
		tr := mustRun(t, cfg)
		if len(tr.Procs) != 5 {
			t.Fatalf("%s: %d processes, want the 3 configured and 2 restarted", variant, len(tr.Procs))
		}
		return tr
	}
	// The reference reads the monotonic clock alone.
	tr := run("reference")
	first := make([]*trace.Event, len(tr.Procs)) // each process's first reading
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvClock && e.Op == trace.OpClockMono && e.Proc >= 0 && first[e.Proc] == nil {
			first[e.Proc] = e
		}
	}
	for p, e := range first {
		switch {
		case e == nil:
			t.Errorf("process %d read no monotonic clock", p)
		case p < 2 && e.N != e.T: // the first boot's: true time (no drift)
			t.Errorf("process %d: first monotonic reading %v at %v, want the true time", p, time.Duration(e.N), time.Duration(e.T))
		case p >= 2 && e.N != e.T-boot:
			t.Errorf("process %d: first monotonic reading %v at %v, want the time since the boot at %v", p, time.Duration(e.N), time.Duration(e.T), time.Duration(boot))
		}
	}
	// The seed reads the wall clock: it reads on, the downtime included
	// (no skew, no drift, no step: the run's base plus true time).
	tr = run("seed")
	var base int64
	before, after := 0, 0
	for _, e := range tr.Events {
		if e.Kind != trace.EvClock || e.Op != trace.OpClockWall || e.Proc < 0 {
			continue
		}
		if before+after == 0 {
			base = e.N - e.T
		}
		if e.N != base+e.T {
			t.Fatalf("process %d read the wall clock %d at %v: want %d, the run's base plus true time", e.Proc, e.N, time.Duration(e.T), base+e.T)
		}
		if e.T < int64(loss) {
			before++
		} else {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("wall-clock readings: %d before the loss, %d after: want some of each", before, after)
	}
}
