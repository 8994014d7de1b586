package sim

import (
	"slices"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Partial-order reduction (Explore.DPOR): the world records, for every
// step of an exploration, the shared objects it read and wrote, and
// after the run reports the races between steps of one instant: pairs
// whose order an equivalent run cannot swap. The explorer (package spec)
// then tries, at the tie before the first step of each race, the
// activity of the second (Flanagan and Godefroid's dynamic partial-order
// reduction, POPL 2005, with races found on the executed steps).
//
// The dependency relation. A step is what an activity does from one
// scheduling point to the next: the system call it was waiting to make,
// then its own code up to its next call. Two steps of one instant are
// dependent if they are of one process (its activities share memory), if
// either is global, or if both touch one object and at least one writes
// it. The objects:
//
//   - a name (a path): looked up by open without O_CREAT, read, stat and
//     link's source; written by open with O_CREAT or O_TRUNC, remove,
//     rename (both names) and link's target, whether or not the call
//     succeeds, except where the name's existence before the step alone
//     makes the call change nothing: an open with O_CREAT but not O_TRUNC
//     of a name that exists (it opens the file, or fails with O_EXCL), a
//     link whose target exists (EEXIST) and a remove of a name that does
//     not (ENOENT) only look it up. (Whether a name exists changes only
//     by a step that writes it, which conflicts with the lookup: the
//     lookup's mode holds in either order of a pair that does not.)
//   - a directory's names: read by readdir (and by the checker, which
//     judges their count's peaks); added to by an open that creates a
//     name and by link, removed from by remove, and by rename from its
//     source's directory and, if the target exists, its own; a rename
//     within a directory to a new name shuffles it (whether or not these
//     calls succeed, but for the lookups above, which change no
//     directory). Additions commute with additions and removals with
//     removals; a shuffle with both;
//   - a directory's change count (inotify's events), or a server
//     client's count of notices: read by a watcher's change token and
//     wait; written by every change notified (an open with O_CREAT or
//     O_TRUNC, remove, rename, link that succeed; a server's notice);
//   - a file's data, by inode (so names linked to one file are one
//     object): read by read and stat (not by open, remove, rename or
//     link, which neither see nor change it); written by write and open with
//     O_TRUNC (fsync changes nothing a process can see, unless power
//     loss is explored: see the journal);
//   - a file's flock lock, by inode: written by flock, and by a close of
//     the descriptor that holds it;
//   - a lease server: written by every request and subscription;
//   - leadership: written by every step that records a term's start or
//     its end as the user's code saw it, or acts on the fenced resource
//     (the checker orders these across processes by step; a process's
//     reported role and deadline are judged against its own leadership
//     only, in its own order);
//   - with power loss explored, the file system's journal: written by
//     every change of a name or of a file's data and by fsync (its order
//     is the order a power loss keeps a prefix of).
//
// A process's death (SIGKILL, SIGTERM before its handler, its exit)
// writes leadership, the flock locks its descriptors hold and every
// server (none sends it notices again); a SIGTERM or a pause writes
// leadership (a paused process no longer sees its context). Global
// steps, dependent on every other: a power loss and a wall-clock jump.
// An injected error touches what its call does. Everything else
// commutes: clock reads (every step of an instant reads the same
// instant), log lines, sleeps, spawns and signals within a process.
// Steps at different instants are never reordered: an activity's next
// step is at an instant its own past fixes, so no swap of steps of one
// instant brings a later step into it.

// objKind is the kind of a shared object.
type objKind uint8

const (
	objName    objKind = iota // a path
	objDir                    // a directory's names
	objChanges                // a directory's (or a server key's) change count
	objData                   // a file's data
	objLock                   // a file's flock lock
	objServer                 // a lease server
	objLead                   // leadership as the checker orders it
	objJournal                // the file system's metadata journal
	objSignal                 // a process's SIGTERM handler: installed, pending, awaited
)

// objKey names a shared object by what is the same in every run from one
// state (a path, an inode's number, a server's kind and lease name),
// never by a pointer: sleep sets compare the steps of different runs.
type objKey struct {
	kind objKind
	id   int
	s    string
}

// bit is the object's bit in a step's mask: a cheap hash of the key, so
// that most pairs of steps on different objects need no comparison of
// their accesses (a collision only costs that comparison).
func (o objKey) bit() uint64 {
	h := uint64(o.kind)*0x9e3779b97f4a7c15 ^ uint64(o.id)*0xbf58476d1ce4e5b9
	for i := 0; i < len(o.s); i++ {
		h = (h ^ uint64(o.s[i])) * 0x100000001b3
	}
	return 1 << (h >> 58)
}

// mode is how a step touches an object: reads commute with reads,
// updates with updates (a counter's increments), additions of names to a
// directory with additions and removals with removals (the names
// themselves are objects of their own; the count, whose peaks the checker
// judges, ends the same in either order), and a shuffle (a rename that
// leaves the count as it was) with every change but a read.
type mode uint8

const (
	read mode = iota
	write
	update
	add
	remove
	shuffle
)

type access struct {
	obj  objKey
	mode mode
}

// conflicts reports whether two accesses do not commute.
func (x access) conflicts(y access) bool {
	switch {
	case x.obj != y.obj:
		return false
	case x.mode == write || y.mode == write:
		return true
	case x.mode == read || y.mode == read:
		return x.mode != y.mode
	case x.mode == shuffle || y.mode == shuffle:
		return false
	}
	return x.mode != y.mode
}

// porStep is one recorded step.
type porStep struct {
	proc, act  int16
	t          int64
	tie        int // the tie it was chosen at (its ordinal in the run), or -1
	cand       int // its index among that tie's candidates
	acc0, acc1 int // its accesses: porLog.acc[acc0:acc1]
	ev0, ev1   int // its events: the trace's Events[ev0:ev1]
	global     bool
	// iso marks a step that runs no code of the variant's that another
	// activity of its process could share memory with (porBegin).
	iso    bool
	start  bool // the first step of its activity
	isoAct bool // of an activity that runs only the simulator's code
	// mask has a bit for each object the step touched (objKey.bit): two
	// steps whose masks are disjoint touched no object in common.
	mask uint64
	// enabler is the step that alone made its activity runnable
	// (activity.enabler), or -1: the step cannot run before it.
	enabler int
	// fault marks a step that was its process's death or pause instead
	// of its activity's step: the same whichever of the process's
	// activities it fell to.
	fault bool
	// dies marks a step that kills or pauses its process (a fault, an
	// exit): it disables every other step of its process, isolated or not.
	dies bool
	// quiet marks a step no other process can tell ran (por_quiet.go);
	// kill, a SIGKILL of its process.
	quiet, kill bool
}

// actOf is the activity a step is known by in a fingerprint: none for a
// process's fault.
func (s *porStep) actOf() int16 {
	if s.fault {
		return -1
	}
	return s.act
}

// porLog is a run's record for the reduction.
type porLog struct {
	steps []porStep
	acc   []access
	ties  [][]Candidate // each tie's candidates, by ordinal (in tieCands)
	// tieCands holds the ties' candidates, one after another.
	tieCands []Candidate
	open     bool // a step is being recorded
	// fsyncOnly marks the next touchFD as an fsync's.
	fsyncOnly bool
	tie       int // the pick just made was this tie (-1: none)
	cand      int
	// timed marks the event being recorded as the instant's rather than
	// the step's (a term's deadline passing, seen at whichever step of
	// the instant comes first); timedEv are such events' indices.
	timed   bool
	timedEv []int
	// quiet are the processes' quiet steps pending, by process
	// (por_quiet.go); held, the processes whose SIGKILL the pick being
	// made holds back for them (bit p for process p), and heldAt, the
	// ties where one was.
	quiet  []quietProc
	held   uint64
	heldAt []heldTie
	// instants' scratch, reused from instant to instant.
	deps [][]int
	flat []int
	pred []bitset
	all  bitset
}

// Race is a backtracking point the reduction found: at tie Tie (its
// ordinal among the run's ties), one of the candidates in Cands (bit c
// for candidate c) is to be tried first too, unless one already is; all
// of them if Every. Disables marks a death's (Every): Cands are the
// activities of its process it disabled, whose steps never ran after it.
type Race struct {
	Tie      int
	Cands    uint64
	Every    bool
	Disables bool
}

func (w *World) porBegin(a *activity) {
	l := w.por
	if w.nh != nil {
		w.nodeFlush()
	}
	l.steps = append(l.steps, porStep{proc: int16(a.p.idx), act: int16(a.id), t: a.ready, tie: l.tie, cand: l.cand,
		acc0: len(l.acc), ev0: len(w.tr.Events), iso: a.isolated || a.inSim || !a.started, start: !a.started, isoAct: a.isolated,
		enabler: a.enabler})
	a.enabler = -1
	l.open = true
	l.tie = -1
}

// porBeginFault starts recording a fault candidate's step (faultCands):
// its process's, no activity's.
func (w *World) porBeginFault(proc int) {
	l := w.por
	if w.nh != nil {
		w.nodeFlush()
	}
	l.steps = append(l.steps, porStep{proc: int16(proc), act: -1, t: w.now, tie: l.tie, cand: l.cand,
		acc0: len(l.acc), ev0: len(w.tr.Events), enabler: -1, fault: true})
	l.open = true
	l.tie = -1
}

func (w *World) porEnd() {
	l := w.por
	s := &l.steps[len(l.steps)-1]
	s.acc1, s.ev1 = len(l.acc), len(w.tr.Events)
	for _, a := range l.acc[s.acc0:s.acc1] {
		s.mask |= a.obj.bit()
	}
	l.open = false
	if e := w.cfg.Explore; e != nil && e.DPOR && e.Crashes > 0 {
		// (Only a SIGKILL's offering asks, and KillFingerprint, which
		// without a quiet step drops none.)
		s.quiet = w.quietStep(s)
		l.quietAdd(len(l.steps) - 1)
	}
	if w.nh != nil {
		w.nodeStep()
	}
	if f := w.cfg.Explore.OnStep; f != nil {
		fp := l.footprint(s)
		fp.acc = slices.Clone(fp.acc)
		if f(fp) {
			w.ex.stop = true
		}
	}
}

// porCurrent is the index of the step under way, or -1.
func (w *World) porCurrent() int {
	if l := w.por; l != nil && l.open {
		return len(l.steps) - 1
	}
	return -1
}

// touch records an access of the step under way: a write, or a read.
func (w *World) touch(o objKey, wr bool) {
	m := read
	if wr {
		m = write
	}
	w.touchMode(o, m)
}

func (w *World) touchMode(o objKey, m mode) {
	if l := w.por; l != nil && l.open {
		l.acc = append(l.acc, access{o, m})
	}
}

// porCall notes a call into the Proc that returns to its caller: an
// activity's first step that makes one runs the variant's code after it.
func (w *World) porCall() {
	if l := w.por; l != nil && l.open {
		if s := &l.steps[len(l.steps)-1]; s.start && !s.isoAct {
			s.iso = false
		}
	}
}

// porUser marks the step under way as running the variant's code.
func (w *World) porUser() {
	if l := w.por; l != nil && l.open {
		l.steps[len(l.steps)-1].iso = false
	}
}

// global marks the step under way as dependent on every other.
func (w *World) porGlobal() {
	if l := w.por; l != nil && l.open {
		l.steps[len(l.steps)-1].global = true
	}
}

// canon is the path the file system resolves path to (clean, absolute):
// what objects are named by, however a caller spells it.
func (w *World) canon(path string) string {
	if p, _, errno := w.fs.clean(path); errno == 0 {
		return p
	}
	return path
}

// touchAncestors records the reads of the walk to the clean path p:
// every directory above it (renaming one moves p; a file in its place
// fails the walk with ENOTDIR).
func (w *World) touchAncestors(p string) {
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			w.touch(objKey{kind: objName, s: p[:i]}, false)
		}
	}
}

