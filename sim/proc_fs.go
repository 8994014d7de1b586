package sim

import (
	"io/fs"
	"strings"
	"syscall"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// injected is the error a fault injects into a call, or nil.
func injected(op, path string, e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: e}
}

func injectedPair(op, oldname, newname string, e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return injected(op, oldname+" -> "+newname, e)
}

// Open implements lease.FS.
func (p *proc) Open(name string, flag int, perm fs.FileMode) (lease.FD, error) {
	a, inj := p.enter(trace.OpOpen, flag)
	switch exists := p.w.exists(name); {
	case flag&lease.O_TRUNC == 0 && exists:
		// O_CREAT or not, it creates nothing (with O_EXCL, it fails): a
		// lookup.
		p.w.touchPath(name, false)
	default:
		p.w.touchPath(name, flag&(lease.O_CREATE|lease.O_TRUNC) != 0)
		if flag&lease.O_CREATE != 0 && !exists {
			p.w.touchNames(name, add)
		}
	}
	fd, err := lease.FD(-1), injected("open", name, inj)
	if inj == 0 {
		fd, err = p.w.fs.Open(p.fds, name, flag, perm)
		if err == nil && flag&lease.O_TRUNC != 0 {
			p.w.touchFD(p, fd, false, true)
		}
		if err == nil && flag&(lease.O_CREATE|lease.O_TRUNC) != 0 {
			p.w.notify(name)
		}
	}
	e := p.call(a, trace.OpOpen)
	e.Path, e.Flag, e.FD, e.Errno = p.w.tr.Str(name), int32(flag), int32(fd), errno(err)
	p.done(e)
	return fd, err
}

// Write implements lease.FS.
func (p *proc) Write(fd lease.FD, b []byte) (int, error) {
	a, inj := p.enter(trace.OpWrite, 0)
	p.w.touchFD(p, fd, false, true)
	n, err := 0, injected("write", "fd", inj)
	if inj == 0 {
		n, err = p.w.fs.Write(p.fds, fd, b)
	}
	e := p.call(a, trace.OpWrite)
	e.FD, e.N, e.Data, e.Errno = int32(fd), int64(n), p.w.tr.Bytes(b), errno(err)
	p.done(e)
	return n, err
}

// Fsync implements lease.FS.
func (p *proc) Fsync(fd lease.FD) error {
	a, inj := p.enter(trace.OpFsync, 0)
	if p.w.por != nil {
		p.w.por.fsyncOnly = true
		p.w.touchFD(p, fd, false, true)
		p.w.por.fsyncOnly = false
	}
	err := injected("fsync", "fd", inj)
	if inj == 0 {
		err = p.w.fs.Fsync(p.fds, fd)
	}
	e := p.call(a, trace.OpFsync)
	e.FD, e.Errno = int32(fd), errno(err)
	p.done(e)
	return err
}

// Close implements lease.FS.
func (p *proc) Close(fd lease.FD) error {
	a, inj := p.enter(trace.OpClose, 0)
	if fd >= 0 && int(fd) < len(p.fds.fds) && p.fds.fds[fd].locked {
		p.w.touchFD(p, fd, true, true) // it releases the lock
	}
	// An injected error frees the descriptor all the same, its lock
	// released: Linux frees it whatever close reports (and a retried
	// close would close another's).
	err := injected("close", "fd", inj)
	if cerr := p.w.fs.Close(p.fds, fd); inj == 0 {
		err = cerr
	}
	e := p.call(a, trace.OpClose)
	e.FD, e.Errno = int32(fd), errno(err)
	p.done(e)
	return err
}

// ReadFile implements lease.FS.
func (p *proc) ReadFile(name string) ([]byte, error) {
	a, inj := p.enter(trace.OpRead, 0)
	p.w.touchName(name)
	var b []byte
	err := injected("read", name, inj)
	if inj == 0 {
		b, err = p.w.fs.ReadFile(name)
	}
	e := p.call(a, trace.OpRead)
	e.Path, e.N, e.Data, e.Errno = p.w.tr.Str(name), int64(len(b)), p.w.tr.Bytes(b), errno(err)
	p.done(e)
	return b, err
}

// Stat implements lease.FS.
func (p *proc) Stat(name string) (fs.FileInfo, error) {
	a, inj := p.enter(trace.OpStat, 0)
	p.w.touchName(name)
	var fi fs.FileInfo
	err := injected("stat", name, inj)
	if inj == 0 {
		fi, err = p.w.fs.Stat(name)
	}
	e := p.call(a, trace.OpStat)
	e.Path, e.Errno = p.w.tr.Str(name), errno(err)
	p.done(e)
	return fi, err
}

