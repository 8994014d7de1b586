package sim

import ()

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