// touchPath records an access of a name by a call that does not read
// the file's data (open, remove, rename, link): the walk to it, the name,
// and the journal when it writes the name.
func (w *World) touchPath(path string, write bool) {
	if w.por == nil {
		return
	}
	path = w.canon(path)
	w.touchAncestors(path)
	w.touch(objKey{kind: objName, s: path}, write)
	if write {
		w.touchJournal()
	}
}

// touchName records a read of a name and of the data of the file it
// names (read, stat).
func (w *World) touchName(path string) {
	if w.por == nil {
		return
	}
	w.touchPath(path, false)
	if ino := w.fs.names.get(w.canon(path)); ino != nil {
		w.touch(objKey{kind: objData, id: ino.id}, false)
	}
}

// exists reports whether path names a file or directory now (for a
// step's footprint: false when no steps are recorded).
func (w *World) exists(path string) bool {
	return w.por != nil && w.fs.names.get(w.canon(path)) != nil
}

// touchNames records a change of the names of path's directory: an
// addition, a removal or a shuffle.
func (w *World) touchNames(path string, m mode) {
	if w.por != nil {
		w.touchMode(objKey{kind: objDir, s: dirOf(w.canon(path))}, m)
	}
}

// touchDir records a listing of dir: its names, and the walk to it.
func (w *World) touchDir(dir string) {
	if w.por == nil {
		return
	}
	dir = w.canon(dir)
	w.touchAncestors(dir)
	w.touch(objKey{kind: objName, s: dir}, false)
	w.touch(objKey{kind: objDir, s: dir}, false)
}

