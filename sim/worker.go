package sim

import (
	"iter"
	"sync"
)

// worker is a coroutine that runs activities one after another. Starting
// a goroutine and growing its stack costs more than a whole run's worth of
// system calls, so workers are kept in a pool and reused across runs.
type worker struct {
	next     func() (struct{}, bool)
	stop     func()
	yield    func(struct{}) bool
	act      *activity // the activity it runs, and its body:
	fn       func()
	finished bool // body has returned or unwound; the worker is parked
}

func newWorker() *worker {
	wk := &worker{}
	wk.next, wk.stop = iter.Pull(func(yield func(struct{}) bool) {
		wk.yield = yield
		for {
			wk.run()
			wk.finished = true
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return wk
}

// run runs the activity's body; a dead process's activity unwinds with
// errKilled. (The activity and its body are fields, not a closure made
// per activity: a run spawns a dozen.)
func (wk *worker) run() {
	defer func() {
		if r := recover(); r != nil && r != errKilled && !wk.act.panicked(r) {
			panic(r)
		}
	}()
	a := wk.act
	a.started = true // (World.step, which first resumes it, has set a.t)
	if p := a.p; wk.fn == nil {
		// The process's first activity: no method value made each run.
		store, cfg := p.mainArgs()
		if err := p.w.variant.Start(p, store, p.w.cfg.LockPath, cfg); err != nil {
			panic(err) // New validated the config
		}
		return
	}
	wk.fn()
}

// resume runs the worker until its activity's next scheduling point and
// reports whether the activity is still alive.
func (wk *worker) resume() bool {
	wk.finished = false
	if _, ok := wk.next(); !ok {
		panic("sim: worker coroutine ended")
	}
	return !wk.finished
}

var pool struct {
	sync.Mutex
	free []*worker
}

const maxPooled = 512

func getWorker() *worker {
	pool.Lock()
	defer pool.Unlock()
	if n := len(pool.free); n > 0 {
		wk := pool.free[n-1]
		pool.free = pool.free[:n-1]
		return wk
	}
	return newWorker()
}

// putWorker returns a parked worker to the pool.
func putWorker(wk *worker) {
	wk.act, wk.fn = nil, nil
	pool.Lock()
	if len(pool.free) < maxPooled {
		pool.free = append(pool.free, wk)
		wk = nil
	}
	pool.Unlock()
	if wk != nil {
		wk.stop()
	}
}
