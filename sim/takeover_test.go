package sim

import (
	"github.com/leaselab/leaselab/trace"
	"strings"
	"testing"
	"time"
)

// The post calls the takeover race safe: "O_EXCL decides the winner". It
// decides the create, not the remove. Two watchers that read the same
// expired lease a few system calls apart: the second removes the file the
// first has just created, and both lead. No fault is needed beyond the
// leader's death. This searches watcher offsets and seeds for such a run
// and fails if none is found.
func TestSeedTakeoverRaceElectsTwoLeaders(t *testing.T) {
	for offset := time.Duration(0); offset <= 300*time.Microsecond; offset += 20 * time.Microsecond {
		for seed := uint64(0); seed < 20; seed++ {
			cfg := Config{
				Variant: "seed", Seed: seed, Horizon: 20 * time.Second,
				Procs: []ProcSpec{
					{PID: 100, Start: 0},
					{PID: 200, Start: 100 * time.Millisecond},
					{PID: 300, Start: 100*time.Millisecond + offset},
				},
				Faults:     []Fault{{Kind: trace.Kill, Proc: 0, At: time.Second}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond, TimerLateMax: 100 * time.Microsecond,
			}
			tr, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tr.MaxConcurrentLeaders() >= 2 {
				t.Logf("two leaders after a takeover race: %s", tr.Setup())
				for _, l := range tr.LogLines() {
					if l >= "12." && l < "16." {
						t.Log(l)
					}
				}
				return
			}
		}
	}
	t.Fatal("no run with two leaders found: the seed's takeover race should elect two")
}

// A pause shorter than the lease is enough for two leaders when it lands
// between acquisition and the start of the renewal routine: no ticker is
// running during the pause (a paused routine's ticker would deliver a
// pending tick at once on resume), so the first renewal comes a whole
// renew interval after the pause, by when the lease has lapsed and a
// watcher has taken over. A 7.5 s pause of a 9 s lease: the watcher ticks
// at 10.0 s, the leader first renews at 10.5 s. (rapid found it; this
// pins it.)
func TestSeedPauseShorterThanLeaseElectsTwoLeaders(t *testing.T) {
	cfg := Config{
		Variant: "seed", Seed: 1, Horizon: 20 * time.Second,
		Procs: []ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: time.Second}},
		// log #1 is the startup line on stderr, #2 "Acquired lease".
		Faults:     []Fault{{Kind: trace.Stop, Proc: 0, After: "log", Nth: 2, Dur: 7500 * time.Millisecond}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
	}
	tr, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := tr.MaxConcurrentLeaders(); n != 2 {
		t.Fatalf("most leaders at once %d, want 2 after a 7.5 s pause of a 9 s lease:\n%s", n, strings.Join(tr.LogLines(), "\n"))
	}
}