// touchFD records an access of the data (or, lock, the flock lock) of the
// file behind p's descriptor fd.
func (w *World) touchFD(p *proc, fd lease.FD, lock, write bool) {
	if w.por == nil || fd < 0 || int(fd) >= len(p.fds.fds) || p.fds.fds[fd].ino == nil {
		return
	}
	ino := p.fds.fds[fd].ino
	if lock {
		w.touch(objKey{kind: objLock, id: ino.id}, true)
		return
	}
	if write && w.por.fsyncOnly {
		w.touchJournal()
		return
	}
	w.touch(objKey{kind: objData, id: ino.id}, write)
	if write {
		w.touchJournal()
	}
}

func (w *World) touchJournal() {
	if w.fs.tracking {
		w.touch(objKey{kind: objJournal}, true)
	}
}

// porEvent classifies a recorded event, the trace's last, for the step
// under way.
func (w *World) porEvent(e *trace.Event) {
	if w.por.timed {
		w.por.timedEv = append(w.por.timedEv, len(w.tr.Events)-1)
		return
	}
	switch e.Kind {
	case trace.EvStarted, trace.EvStopped, trace.EvStoppedCallback, trace.EvFence:
		w.touch(objKey{kind: objLead}, true)
	case trace.EvFault:
		switch e.FaultKind() {
		case trace.Kill, trace.Term, trace.Stop, trace.Suspend:
			// The process's own, and what its death or pause does to
			// others (porKill): its leadership ends, or is no longer seen.
			w.touch(objKey{kind: objLead}, true)
			w.porUser() // dependent on every step of its process
			if l := w.por; l.open {
				l.steps[len(l.steps)-1].dies = true
				l.steps[len(l.steps)-1].fault = e.FaultKind() != trace.Term
				l.steps[len(l.steps)-1].kill = e.FaultKind() == trace.Kill
			}
		case trace.FSError:
			// The failed call's own objects.
		default:
			w.porGlobal() // a clock jump, a power loss
		}
	}
}

