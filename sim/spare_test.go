package sim

import (
	"bytes"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A run on a spare world's memory (sim.Run's and New's) is the run on
// fresh memory, event for event: every variant, every fault kind (opt-in
// ones too), two to five processes, and the memory handed from run to run
// across them all, so that a field reclaim forgets to empty shows up in
// the next run.
func TestSpareWorldsChangeNothing(t *testing.T) {
	kinds := append(AllFaults[:len(AllFaults):len(AllFaults)], OptInFaults...)
	s := newSpare()
	runs, reused := 0, 0
	for _, v := range lease.Variants() {
		for seed := uint64(0); seed < 6; seed++ {
			o := SetupOptions{Variant: v.Name, Faults: kinds, Scheduler: "mixed"}
			if err := o.Normalize(); err != nil {
				t.Fatal(err)
			}
			fresh := freshRun(t, RandomSetup(o, seed)) // (a setup's scheduler is used up by its run)
			cfg := RandomSetup(o, seed)
			var want bytes.Buffer
			fresh.WriteTrace(&want)
			fresh.Release()

			reused += min(cap(s.slab), len(cfg.Procs))
			// The world struct in the spare (sim.Run's) or apart from it
			// (New's), in turn on the same memory: a hook bound to the
			// one once reached the other.
			var own *World
			if runs%2 == 1 {
				own = new(World)
			}
			w, err := newWorld(cfg, s, own)
			if err != nil {
				t.Fatal(err)
			}
			w.Run()
			tr := w.tr
			s.reclaim(w)
			var got bytes.Buffer
			tr.WriteTrace(&got)
			tr.Release()
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s seed %d: a spare world's run differs from a fresh one's:\n%s", v.Name, seed, firstLineDiff(want.String(), got.String()))
			}
			runs++
		}
	}
	if reused == 0 {
		t.Fatalf("%d runs, and none reused a process slab", runs)
	}
}

// sim.Run gives its world's memory back, and takes it again.
func TestRunReusesSpareWorlds(t *testing.T) {
	cfg := benchConfig(1)
	a := freshRun(t, cfg)
	var want bytes.Buffer
	a.WriteTrace(&want)
	for range 3 {
		tr, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		tr.WriteTrace(&got)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("sim.Run differs from New+Run:\n%s", firstLineDiff(want.String(), got.String()))
		}
	}
	if raceEnabled {
		return // (the race detector's sync.Pool drops spares at random)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		tr, _ := Run(cfg)
		tr.Release()
	}); allocs > 120 {
		t.Errorf("sim.Run allocates %.0f times a run; spare worlds should keep it under 120", allocs)
	}
}

