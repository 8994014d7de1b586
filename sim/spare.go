package sim

import (
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/leaselab/leaselab/lease"
)

// spare is the memory of a finished world, kept for the next run: the
// process slab, the file system with its name map, the descriptor tables,
// the random sources, the scheduler's slices and parked coroutines, and
// for sim.Run's worlds (which no caller sees) the world struct itself.
// sim.Run gives its world's back when the run ends; New's caller gives
// it back by Release. Allocating it all, and the collector's work that
// allocation causes, was about a quarter of a short run's cost
// (BenchmarkSimSyscall).
//
// Reuse cannot leak one run into the next: New zeroes every struct it
// takes from here and keeps only the backing arrays of slices and maps,
// emptied; what a trace keeps (its setup, process table, files) is never
// spare. TestSpareWorldsChangeNothing compares runs on spare memory with
// runs on fresh memory, trace for trace.
type spare struct {
	w      World
	slab   []proc
	procs  []*proc
	fdts   []FDTable
	fs     FileSystem
	pcg    PCG
	pcgSrc rand.PCG
	pcgRnd rand.Rand
	rnd    Random
	rndSrc rand.PCG
	rndRnd rand.Rand
	queue  actHeap
	faults []Fault
	cand   []Candidate
	acts   []*activity
	reap   []*activity
	por    *porLog // a reduced or merged exploration's record
	// observers are the leadership observers of the slab's processes,
	// by index (World.leadObserver).
	observers []*leadObserver
	// workers are the coroutines that ran this memory's worlds'
	// activities, parked for its next run. The pool of spares caches
	// them per processor (sync.Pool), and so these mostly stay on the
	// core that ran them: workers shared by every world moved their
	// goroutines and stacks from core to core, and a check on two cores
	// spent 6-10% more CPU time (coroutine switches on cold memory).
	workers *parked
	// unlocked is s.w.unlocked, the file system's hook for a world in s.w
	// (sim.Run's), made once. (A hook kept with the file system itself
	// told a later world's flock waiters nothing: a world New made is not
	// s.w. TestFlockSignalsWhileWaiting found it.)
	unlocked func(*inode)
}

// parked is a spare's parked workers. When the spare is collected (a
// sync.Pool drops what it holds at a garbage collection), a cleanup stops
// them: nothing else refers to them, and a parked coroutine is a
// goroutine that would otherwise wait forever.
type parked struct{ ws []*worker }

// maxParked bounds a spare's parked workers (a run has a dozen
// activities); the rest go to the shared pool.
const maxParked = 32

var spares sync.Pool // of *spare

// getSpare returns the memory of a finished world, or fresh memory.
func getSpare() *spare {
	if s, ok := spares.Get().(*spare); ok {
		return s
	}
	return newSpare()
}

// newSpare returns fresh memory for a world, with a cleanup that stops
// its parked workers once it is collected.
func newSpare() *spare {
	s := &spare{workers: new(parked)}
	s.unlocked = s.w.unlocked
	runtime.AddCleanup(s, func(pk *parked) {
		for _, wk := range pk.ws {
			wk.stop() // (its coroutine ends: parked, it waits at its loop's yield)
		}
	}, s.workers)
	return s
}

// getWorker returns a worker for one of w's activities: one its memory
// parked, else one from the shared pool.
func (w *World) getWorker() *worker {
	if s := w.spare; s != nil {
		if ws := s.workers.ws; len(ws) > 0 {
			wk := ws[len(ws)-1]
			s.workers.ws = ws[:len(ws)-1]
			return wk
		}
	}
	return getWorker()
}

// putWorker parks a worker whose activity has ended (or unwound) with w's
// memory for its next run, or in the shared pool.
func (w *World) putWorker(wk *worker) {
	if s := w.spare; s != nil && len(s.workers.ws) < maxParked {
		wk.act, wk.fn = nil, nil
		s.workers.ws = append(s.workers.ws, wk)
		return
	}
	putWorker(wk)
}

// Release gives the world's memory back for later worlds (New's, and
// sim.Run's, which releases its own): a search that makes many runs
// allocates little for each. Afterwards the world may not be run, and
// nothing of it may be used but its trace (Trace, and the trace itself);
// a second Release does nothing. A world released before it ran gives
// back the coroutines its processes were to start on. A world never
// released is left to the garbage collector.
func (w *World) Release() {
	if w.released {
		return
	}
	w.released = true
	w.recycle()
}

