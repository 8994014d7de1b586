package sim

import (
	"syscall"

	"github.com/leaselab/leaselab/lease"
)

// lockWaiter is an activity waiting in a blocking flock.
type lockWaiter struct {
	a   *activity
	ino *inode
}

// unlocked wakes every activity waiting for ino's flock lock, a
// system-call latency from now, all at the same instant: each retries, and
// the scheduler's choice among same-instant steps decides which one takes
// the lock (the others wait again). A waiter whose process is paused is
// woken too, and retries when it is continued.
func (w *World) unlocked(ino *inode) {
	at := int64(-1)
	kept := w.lockWaiters[:0]
	for _, x := range w.lockWaiters {
		if x.ino != ino {
			kept = append(kept, x)
			continue
		}
		if at < 0 {
			at = w.now + w.latency(nil)
		}
		w.wake(x.a, at)
	}
	clear(w.lockWaiters[len(kept):])
	w.lockWaiters = kept
}

// Flock is flock(2) without waiting: LOCK_EX and LOCK_EX|LOCK_NB take the
// file's lock if it is free or already held through fd, LOCK_UN releases
// it if fd holds it (and succeeds if not, as Linux does). Locks belong to
// the open file description, so two descriptors of one file, even in one
// process, exclude each other; closing one that does not hold the lock
// leaves it held. Shared locks (LOCK_SH) are not modelled: EINVAL.
//
// A blocking LOCK_EX on a lock held through another description cannot
// wait here, where there is no scheduler: Flock panics. A simulated
// process waits (its activity blocks until the lock is released); a View
// is for tests and set-up, which must not wait.
func (f *FileSystem) Flock(t *FDTable, fd lease.FD, how int) error {
	ino, err := f.flock(t, fd, how)
	if ino != nil {
		panic("sim: a blocking flock on a View would wait forever: the lock is held through another descriptor")
	}
	return err
}

// flock is Flock, except that a blocking LOCK_EX that must wait returns
// the inode to wait for (and a nil error); the caller waits and retries.
func (f *FileSystem) flock(t *FDTable, fd lease.FD, how int) (*inode, error) {
	// Linux checks the operation before the descriptor: an unknown one is
	// EINVAL even on a closed descriptor.
	switch how &^ lease.LOCK_NB {
	case lease.LOCK_UN, lease.LOCK_EX:
	default:
		return nil, fdErr("flock", fd, syscall.EINVAL)
	}
	d := t.get(fd)
	if d == nil {
		return nil, fdErr("flock", fd, syscall.EBADF)
	}
	if d.noRW && how&^lease.LOCK_NB != lease.LOCK_UN {
		// Linux locks only a descriptor open for reading or writing.
		return nil, fdErr("flock", fd, syscall.EBADF)
	}
	if how&^lease.LOCK_NB == lease.LOCK_UN {
		if d.locked {
			t.unlock(fd)
		}
		return nil, nil
	}
	ino := d.ino
	switch {
	case d.locked:
		return nil, nil // already ours
	case !ino.locked:
		d.locked, ino.locked = true, true
		return nil, nil
	case how&lease.LOCK_NB != 0:
		return nil, fdErr("flock", fd, syscall.EWOULDBLOCK)
	}
	return ino, nil
}