// Remove implements lease.FS.
func (p *proc) Remove(name string) error {
	a, inj := p.enter(trace.OpRemove, 0)
	if p.w.exists(name) {
		p.w.touchPath(name, true)
		p.w.touchNames(name, remove)
	} else {
		p.w.touchPath(name, false) // (it fails: ENOENT)
	}
	err := injected("remove", name, inj)
	if inj == 0 {
		err = p.w.fs.Remove(name)
		if err == nil {
			p.w.notify(name)
		}
	}
	e := p.call(a, trace.OpRemove)
	e.Path, e.Errno = p.w.tr.Str(name), errno(err)
	p.done(e)
	return err
}

// Rename implements lease.FS.
func (p *proc) Rename(oldname, newname string) error {
	a, inj := p.enter(trace.OpRename, 0)
	p.w.touchPath(oldname, true)
	p.w.touchPath(newname, true)
	p.w.touchRename(oldname, newname)
	err := injectedPair("rename", oldname, newname, inj)
	if inj == 0 {
		err = p.w.fs.Rename(oldname, newname)
		if err == nil {
			p.w.notify(newname)
			if dirOf(p.w.canon(oldname)) != dirOf(p.w.canon(newname)) {
				p.w.notify(oldname) // (inotify: IN_MOVED_FROM in the source's directory)
			}
		}
	}
	e := p.call(a, trace.OpRename)
	e.Path, e.Path2, e.Errno = p.w.tr.Str(oldname), p.w.tr.Str(newname), errno(err)
	p.done(e)
	return err
}

// Link implements lease.FS.
func (p *proc) Link(oldname, newname string) error {
	a, inj := p.enter(trace.OpLink, 0)
	p.w.touchPath(oldname, false)
	if p.w.exists(newname) {
		p.w.touchPath(newname, false) // (it fails: EEXIST)
	} else {
		p.w.touchPath(newname, true)
		p.w.touchNames(newname, add)
	}
	err := injectedPair("link", oldname, newname, inj)
	if inj == 0 {
		err = p.w.fs.Link(oldname, newname)
		if err == nil {
			p.w.notify(newname)
		}
	}
	e := p.call(a, trace.OpLink)
	e.Path, e.Path2, e.Errno = p.w.tr.Str(oldname), p.w.tr.Str(newname), errno(err)
	p.done(e)
	return err
}

// ReadDir implements lease.FS.
func (p *proc) ReadDir(dir string) ([]string, error) {
	a, inj := p.enter(trace.OpReadDir, 0)
	p.w.touchDir(dir)
	var names []string
	err := injected("readdir", dir, inj)
	if inj == 0 {
		names, err = p.w.fs.ReadDir(dir)
	}
	e := p.call(a, trace.OpReadDir)
	e.Path, e.N, e.Data, e.Errno = p.w.tr.Str(dir), int64(len(names)), p.w.tr.Str(strings.Join(names, " ")), errno(err)
	p.done(e)
	return names, err
}

// Flock implements lease.FS. A LOCK_EX that must wait blocks the calling
// activity until the lock is released (by LOCK_UN, by the close of the
// descriptor holding it, or by the death of its process); every waiter is
// then woken a system-call latency later, all at one instant, and retries:
// which of them gets the lock is the scheduler's choice among same-instant
// steps, as on Linux it is whichever waiter runs first. Faults hit a
// waiting process as any other: SIGKILL ends the wait, SIGTERM runs the
// handler beside it, SIGSTOP keeps it from taking the lock until SIGCONT.
func (p *proc) Flock(fd lease.FD, how int) error {
	a, inj := p.enter(trace.OpFlock, how)
	p.w.touchFD(p, fd, true, true)
	err := injected("flock", "fd", inj)
	if inj == 0 {
		w := p.w
		for {
			var ino *inode
			ino, err = w.fs.flock(p.fds, fd, how)
			if ino == nil {
				break
			}
			w.record(trace.Event{Proc: int16(p.idx), Act: int16(a.id), Kind: trace.EvBlock, Op: trace.OpFlock, FD: int32(fd), Flag: int32(how)})
			w.lockWaiters = append(w.lockWaiters, lockWaiter{a: a, ino: ino})
			a.block()
			w.touchFD(p, fd, true, true) // the retry, a step of its own, takes the lock or waits again
		}
	}
	e := p.call(a, trace.OpFlock)
	e.FD, e.Flag, e.Errno = int32(fd), int32(how), errno(err)
	p.done(e)
	return err
}