// recycle gives the memory of w, which has finished its run (or never
// started it), back for the next run, if it came from spare memory.
// Nothing of w may be used afterwards but its trace.
func (w *World) recycle() {
	s := w.spare
	if s == nil {
		return
	}
	w.unwindAll() // (a world that ran has none left)
	s.reclaim(w)
	w.spare = nil
	w.por = nil // (the next run's now: Races and the fingerprints of a released world are empty)
	spares.Put(s)
}

// reclaim empties s, the memory of the finished world w, for another run.
func (s *spare) reclaim(w *World) {
	clear(s.slab)
	s.procs = w.procs[:0]
	clear(w.procs)
	for i := range s.fdts {
		clear(s.fdts[i].fds[:cap(s.fdts[i].fds)])
	}
	names := s.fs.names.m
	clear(names)
	// (Its chunks of file bytes too: the run's files and the bytes their
	// reads lent are the finished run's, which no one uses any more.)
	s.fs = FileSystem{names: nameTable{m: names}, chunks: s.fs.chunks}
	s.queue = w.queue[:0]
	clear(s.queue[:cap(s.queue)])
	s.faults = s.faults[:0] // (w.faults was consumed from its front)
	clear(s.faults[:cap(s.faults)])
	s.reap = w.reap[:0]
	clear(s.reap[:cap(s.reap)])
	s.cand = w.cands[:0]
	s.acts = w.candAct[:0]
	clear(s.acts[:cap(s.acts)])
	if w.por != nil {
		s.por = w.por
	}
	for _, o := range s.observers {
		if o != nil {
			o.user = lease.Callbacks{} // (the caller's, kept alive no longer)
		}
	}
	s.w = World{}
}

// leadObserver returns the observer of p's leadership (observeLeadership):
// the one made for the same process of w's memory in an earlier run, or
// a new one.
func (w *World) leadObserver(p *proc) *leadObserver {
	s := w.spare
	if s == nil || p.idx >= len(s.slab) || p != &s.slab[p.idx] {
		return newLeadObserver(p) // (a restart's process: not the slab's)
	}
	for len(s.observers) <= p.idx {
		s.observers = append(s.observers, nil)
	}
	if o := s.observers[p.idx]; o != nil && o.p == p {
		return o
	}
	o := newLeadObserver(p)
	s.observers[p.idx] = o
	return o
}

// newPorLog returns an empty record for the reduction, on the spare
// memory of an earlier one if s has it. (Its steps' and accesses' arrays
// are kept; every field is reset.)
func (s *spare) newPorLog() *porLog {
	if s == nil || s.por == nil {
		return &porLog{tie: -1}
	}
	l := s.por
	s.por = nil
	*l = porLog{steps: l.steps[:0], acc: l.acc[:0], ties: l.ties[:0], tieCands: l.tieCands[:0], timedEv: l.timedEv[:0],
		quiet: l.quiet[:0], heldAt: l.heldAt[:0], deps: l.deps, flat: l.flat, pred: l.pred, all: l.all, tie: -1}
	return l
}

// newFileSystem is NewFileSystem on spare memory.
func (s *spare) newFileSystem() *FileSystem {
	f := &s.fs
	if f.names.m == nil {
		f.names.m = make(map[string]*inode)
	}
	clear(f.names.m) // (reclaim emptied it; this once held a setup that failed: a probe)
	f.names = nameTable{m: f.names.m}
	f.names.set("/", &inode{mode: rootMode, id: 1})
	f.inodes = 1
	return f
}

// newFDTable is the i'th process's FileSystem.NewFDTable on spare memory.
func (s *spare) newFDTable(f *FileSystem, i int) *FDTable {
	for len(s.fdts) <= i {
		s.fdts = append(s.fdts, FDTable{fds: make([]description, firstFD, 8)})
	}
	t := &s.fdts[i]
	*t = FDTable{fds: t.fds[:firstFD], fs: f}
	return t
}

// newPCG is NewPCG on spare memory (a nil s: NewPCG): the same stream.
func (s *spare) newPCG(seed, stream uint64) *PCG {
	if s == nil {
		return NewPCG(seed, stream)
	}
	s.pcgSrc.Seed(seed, stream)
	s.pcgRnd = *rand.New(&s.pcgSrc)
	s.pcg = PCG{&s.pcgRnd, &s.pcgSrc}
	return &s.pcg
}

// newRandom is NewRandom on spare memory (a nil s: NewRandom): the same
// stream.
func (s *spare) newRandom(seed uint64) *Random {
	if s == nil {
		return NewRandom(seed)
	}
	s.rndSrc.Seed(seed, randomStream)
	s.rndRnd = *rand.New(&s.rndSrc)
	s.rnd = Random{&s.rndRnd}
	return &s.rnd
}