// freshRun runs cfg on fresh memory.
func freshRun(t *testing.T, cfg Config) *trace.Trace {
	t.Helper()
	w, err := newWorld(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Run()
	return w.Trace()
}

// A run whose setup fails leaves nothing behind for the next: its files
// were once in the next run's file system (a probe: the next O_EXCL
// create met EEXIST).
func TestFailedSetupLeavesNothing(t *testing.T) {
	bad := benchConfig(1)
	bad.Files = []File{
		{Path: "/tmp/leader.lock", Data: `{"processId":99999,"leaseUntil":1760476600}`},
		{Path: "/tmp"}, // the lock's directory: placing a file there fails
	}
	var want bytes.Buffer
	freshRun(t, benchConfig(1)).WriteTrace(&want)
	for range 3 {
		if _, err := Run(bad); err == nil {
			t.Fatal("a setup that places a file over a directory was accepted")
		}
		if w, err := New(bad); err == nil {
			w.Release()
			t.Fatal("a setup that places a file over a directory was accepted")
		}
		s := newSpare()
		if _, err := newWorld(bad, s, nil); err == nil {
			t.Fatal("a setup that places a file over a directory was accepted")
		}
		w, err := newWorld(benchConfig(1), s, nil) // the same spare memory, as a pool could give it
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		var got bytes.Buffer
		w.Trace().WriteTrace(&got)
		if got.String() != want.String() {
			t.Fatalf("a run after a failed setup differs:\n%s", firstLineDiff(want.String(), got.String()))
		}
		tr, err := Run(benchConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		got.Reset()
		tr.WriteTrace(&got)
		if got.String() != want.String() {
			t.Fatalf("sim.Run after a failed setup differs:\n%s", firstLineDiff(want.String(), got.String()))
		}
	}
}

// A spare world's parked workers are coroutines, each a goroutine: when
// the spare is collected (a sync.Pool drops what it holds), they are
// stopped, not left waiting forever.
func TestDroppedSpareStopsItsWorkers(t *testing.T) {
	// No collection until the parked goroutines are counted: one during
	// the loop stopped some dropped spares' workers early, and the count
	// came out short (13 of 20, once in a full test run).
	gc := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gc) // (restored below too, before the collections it waits for)
	before := runtime.NumGoroutine()
	for range 20 {
		s := newSpare()
		w, err := newWorld(benchConfig(1), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		tr := w.tr
		s.reclaim(w)
		tr.Release()
		if len(s.workers.ws) == 0 {
			t.Fatal("a finished world parked no workers")
		}
	}
	parked := runtime.NumGoroutine() - before
	debug.SetGCPercent(gc)
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Fatalf("%d goroutines were parked by 20 dropped spares; %d are still there after collections", parked, n)
	}
	if parked < 20 {
		t.Fatalf("only %d goroutines were parked by 20 spares", parked)
	}
}

// Release's contract (a review's findings): New's world is never another
// world's struct, so a released world's pointer is not the next world; a
// second Release does nothing; a world released before it ran gives back
// the coroutines its processes were to start on; a released world keeps
// its trace and refuses to run.
func TestReleaseContract(t *testing.T) {
	w1, err := New(benchConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	w1.Run()
	tr := w1.Trace()
	n := len(tr.Events)
	w1.Release()
	w2, err := New(benchConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	if w1 == w2 {
		t.Fatal("New returned a released world's pointer")
	}
	w1.Release() // must not touch w2, which may be on w1's memory
	w2.Run()
	if w2.Trace() == nil || len(w2.Trace().Events) == 0 {
		t.Fatal("a second Release of another world emptied this one")
	}
	if w1.Trace() != tr || len(tr.Events) != n {
		t.Fatal("a released world lost its trace")
	}
	w2.Release()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Run of a released world did not panic")
			}
		}()
		w1.Run()
	}()

	before := runtime.NumGoroutine()
	for range 20 {
		w, err := New(benchConfig(3))
		if err != nil {
			t.Fatal(err)
		}
		w.Release() // never ran: its processes' coroutines go back
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+maxParked && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > maxParked {
		t.Errorf("20 worlds released before they ran left %d goroutines (a spare parks at most %d)", n, maxParked)
	}
}

// TestSpareReductionRecord: a reduced exploration's record of steps (the
// porLog: steps, accesses, ties' candidates, quiet steps, instants'
// scratch) kept on spare memory and reused by the next run gives what a
// fresh one gives: the races, the fingerprints, the trace.
func TestSpareReductionRecord(t *testing.T) {
	lc := lease.DefaultConfig()
	cfg := func(variant string, seed uint64) Config {
		// Every other run mostly takes the first candidate (longer runs,
		// where a paused leader's term can lapse); the others, any.
		var c Chooser = NewPCG(seed, 7)
		if seed%2 == 1 || variant == "reference" {
			c = &mostlyFirst{NewPCG(seed, 7)}
		}
		return Config{Variant: variant, Lease: lc, Horizon: 20 * time.Second, Chooser: c,
			Procs: []ProcSpec{{PID: 100}, {PID: 200}, {PID: 300}},
			Explore: &Explore{Chooser: c, DPOR: true, Crashes: 1, Pauses: 1, Terms: 1, FSErrors: 1,
				PauseLengths: []time.Duration{time.Second, 12 * time.Second}}} // (the longer outlives a lease: its term lapses)
	}
	type result struct {
		races    []Race
		fp, kill uint64
		trace    string
	}
	of := func(w *World) result {
		w.Run()
		var b bytes.Buffer
		w.tr.WriteTrace(&b)
		return result{w.Races(0), w.Fingerprint(), w.KillFingerprint(), b.String()}
	}
	s := newSpare()
	reused, timed := 0, 0
	for _, v := range []string{"seed", "seed-rename", "flock", "reference"} {
		seeds := uint64(48)
		if v == "reference" {
			seeds = 160
		}
		for seed := range seeds {
			fresh, err := newWorld(cfg(v, seed), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := of(fresh)
			if s.por != nil {
				reused++
			}
			w, err := newWorld(cfg(v, seed), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := of(w)
			if len(w.por.timedEv) > 0 {
				timed++
			}
			s.reclaim(w)
			if got.trace != want.trace {
				t.Fatalf("%s seed %d: the trace differs on spare memory:\n%s", v, seed, firstLineDiff(want.trace, got.trace))
			}
			if got.fp != want.fp || got.kill != want.kill || !reflect.DeepEqual(got.races, want.races) {
				t.Fatalf("%s seed %d: on spare memory fingerprints %x/%x and %d races, fresh %x/%x and %d", v, seed, got.fp, got.kill, len(got.races), want.fp, want.kill, len(want.races))
			}
			if len(want.races) == 0 {
				t.Errorf("%s seed %d: no race to compare", v, seed)
			}
		}
	}
	if reused == 0 || timed == 0 {
		t.Fatalf("%d runs reused a record, %d had an instant's own events (a lapsed term's end): want some of each", reused, timed)
	}
}

// mostlyFirst takes choice 0 fifteen times in sixteen, else any.
type mostlyFirst struct{ p *PCG }

func (m *mostlyFirst) Choose(n int) int {
	if m.p.Choose(16) > 0 {
		return 0
	}
	return m.p.Choose(n)
}
