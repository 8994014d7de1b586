package spec

import (
	"runtime"
	"sync"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A search's runs are simulated by Workers goroutines and handed to the
// search in their order, so that what it reports (which run violated
// first, what -smallest keeps, every count) is what one worker reports:
// a run is a pure function of its seed, never of which goroutine ran it
// or when.

// runResult is one simulated and judged run.
type runResult struct {
	seed     uint64
	cfg      sim.Config
	tr       *trace.Trace
	verdicts []Verdict
	err      error
}

// runner simulates the runs of a search ahead of the search, at most
// window runs ahead of the last one it took.
type runner struct {
	slots []chan runResult // run i's result is in slots[i%len(slots)]
	free  chan struct{}    // a token per run the runner may start ahead
	quit  chan struct{}
	wg    sync.WaitGroup
}

func (s *Search) runner() *runner {
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	window := 4 * workers
	r := &runner{slots: make([]chan runResult, window), free: make(chan struct{}, window), quit: make(chan struct{})}
	for i := range r.slots {
		r.slots[i] = make(chan runResult, 1)
		r.free <- struct{}{}
	}
	jobs := make(chan int)
	r.wg.Add(1 + workers)
	go func() { // the feeder: run i starts once run i-window was taken
		defer r.wg.Done()
		defer close(jobs)
		for i := 0; i < s.Runs; i++ {
			select {
			case <-r.quit: // (checked first: select picks at random among ready cases)
				return
			default:
			}
			select {
			case <-r.free:
			case <-r.quit:
				return
			}
			select {
			case jobs <- i:
			case <-r.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer r.wg.Done()
			for i := range jobs {
				select {
				case <-r.quit: // the search is over: do not simulate what no one will take
					continue
				default:
				}
				r.slots[i%window] <- s.simulate(i) // never blocks: one run per slot is outstanding
			}
		}()
	}
	return r
}

// simulate runs and judges run i.
func (s *Search) simulate(i int) runResult {
	seed := RunSeed(s.Seed, i)
	cfg := sim.RandomSetup(s.Setup, seed)
	tr, err := sim.Run(cfg)
	if err != nil {
		return runResult{err: err}
	}
	return runResult{seed: seed, cfg: cfg, tr: tr, verdicts: Check(tr)}
}

// next waits for run i, the run after the last one taken.
func (r *runner) next(i int) runResult {
	res := <-r.slots[i%len(r.slots)]
	r.free <- struct{}{}
	return res
}

// stop ends the workers and drops the runs simulated ahead of the last
// one taken.
func (r *runner) stop() {
	close(r.quit)
	r.wg.Wait()
	for _, c := range r.slots {
		select {
		case res := <-c:
			if res.tr != nil {
				res.tr.Release()
			}
		default:
		}
	}
}
