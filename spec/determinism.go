package spec

import (
	"bytes"
	"crypto/sha256"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Replays simulates one run of the search again (the first violating run
// it kept, else its first run) and reports whether the run gave the same
// trace twice. A run is a pure function of its variant, setup and seed
// only while the variant's code reaches nothing outside the simulator: a
// user's fix that starts a goroutine with the go statement, draws from
// the global math/rand, reads time.Now or ranges over a map to decide
// what to do makes runs that no replay line reproduces, and the leaselab
// command says so rather than print replay lines that lie.
func (s Search) Replays(rep Report) (run int, same bool, err error) {
	o := s.Setup
	if err := o.Normalize(); err != nil {
		return 0, false, err
	}
	var sum []byte
	if len(rep.Found) > 0 && rep.Found[0].Trace != nil {
		run, sum = rep.Found[0].Run, traceSum(rep.Found[0].Trace)
	} else if rep.firstSum != nil {
		sum = rep.firstSum // run 0's, hashed as the search judged it
	} else {
		tr, err := sim.Run(sim.RandomSetup(o, RunSeed(s.Seed, run)))
		if err != nil {
			return run, false, err
		}
		sum = traceSum(tr)
		tr.Release()
	}
	again, err := sim.Run(sim.RandomSetup(o, RunSeed(s.Seed, run)))
	if err != nil {
		return run, false, err
	}
	defer again.Release()
	return run, bytes.Equal(sum, traceSum(again)), nil
}

// traceSum is the SHA-256 of the trace as replay -trace prints it.
func traceSum(tr *trace.Trace) []byte {
	h := sha256.New()
	tr.WriteTrace(h)
	return h.Sum(nil)
}
