package spec

import (
	"github.com/leaselab/leaselab/trace"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
)

// The evidence for the flock variant: random runs with every fault kind
// at the default magnitudes (every signal also right after every kind of
// system call, flock included, and EIO or ENOSPC injected into flock
// too). Every property holds except no-wedge, and no-wedge breaks only
// through a pause: a process stopped while it holds the lock, before it
// leads, keeps everyone from leading for the whole pause. Without pauses
// nothing breaks. 10,000 runs each by default (about a second); -long runs
// 200,000.
func TestFlockHolds(t *testing.T) {
	runs := 10_000
	if *long {
		runs = 200_000
	}
	if testing.Short() {
		runs = 1000
	}
	noStop := []trace.FaultKind{trace.Kill, trace.Term, trace.Skew, trace.Drift, trace.Jump, trace.FSError}
	for _, c := range []struct {
		name   string
		faults []trace.FaultKind
		broken string // the one property allowed to break
	}{
		{"all", sim.FaultKinds, NoWedge},
		{"all but stop", noStop, ""},
	} {
		start := time.Now()
		rep, err := Search{Setup: sim.SetupOptions{Variant: "flock", Faults: c.faults}, Runs: runs, Seed: 1, KeepGoing: true}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Found {
			if f.Violation.Property != c.broken {
				t.Errorf("%s: %s\n  replay: %s", c.name, f.Violation.String(), f.Replay)
			}
		}
		if c.broken != "" && rep.Counts[c.broken] == 0 {
			t.Errorf("%s: %s never broke in %d runs: a paused lock holder no longer blocks everyone?", c.name, c.broken, rep.Runs)
		}
		t.Logf("%s: %d runs, seed 1: violations %v, %v", c.name, rep.Runs, rep.Counts, time.Since(start).Round(time.Millisecond))
	}
}

// Power loss, then the machine's restart (the reference's power-loss
// runs): the epoch a flock leader acted on is on disk, record and name,
// before it leads, so no epoch is ever handed out twice, and nothing
// wedges, whatever the disk kept of what was not synced.
func TestFlockPowerLoss(t *testing.T) {
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	counts, _ := powerRuns(t, "flock", runs, false)
	if len(counts) > 0 {
		t.Errorf("flock under power loss: violations %v in %d runs", counts, runs)
	}
	t.Logf("%d runs with a power loss and restart: no violation", runs)
}
