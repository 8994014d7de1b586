package spec

import (
	"maps"
	"testing"
	"time"

	"github.com/leaselab/leaselab/sim"
)

// A reduced search does not offer a process's SIGKILL after a quiet step
// of it at the same instant (sim's por_quiet.go): it reaches the same
// traces, each up to where among its quiet steps a process died
// (sim.World.KillFingerprint), and the same violations as with every
// kill offered, in fewer schedules; and the full search does reach runs
// that only KillFingerprint tells are one (the rule has something to
// drop).
func TestDPORQuietKills(t *testing.T) {
	registerToys(t)
	for _, o := range []ExploreOptions{
		{Variant: "toy-racy", Procs: 2, Crashes: 1},
		{Variant: "toy-excl", Procs: 3, Crashes: 1},
		{Variant: "toy-failover", Procs: 2, Crashes: 1, FSErrors: 1, Horizon: 300 * time.Millisecond},
		{Variant: "toy-errlead", Procs: 2, Crashes: 1, FSErrors: 1},
	} {
		if o.Horizon == 0 {
			o.Horizon = 10 * time.Millisecond
		}
		quiet, _ := reducedSearch(t, o)
		o.everyKill = true
		every, _ := reducedSearch(t, o)
		t.Logf("%s procs %d crashes %d fserrs %d: %d schedules, %d traces; with every kill offered %d schedules, %d traces",
			o.Variant, o.Procs, o.Crashes, o.FSErrors, quiet.schedules, len(quiet.traces), every.schedules, len(every.traces))
		if quiet.incomplete || every.incomplete {
			t.Fatalf("%+v: a search did not complete", o)
		}
		if !maps.Equal(quiet.traces, every.traces) {
			t.Errorf("%+v: %d traces, with every kill offered %d; %d of those missing", o, len(quiet.traces), len(every.traces), missing(every.traces, quiet.traces))
		}
		if !maps.Equal(quiet.violated, every.violated) {
			t.Errorf("%+v: violated %v, with every kill offered %v", o, quiet.violated, every.violated)
		}
		if quiet.schedules >= every.schedules {
			t.Errorf("%+v: %d schedules, with every kill offered %d: nothing was reduced", o, quiet.schedules, every.schedules)
		}
	}
	// The full search's runs that die after a quiet step hash apart
	// (Fingerprint) from the one that dies before it, and alike
	// (KillFingerprint).
	o := ExploreOptions{Variant: "toy-racy", Procs: 2, Crashes: 1, Horizon: 10 * time.Millisecond}
	plain, killed := map[uint64]bool{}, map[uint64]bool{}
	runEvery(t, o, 100000, func(cfg *sim.Config) {
		cfg.Explore.DPOR, cfg.Explore.EveryKill = true, true
	}, func(w *sim.World) {
		plain[w.Fingerprint()] = true
		killed[w.KillFingerprint()] = true
	})
	if len(killed) >= len(plain) {
		t.Errorf("%+v: %d fingerprints, %d up to quiet steps before a kill: none was left out", o, len(plain), len(killed))
	}
	t.Logf("%s: the full search's %d fingerprints, %d up to quiet steps before a kill", o.Variant, len(plain), len(killed))
}
