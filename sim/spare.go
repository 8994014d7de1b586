package sim

import (
	"math/rand/v2"
	"sync"
)

// spare is the memory of a finished world that no caller can see any more
// (sim.Run's: it returns only the trace), kept for the next run: the world
// struct, the process slab, the file system with its name map, the
// descriptor tables, the random sources and the scheduler's slices.
// Allocating them, and the collector's work that allocation causes, was
// about a quarter of a short run's cost (BenchmarkSimSyscall).
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
}

var spares sync.Pool // of *spare

// getSpare returns the memory of a finished world, or fresh memory.
func getSpare() *spare {
	if s, ok := spares.Get().(*spare); ok {
		return s
	}
	return new(spare)
}

// Release gives the memory of a world that has run back for later worlds
// (New's, and sim.Run's, which releases its own): a search that makes
// many runs allocates little for each. Neither the world nor anything
// it returned may be used afterwards, but its trace may. A world never
// released is left to the garbage collector.
func (w *World) Release() { w.recycle() }

// recycle gives the memory of w, which came from spare memory and has
// finished its run, back for the next run. Nothing of w may be used
// afterwards but its trace.
func (w *World) recycle() {
	if s := w.spare; s != nil {
		s.reclaim(w)
		spares.Put(s)
	}
}

// reclaim empties s, the memory of the finished world w, for another run.
func (s *spare) reclaim(w *World) {
	clear(s.slab)
	s.procs = w.procs[:0]
	clear(w.procs)
	for i := range s.fdts {
		clear(s.fdts[i].fds[:cap(s.fdts[i].fds)])
	}
	names, unlocked := s.fs.names, s.fs.unlocked
	clear(names)
	s.fs = FileSystem{names: names, unlocked: unlocked} // (unlocked is &s.w's: the next world's)
	s.queue = w.queue[:0]
	clear(s.queue[:cap(s.queue)])
	s.faults = s.faults[:0] // (w.faults was consumed from its front)
	clear(s.faults[:cap(s.faults)])
	s.reap = w.reap[:0]
	clear(s.reap[:cap(s.reap)])
	s.cand = w.cands[:0]
	s.acts = w.candAct[:0]
	clear(s.acts[:cap(s.acts)])
	s.w = World{}
}

// newFileSystem is NewFileSystem on spare memory.
func (s *spare) newFileSystem() *FileSystem {
	f := &s.fs
	if f.names == nil {
		f.names = make(map[string]*inode)
	}
	clear(f.names) // (reclaim emptied it; this once held a setup that failed: a probe)
	f.names["/"] = &inode{mode: rootMode, id: 1}
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

// newPCG is NewPCG on spare memory: the same stream.
func (s *spare) newPCG(seed, stream uint64) *PCG {
	s.pcgSrc.Seed(seed, stream)
	s.pcgRnd = *rand.New(&s.pcgSrc)
	s.pcg = PCG{&s.pcgRnd}
	return &s.pcg
}

// newRandom is NewRandom on spare memory: the same stream.
func (s *spare) newRandom(seed uint64) *Random {
	s.rndSrc.Seed(seed, randomStream)
	s.rndRnd = *rand.New(&s.rndSrc)
	s.rnd = Random{&s.rndRnd}
	return &s.rnd
}
