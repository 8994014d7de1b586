package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/model"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Witness may only say yes to a history porcupine finds linearizable, and
// should say yes to nearly every one. The histories are those of random
// runs of every variant with every fault (the lease servers' data loss
// too), as check makes them, and each of them altered at one operation's
// outcome (another record read, an outcome swapped for another), which
// makes most of them not linearizable: both models, Register and
// ExpiringRegister. A Witness that took a step the model has not (say,
// a read of a record the register cannot hold) fails here.
func TestWitnessAgreesWithPorcupine(t *testing.T) {
	runs := 60
	if testing.Short() {
		runs = 15
	}
	var found, lin, altered, alteredLin, alteredFound, noOrder int
	for _, v := range lease.Variants() {
		faults := append(sim.AllFaults[:len(sim.AllFaults):len(sim.AllFaults)], sim.OptInFaults...)
		o := sim.SetupOptions{Variant: v.Name, Faults: faults, Scheduler: "mixed"}
		if err := o.Normalize(); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		for i := range runs {
			seed := uint64(i)*7919 + 17
			tr, err := sim.Run(sim.RandomSetup(o, seed))
			if err != nil {
				t.Fatalf("%s seed %d: %v", v.Name, seed, err)
			}
			ops := model.FromTrace(tr)
			tr.Release()
			rng := rand.New(rand.NewPCG(seed, 1))
			for k := range 3 {
				h := ops
				if k > 0 {
					h = alter(ops, rng)
					altered++
				}
				for _, expiring := range []bool{false, true} {
					m := model.Register
					if expiring {
						m = model.ExpiringRegister
					}
					p := porcupine.CheckOperations(m, h)
					verdict := model.Witness(h, expiring)
					w := verdict == model.Witnessed
					if w && !p {
						t.Fatalf("%s seed %d (alteration %d, expiring %v): Witness found a linearization of a history porcupine finds none for", v.Name, seed, k, expiring)
					}
					if verdict == model.NoOrder && p {
						t.Fatalf("%s seed %d (alteration %d, expiring %v): Witness tried every order of a history porcupine linearizes", v.Name, seed, k, expiring)
					}
					if verdict == model.NoOrder {
						noOrder++
					}
					switch {
					case k == 0 && p:
						lin++
						if w {
							found++
						}
					case k > 0 && p:
						alteredLin++
						if w {
							alteredFound++
						}
					}
				}
			}
		}
	}
	t.Logf("witness found for %d of %d linearizable histories; %d altered histories, %d of them linearizable, witness found for %d; %d histories with no order", found, lin, altered*2, alteredLin, alteredFound, noOrder)
	if noOrder == 0 {
		t.Error("no history was found to have no order: the test does not reach NoOrder")
	}
	if altered*2-alteredLin < altered/2 {
		t.Errorf("only %d of %d altered histories are not linearizable: the alterations test little", altered*2-alteredLin, altered*2)
	}
	if lin == 0 || found*100 < lin*95 {
		t.Errorf("Witness found a linearization for %d of %d linearizable histories (want 95%%): the check falls back to porcupine too often", found, lin)
	}
}

// alter returns a copy of ops with one operation's outcome changed: its
// record replaced by another operation's, or its result by another.
func alter(ops []porcupine.Operation, rng *rand.Rand) []porcupine.Operation {
	h := append([]porcupine.Operation(nil), ops...)
	if len(h) == 0 {
		return h
	}
	i := rng.IntN(len(h))
	out := h[i].Output.(model.Output)
	switch rng.IntN(3) {
	case 0: // another record
		j := rng.IntN(len(h))
		if rec := h[j].Output.(model.Output).Rec; rec != (lease.Record{}) {
			out.Rec = rec
		} else {
			out.Rec = h[j].Input.(model.Input).Rec
		}
	case 1: // another result
		res := []trace.StoreRes{trace.ResOK, trace.ResNotFound, trace.ResExists, trace.ResConflict, trace.ResUnknown}
		out.Res = res[rng.IntN(len(res))]
	default: // read the record another operation wrote, as ok
		j := rng.IntN(len(h))
		out.Res, out.Rec = trace.ResOK, h[j].Output.(model.Output).Rec
	}
	h[i].Output = out
	return h
}

// BenchmarkCheckRun reports model.Check's cost on the histories of the
// runs `leaselab check -variant seed -faults all` makes (an op is one
// run's check: the history's extraction, Witness and, where Witness is
// not enough, porcupine), apart from the simulation.
func BenchmarkCheckRun(b *testing.B) {
	o := sim.SetupOptions{Variant: "seed", Faults: sim.AllFaults, Scheduler: "mixed"}
	if err := o.Normalize(); err != nil {
		b.Fatal(err)
	}
	var trs []*trace.Trace
	for seed := uint64(1); seed <= 200; seed++ {
		tr, err := sim.Run(sim.RandomSetup(o, seed))
		if err != nil {
			b.Fatal(err)
		}
		trs = append(trs, tr)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		model.Check(trs[i%len(trs)], 0)
		i++
	}
}
