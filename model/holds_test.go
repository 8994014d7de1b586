package model

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Holds decides as Decide does, and the memory it reuses is only ever a
// linearizable history's: a violation's Result, kept while later calls
// decide other histories, still gives what Decide's gives (its operations,
// its error, its culprit). It fails when a violation's memory is put back
// for reuse, and when Holds' verdict differs from Decide's.
func TestHoldsReusesOnlyWhatHolds(t *testing.T) {
	type kept struct {
		seed uint64
		tr   *trace.Trace
		r    Result
	}
	var violations []kept
	holds := 0
	for _, variant := range []string{"seed", "reference"} {
		o := sim.SetupOptions{Variant: variant, Faults: sim.AllFaults, Scheduler: "mixed"}
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 200; seed++ {
			tr, err := sim.Run(sim.RandomSetup(o, seed))
			if err != nil {
				t.Fatal(err)
			}
			want := Decide(tr, 0)
			r, ok := Holds(tr, 0)
			if ok != want.Linearizable || r.Linearizable != ok || r.Unknown != want.Unknown {
				t.Fatalf("%s seed %d: Holds %v (%+v), Decide linearizable %v unknown %v", variant, seed, ok, r, want.Linearizable, want.Unknown)
			}
			if ok {
				holds++
				continue
			}
			violations = append(violations, kept{seed, tr, r})
		}
	}
	if holds < 50 || len(violations) < 20 {
		t.Fatalf("%d histories hold and %d do not: the test shows too little", holds, len(violations))
	}
	for _, v := range violations {
		want := Decide(v.tr, 0).Resolve()
		got := v.r.Resolve()
		if !reflect.DeepEqual(got.Ops(), want.Ops()) {
			t.Fatalf("seed %d: a kept violation's history changed under later calls", v.seed)
		}
		if fmt.Sprint(got.Err()) != fmt.Sprint(want.Err()) {
			t.Fatalf("seed %d: error %v, want %v", v.seed, got.Err(), want.Err())
		}
		gop, gok := got.Culprit()
		wop, wok := want.Culprit()
		if gok != wok || !reflect.DeepEqual(gop, wop) {
			t.Fatalf("seed %d: culprit %+v %v, want %+v %v", v.seed, gop, gok, wop, wok)
		}
	}
}

// An undecided history's memory is never given back: porcupine stops
// waiting for its search when it times out, and that search may still be
// reading the history (a review's race, under -race, with timeouts of
// microseconds). The budget makes undecided histories here without a
// clock: with none, porcupine gives up on every history Witness is unsure
// of.
func TestHoldsKeepsUndecidedMemory(t *testing.T) {
	defer func(b int) { StepBudget = b }(StepBudget)
	StepBudget = -64 * 1_000_000
	// (Witness decides short histories only: with the default budget it is
	// unsure of none of these.)
	defer setWitnessBudget(0, 16)()
	o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	undecided, violations := 0, 0
	for seed := uint64(1); seed <= 300 && (undecided < 5 || violations < 5); seed++ {
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			t.Fatal(err)
		}
		r, ok := Holds(tr, 0)
		switch {
		case ok:
		case r.Unknown:
			undecided++
			if r.buf != nil {
				t.Fatalf("seed %d: an undecided Result would give its memory back", seed)
			}
		default:
			violations++
			if r.buf == nil {
				t.Fatalf("seed %d: a violation's Result cannot give its memory back", seed)
			}
		}
		r.Release()
	}
	if undecided == 0 || violations == 0 {
		t.Fatalf("%d undecided, %d violations: the test shows too little", undecided, violations)
	}
}

// A history's page is the same every time it is drawn: porcupine lists
// the partial linearizations in the order of a map's iteration (two
// checks of one history drew two pages), and inOrder sorts them. It fails
// without inOrder.
func TestPageSameEveryTime(t *testing.T) {
	o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	several := 0
	for seed := uint64(1); seed <= 300 && several < 8; seed++ {
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			t.Fatal(err)
		}
		var first []byte
		for k := range 6 {
			r := Check(tr, 0)
			if r.Linearizable || r.Unknown {
				break
			}
			if k == 0 {
				for _, p := range r.Info.PartialLinearizations() {
					if len(p) > 1 {
						several++
						break
					}
				}
			}
			path := filepath.Join(dir, "page.html")
			if err := r.WriteHTML(path); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				first = b
			} else if !bytes.Equal(b, first) {
				t.Fatalf("seed %d: the page drawn %d times differs (%d bytes, then %d)", seed, k+1, len(first), len(b))
			}
		}
	}
	if several < 5 {
		t.Fatalf("%d histories with several partial linearizations: the test shows too little", several)
	}
}
