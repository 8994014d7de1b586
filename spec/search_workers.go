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
//
// A worker takes a chunk of chunkRuns consecutive runs at a time and
// hands them over together: a hand-off per run (three channel operations,
// each of which can wake an idle processor that then spins looking for
// work) cost a 2-core search a fifth more CPU time than a 1-core one.

// chunkRuns is how many consecutive runs a worker simulates per hand-off.
const chunkRuns = 8

// aheadEvents bounds the events of the runs simulated ahead of the search
// (and not yet taken by it): a run is a few hundred events, but a process
// that spins makes up to a million, and a window of such runs held
// gigabytes. Past the bound only the chunk the search takes next is
// simulated, so the search never waits on a worker that waits on it.
var aheadEvents = 1 << 21 // (a variable: a test lowers it)
// runResult is one simulated and judged run.
type runResult struct {
	seed     uint64
	cfg      sim.Config
	tr       *trace.Trace
	verdicts []Verdict
	err      error
}

// runner simulates the runs of a search ahead of the search, at most
// window chunks ahead of the chunk of the last run it took.
type runner struct {
	slots []chan []runResult // chunk c's results are in slots[c%len(slots)]
	free  chan struct{}      // a token per chunk the runner may start ahead
	quit  chan struct{}
	wg    sync.WaitGroup
	cur   []runResult // the chunk being taken
	curC  int         // its number

	mu      sync.Mutex
	roomy   sync.Cond // signalled when ahead falls, curC moves or the search ends
	ahead   int       // events of the runs simulated and not yet taken
	taken   int       // curC, as workers read it (under mu)
	stopped bool
}

func (s *Search) runner() *runner {
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	window := 2 * workers
	r := &runner{slots: make([]chan []runResult, window), free: make(chan struct{}, window), quit: make(chan struct{}), curC: -1, taken: -1}
	r.roomy.L = &r.mu
	for i := range r.slots {
		r.slots[i] = make(chan []runResult, 1)
		r.free <- struct{}{}
	}
	chunks := (s.Runs + chunkRuns - 1) / chunkRuns
	jobs := make(chan int)
	r.wg.Add(1 + workers)
	go func() { // the feeder: chunk c starts once chunk c-window was taken
		defer r.wg.Done()
		defer close(jobs)
		for c := 0; c < chunks; c++ {
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
			case jobs <- c:
			case <-r.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer r.wg.Done()
			for c := range jobs {
				res := make([]runResult, 0, chunkRuns)
				for i := c * chunkRuns; i < min((c+1)*chunkRuns, s.Runs); i++ {
					if !r.room(c) {
						break // the search is over: do not simulate what no one will take
					}
					res = append(res, s.simulate(i))
					if tr := res[len(res)-1].tr; tr != nil {
						r.mu.Lock()
						r.ahead += len(tr.Events)
						r.mu.Unlock()
						continue
					}
					break
				}
				r.slots[c%window] <- res // never blocks: one chunk per slot is outstanding
			}
		}()
	}
	return r
}

// simulate runs and judges run i; the details of its linearizable-store
// violation are left for the search to settle if it keeps the run.
func (s *Search) simulate(i int) runResult {
	seed := RunSeed(s.Seed, i)
	cfg := sim.RandomSetup(s.Setup, seed)
	tr, err := sim.Run(cfg)
	if err != nil {
		return runResult{err: err}
	}
	return runResult{seed: seed, cfg: cfg, tr: tr, verdicts: decide(tr)} // (settled in Run if kept)
}

// room waits until a run of chunk c may be simulated: at once for the
// chunk the search takes next, otherwise while the runs ahead hold more
// than aheadEvents. It reports false once the search is over.
func (r *runner) room(c int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.stopped && c > r.taken+1 && r.ahead > aheadEvents {
		r.roomy.Wait()
	}
	return !r.stopped
}

// next waits for run i, the run after the last one taken.
func (r *runner) next(i int) runResult {
	c := i / chunkRuns
	if c != r.curC {
		r.cur, r.curC = <-r.slots[c%len(r.slots)], c
		r.free <- struct{}{}
		r.mu.Lock()
		r.taken = c
		r.mu.Unlock()
		r.roomy.Broadcast()
	}
	res := r.cur[i%chunkRuns]
	r.cur[i%chunkRuns] = runResult{} // taken: stop() must not release it
	if res.tr != nil {
		r.mu.Lock()
		r.ahead -= len(res.tr.Events)
		r.mu.Unlock()
		r.roomy.Broadcast()
	}
	return res
}

// stop ends the workers and drops the runs simulated ahead of the last
// one taken.
func (r *runner) stop() {
	close(r.quit)
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.roomy.Broadcast()
	r.wg.Wait()
	release := func(rs []runResult) {
		for _, res := range rs {
			if res.tr != nil {
				res.tr.Release()
			}
		}
	}
	release(r.cur)
	for _, c := range r.slots {
		select {
		case rs := <-c:
			release(rs)
		default:
		}
	}
}