// porKill records what a process's death touches: its leadership, the
// flock locks its descriptors hold, and the servers (which stop sending
// it notices).
func (w *World) porKill(p *proc) {
	if w.por == nil {
		return
	}
	w.touch(objKey{kind: objLead}, true)
	w.porUser()
	if l := w.por; l.open {
		l.steps[len(l.steps)-1].dies = true
	}
	for _, d := range p.fds.fds {
		if d.ino != nil && d.locked {
			w.touch(objKey{kind: objLock, id: d.ino.id}, true)
		}
	}
	for _, s := range w.servers {
		w.touch(objKey{kind: objServer, s: s.server.key}, true)
	}
	// What its blocked activities wait for: another process's step would
	// wake them (a release of the lock, a change notified); after the
	// death it wakes nobody.
	for _, x := range w.lockWaiters {
		if x.a.p == p {
			w.touch(objKey{kind: objLock, id: x.ino.id}, true)
		}
	}
	for _, x := range w.inotify.watchers {
		if x.a.p == p {
			w.touch(objKey{kind: objChanges, s: x.dir}, true)
		}
	}
}

// bitset is a set of a run's steps of one instant.
type bitset []uint64

func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }

// instants calls f with the steps of each instant that has step from or
// a later one and, for each step, the earlier steps of that instant it
// depends on (of its activity too) and those that happen before it (the
// transitive closure).
func (l *porLog) instants(from int, f func(lo int, steps []porStep, deps [][]int, pred []bitset)) {
	for lo := 0; lo < len(l.steps); {
		hi := lo + 1
		for hi < len(l.steps) && l.steps[hi].t == l.steps[lo].t {
			hi++
		}
		if hi <= from {
			lo = hi
			continue
		}
		steps := l.steps[lo:hi]
		n := len(steps)
		words := (n + 63) / 64
		// (The slices are the log's, reused from instant to instant.)
		deps := grow(l.deps, n)
		flat := l.flat[:0] // deps' backing store, grown as one
		pred := grow(l.pred, n)
		all := grow(l.all, n*words)
		clear(all)
		for j := range steps {
			deps[j] = nil
			pred[j] = all[j*words : (j+1)*words]
			if e := steps[j].enabler - lo; e >= 0 && e < j {
				pred[j].set(e) // it could not run before its enabler
				for w, x := range pred[e] {
					pred[j][w] |= x
				}
			}
			for i := range j {
				if steps[i].proc == steps[j].proc && steps[i].act == steps[j].act || l.dependent(&steps[i], &steps[j]) {
					flat = append(flat, i)
					deps[j] = flat[len(flat)-1-len(deps[j]) : len(flat) : len(flat)]
					pred[j].set(i)
					for w, x := range pred[i] {
						pred[j][w] |= x
					}
				}
			}
		}
		f(lo, steps, deps, pred)
		l.deps, l.flat, l.pred, l.all = deps, flat, pred, all
		lo = hi
	}
}

// grow returns s with length n, reusing its array if it is large enough
// (its elements then hold what they held).
func grow[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return make(S, n)
	}
	return s[:n]
}

// dependent reports whether two steps do not commute.
func (l *porLog) dependent(a, b *porStep) bool {
	if a.proc != b.proc && !a.global && !b.global && a.mask&b.mask == 0 {
		return false // (Footprint.Dependent's other cases need a common object)
	}
	return l.footprint(a).Dependent(l.footprint(b))
}

// touchRename records what a rename does to the names of its directories:
// its source's directory loses a name, its target's gains one unless the
// target exists (then it loses the source's); within one directory, a
// rename to a new name leaves the count as it was.
func (w *World) touchRename(oldname, newname string) {
	if w.por == nil {
		return
	}
	oldname, newname = w.canon(oldname), w.canon(newname)
	exists := w.fs.names.get(newname) != nil
	switch {
	case dirOf(oldname) != dirOf(newname):
		w.touchNames(oldname, remove)
		if exists {
			w.touchNames(newname, shuffle)
		} else {
			w.touchNames(newname, add)
		}
	case exists:
		w.touchNames(oldname, remove)
	default:
		w.touchNames(oldname, shuffle)
	}
}
