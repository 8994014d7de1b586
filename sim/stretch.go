package sim

import (
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// stretchState counts the stretch faults under way (see Fault): a stretch
// of a kind lasts until the last one of that kind ends.
type stretchState struct {
	full, blocks, inodes, eio, stall int
}

// stalled reports whether the machine is stalled: no process takes a step.
func (w *World) stalled() bool { return w.stretches.stall > 0 }

// fireStretch starts a stretch fault of the whole machine (DiskFull,
// DiskEIO, Stall), recording it with its length and scheduling its End, or
// ends any stretch (an EMFile starts in fire, as a signal does).
func (w *World) fireStretch(f Fault) {
	s := &w.stretches
	if f.Kind == trace.End && f.ends == trace.EMFile {
		p := w.procs[f.Proc]
		p.emfile--
		w.record(trace.FaultEnd(int16(p.idx), trace.EMFile, w.tr.Str(fmt.Sprintf("emfile ends (pid %d)", p.pid))))
		return
	}
	if f.Kind == trace.End {
		switch f.ends {
		case trace.DiskFull:
			*s.fullOf(f.Call)--
		case trace.DiskEIO:
			s.eio--
		case trace.Stall:
			s.stall--
		}
		w.record(trace.FaultEnd(-1, f.ends, w.tr.Str(diskName(f.ends, f.Call)+" ends")))
		w.setDisk()
		if f.ends == trace.Stall && !w.stalled() {
			for _, p := range w.procs {
				if !p.stopped {
					p.unpark()
				}
			}
		}
		return
	}
	w.setup.fate(f, fired)
	w.record(trace.Fault(-1, f.Kind, f.Dur, 0, false, w.tr.Str(f.String())))
	switch f.Kind {
	case trace.DiskFull:
		*s.fullOf(f.Call)++
	case trace.DiskEIO:
		s.eio++
	case trace.Stall:
		s.stall++
	}
	w.setDisk()
	w.faults = insertFault(w.faults, Fault{Kind: trace.End, At: time.Duration(w.now) + f.Dur, ends: f.Kind, Call: f.Call})
}

// fullOf is the count of DiskFull stretches of the given space (Fault.Call).
func (s *stretchState) fullOf(space string) *int {
	switch space {
	case DiskNoBlocks:
		return &s.blocks
	case DiskNoInodes:
		return &s.inodes
	}
	return &s.full
}

// diskName names a stretch kind, with the space a full disk lacks.
func diskName(k trace.FaultKind, space string) string {
	if k == trace.DiskFull && space != "" {
		return k.String() + " (no free " + space + ")"
	}
	return k.String()
}

// setDisk gives the file system the errors of the disk stretches under
// way: EIO to every create, write and link while the disk fails (it fails
// whether or not it is also full); while it is full, ENOSPC to the calls
// that need what it lacks: blocks (writes), inodes (creates), or both
// (creates, writes, and links, whose directory needs a block); none
// otherwise.
func (w *World) setDisk() {
	s := &w.stretches
	var e diskErrs
	if s.eio > 0 {
		e = diskErrs{syscall.EIO, syscall.EIO, syscall.EIO}
	} else {
		if s.full > 0 || s.inodes > 0 {
			e.create = syscall.ENOSPC
		}
		if s.full > 0 || s.blocks > 0 {
			e.write = syscall.ENOSPC
		}
		if s.full > 0 {
			e.link = syscall.ENOSPC
		}
	}
	w.fs.full = e
}

// unpark puts the activities that p could not run while it was stopped or
// the machine stalled back in the queue, ready now at the earliest: their
// timers fired late.
func (p *proc) unpark() {
	for _, a := range p.parked {
		a.ready = max(a.ready, p.w.now)
		p.w.queue.push(a)
	}
	p.parked = p.parked[:0]
}

// bootIDErr is what BootID returns on a machine that cannot tell its boot
// (Config.NoBootID), as reading a missing /proc/sys/kernel/random/boot_id
// would.
var bootIDErr = &fs.PathError{Op: "open", Path: "/proc/sys/kernel/random/boot_id", Err: syscall.ENOENT}
