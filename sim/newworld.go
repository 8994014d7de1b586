package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Run runs cfg to its horizon and returns the trace.
func Run(cfg Config) (*trace.Trace, error) {
	w, err := newWorld(cfg, getSpare(), nil) // (the world struct too: no caller sees it)
	if err != nil {
		return nil, err // (its spare memory, half set up, is dropped)
	}
	w.Run()
	tr := w.tr
	w.recycle() // no one else sees w
	return tr, nil
}

// chooserStream is the PCG stream of a world's own Chooser.
const chooserStream = 0x1ea5e1ab

// New prepares a run, on the memory of a released world if there is one
// (Release). The World itself is new: the caller's pointer is never
// another world's.
func New(cfg Config) (*World, error) {
	// (When it fails, the spare memory it took, half set up, is dropped:
	// given back, it held that setup's files.)
	return newWorld(cfg, getSpare(), new(World))
}

// newWorld prepares a run in w, on the spare memory s if it is not nil.
// A nil w is s's own world struct (or a new one without s).
func newWorld(cfg Config, s *spare, w *World) (*World, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	v, _ := lease.LookupVariant(cfg.Variant)
	switch {
	case w != nil:
	case s != nil:
		w = &s.w
	default:
		w = new(World)
	}
	*w = World{
		cfg:     cfg,
		variant: v,
		choose:  cfg.Chooser,
		sched:   cfg.Scheduler,
		base:    cfg.WallBase.UnixNano(),
		tr:      trace.New(),
		spare:   s,
		nconf:   len(cfg.Procs),
	}
	if s != nil {
		w.fs = s.newFileSystem()
		w.queue, w.faults, w.cands, w.candAct, w.reap = s.queue, s.faults, s.cand, s.acts, s.reap
	} else {
		w.fs = NewFileSystem()
	}
	w.limit = cfg.syscallLimit()
	w.end = int64(cfg.Horizon)
	if cfg.Explore != nil {
		w.noFastPath = true
		w.sched = delayBounded{w}
		w.xc = cfg.Explore.Chooser
		if cfg.Explore.DPOR || cfg.Explore.OnNode != nil {
			w.por = s.newPorLog()
		}
		if cfg.Explore.OnNode != nil {
			w.nh = newNodeHash(&w.cfg)
			// (Wrapped apart even when they are one Chooser: comparing
			// two interfaces panics on a type that is not comparable.)
			w.xc = &drawHash{w: w, c: w.xc}
			if w.choose != nil {
				w.choose = &drawHash{w: w, c: w.choose}
			}
		}
	}
	switch {
	case w.choose == nil:
		w.choose = s.newPCG(cfg.Seed, chooserStream)
		if w.sched == nil {
			w.sched = s.newRandom(cfg.Seed)
		}
	case w.sched == nil:
		w.sched = chooserScheduler{w.choose}
	}
	if s != nil && w == &s.w {
		w.fs.unlocked = s.unlocked // (bound once to this very struct)
	} else {
		w.fs.unlocked = w.unlocked
	}
	w.fs.MkdirAll(dirOf(cfg.LockPath))
	for _, f := range cfg.Files {
		w.fs.MkdirAll(dirOf(f.Path))
		if err := w.fs.Place(f.Path, []byte(f.Data), 0o644); err != nil {
			return nil, fmt.Errorf("setup file %s: %w", f.Path, err)
		}
	}
	w.fs.WatchDir(dirOf(cfg.LockPath))
	w.tr.LockDir = trace.DirCounts{Watched: true, Start: w.fs.WatchCount()}
	w.dirMax = w.fs.WatchCount()
	w.tr.Base = cfg.WallBase
	w.setup = &setup{cfg: cfg}
	w.tr.Run = trace.Run{Variant: cfg.Variant, Lease: cfg.Lease, LockPath: cfg.LockPath, Server: v.Claims.Handover == lease.ServerExpiry, Setup: w.setup,
		CallMax: cfg.callMax(), SharedPIDs: cfg.SharedPIDs}
	var slab []proc
	if s != nil && cap(s.slab) >= len(cfg.Procs) {
		slab, w.procs = s.slab[:len(cfg.Procs)], s.procs[:0]
	} else {
		slab = make([]proc, len(cfg.Procs)) // one allocation for the configured processes
		w.procs = make([]*proc, 0, len(cfg.Procs))
	}
	if s != nil {
		s.slab = slab
	}
	w.tr.Procs = make([]trace.ProcInfo, 0, len(cfg.Procs))
	w.tr.Acts = make([][]string, 0, len(cfg.Procs))
	names := make([]string, 4*len(cfg.Procs)) // each process's first four activities' names, in one array
	for i, ps := range cfg.Procs {
		p := &slab[i]
		*p = proc{w: w, idx: i, pid: ps.PID, slow: ps.Slow}
		p.clock.init(ps.DriftPPM, int64(ps.Skew))
		if s != nil {
			p.fds = s.newFDTable(w.fs, i)
		} else {
			p.fds = w.fs.NewFDTable()
		}
		p.acts = p.actPtrs[:0]
		p.leaders = p.leadBuf[:0]
		w.procs = append(w.procs, p)
		w.tr.Procs = append(w.tr.Procs, trace.ProcInfo{PID: ps.PID, Start: ps.Start, Lease: ps.Lease, DriftPPM: ps.DriftPPM})
		w.tr.Acts = append(w.tr.Acts, names[4*i:4*i:4*i+4]) // (a fifth is appended elsewhere)
	}
	if len(cfg.Faults) > 0 {
		w.setup.fates = make([]FaultFate, len(cfg.Faults))
	}
	for i, f := range cfg.Faults {
		f.idx = i + 1
		if f.Follows > 0 {
			w.chained = append(w.chained, f) // armed when the fault it follows fires
			continue
		}
		if f.After != "" && f.Kind == trace.Power && f.At > 0 {
			// Aimed, with a time to fall at if its call never comes: a
			// timed copy that defers to the trigger (World.fire).
			ref := &aimedRef{proc: f.Proc, i: len(w.leaderTriggers)}
			if f.Proc != Leader {
				ref.i = len(w.procs[f.Proc].triggers)
			}
			timed := f
			timed.After, timed.aimed = "", ref
			w.faults = append(w.faults, timed)
		}
		if f.After != "" && f.Proc == Leader {
			w.leaderTriggers = append(w.leaderTriggers, trigger{f: f})
			continue
		}
		if f.After != "" || f.Kind == trace.FSError {
			p := w.procs[f.Proc]
			p.triggers = append(p.triggers, trigger{f: f})
			continue
		}
		w.faults = append(w.faults, f)
	}
	slices.SortStableFunc(w.faults, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
	if s != nil {
		s.faults = w.faults // (the whole array: the run consumes w.faults from its front)
	}
	// Any power loss, whatever aims it (a time, a call, another fault):
	// one aimed after a call used to find nothing tracked, and every write
	// since the last fsync survived it (a probe).
	for _, f := range cfg.Faults {
		if f.Kind == trace.Power {
			w.fs.TrackDurability() // everything placed before the run is durable
			break
		}
	}
	for i, p := range w.procs {
		p.spawn("main", int64(cfg.Procs[i].Start), nil) // nil: the variant's Start (worker.run)
	}
	return w, nil
}

func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// restart is the machine's restart Dur after power loss f, wherever the
// loss fell (Fault.Dur): every program the run configured starts again at
// an offset within f.Delta of that instant (a fixed mix of f.Delta and its
// index, so that any of them may come first), with its configuration
// (PID, lease, speed, clock, boot id), as the explorer's restart does. A
// program's current process is one the config named or the last restart
// added: one that had started (the loss killed it, or it had ended) or
// was killed before it could is followed by a new process; one still to
// start when the machine went down (a launch later than an early loss, or
// a restart's process when a second loss falls before it) starts with the
// restart instead, once. The run's calm (Config.Calm) starts again when
// the last one starts, and its bound on system calls counts the restart.
func (w *World) restart(f Fault) {
	at := w.now + int64(f.Dur)
	last := at
	if w.incarn == nil {
		w.incarn = make([]int, w.nconf)
		for i := range w.incarn {
			w.incarn[i] = i
		}
	}
	for i := range w.nconf {
		start := at
		if f.Delta > 0 {
			h := uint64(f.Delta) ^ uint64(i+1)*0x9e3779b97f4a7c15
			h ^= h >> 31
			h *= 0xbf58476d1ce4e5b9
			h ^= h >> 29
			start += int64(h % uint64(f.Delta))
		}
		last = max(last, start)
		cur := w.incarn[i]
		if ps := w.cfg.Procs[cur]; int64(ps.Start) > w.now && !w.procs[cur].dead {
			w.delayStart(cur, start)
			continue
		}
		ps := w.cfg.Procs[i]
		ps.Start = time.Duration(start)
		w.incarn[i] = len(w.procs)
		w.addProc(ps)
	}
	if w.cfg.Calm > 0 {
		w.end = max(w.end, last+int64(w.cfg.Calm))
	}
	if w.cfg.MaxSyscalls == 0 && w.limit > 0 {
		// The run's bound on system calls, for its processes now and the
		// time it now runs (the config's counted neither).
		c := w.cfg
		c.Horizon, c.Calm = time.Duration(w.end), 0
		w.limit = max(w.limit, c.syscallLimit())
	}
}

// delayStart moves the start of process i, which has not started, to at.
func (w *World) delayStart(i int, at int64) {
	p := w.procs[i]
	a := p.acts[0] // its main, not begun
	w.queue.remove(a)
	a.t, a.ready, a.seq = at, at, w.seq
	w.seq++
	w.queue.push(a)
	// (Cloned first: the slices may share an array with the caller's
	// Config.)
	if !w.ownProcs {
		w.cfg.Procs = slices.Clone(w.cfg.Procs)
		w.setup.cfg.Procs = slices.Clone(w.setup.cfg.Procs)
		w.ownProcs = true
	}
	w.cfg.Procs[i].Start = time.Duration(at)
	w.setup.cfg.Procs[i].Start = time.Duration(at)
	w.tr.Procs[i].Start = time.Duration(at)
}
