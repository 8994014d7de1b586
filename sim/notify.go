package sim

import (
	"strings"
	"time"
)

// notifications is the world's inotify: how many times each directory
// has changed, and the activities waiting in WaitChange.
type notifications struct {
	// changes counts the changes to each directory (a slice: a run has
	// one or two directories).
	changes  []dirChanges
	watchers []watcher
}

type dirChanges struct {
	dir string
	n   uint64
	rel uint64 // the number of the latest change that was a server's release notice (0: none)
}

func (w *World) changesOf(dir string) uint64 {
	w.touch(objKey{kind: objChanges, s: dir}, false)
	for _, c := range w.inotify.changes {
		if c.dir == dir {
			return c.n
		}
	}
	return 0
}

// releasedSince reports whether dir's latest change is a release notice
// counted after token.
func (w *World) releasedSince(dir string, token uint64) bool {
	w.touch(objKey{kind: objChanges, s: dir}, false)
	for _, c := range w.inotify.changes {
		if c.dir == dir {
			return c.rel == c.n && c.n > token
		}
	}
	return false
}

// watcher is an activity in WaitChange.
type watcher struct {
	a   *activity
	dir string
}

func (w *World) unwatch(a *activity) {
	for i, x := range w.inotify.watchers {
		if x.a == a {
			w.inotify.watchers = append(w.inotify.watchers[:i], w.inotify.watchers[i+1:]...)
			return
		}
	}
}

// notify delivers a change to path's directory to every activity waiting
// for one: it wakes a system-call latency from now, unless it would wake
// sooner anyway.
func (w *World) notify(path string) { w.notifyDir(dirOf(w.canon(path))) }

// canonDir is a watched directory as the file system names it; a server
// client's notice key (not a path: it does not begin with a slash) is
// left as it is.
func (w *World) canonDir(dir string) string {
	if strings.HasPrefix(dir, "/") {
		return w.canon(dir)
	}
	return dir
}

// notifyDir delivers a change to dir (a directory, or a server client's
// notice key) to every activity waiting for one.
func (w *World) notifyDir(dir string) { w.notifyKey(dir, false) }

// notifyKey delivers a change to dir, as notifyDir, that is a server's
// notice of a release when release is set (lease.ReleaseHint).
func (w *World) notifyKey(dir string, release bool) {
	w.touchMode(objKey{kind: objChanges, s: dir}, update)
	found := false
	for i := range w.inotify.changes {
		if c := &w.inotify.changes[i]; c.dir == dir {
			c.n++
			if release {
				c.rel = c.n
			}
			found = true
		}
	}
	if !found {
		c := dirChanges{dir: dir, n: 1}
		if release {
			c.rel = 1
		}
		w.inotify.changes = append(w.inotify.changes, c)
	}
	if len(w.inotify.watchers) == 0 {
		return
	}
	at := w.now + w.latency(nil)
	for _, x := range w.inotify.watchers {
		a := x.a
		if x.dir != dir || a.changed || a.p.dead {
			continue
		}
		a.changed = true
		if a.ready <= at {
			continue
		}
		a.ready, a.onClock = at, false
		if a.hidx >= 0 {
			w.queue.remove(a)
			a.seq = w.seq
			w.seq++
			w.queue.push(a)
		}
	}
}

// ChangeToken implements lease.Notifier.
func (p *proc) ChangeToken(dir string) uint64 {
	p.w.porCall()
	return p.w.changesOf(p.w.canonDir(dir))
}

// WaitChange implements lease.Notifier: the activity sleeps until a
// change under dir is delivered (a system-call latency after it happens)
// or its local deadline until. A change since token returns at once.
func (p *proc) WaitChange(dir string, token uint64, until time.Duration) bool {
	dir = p.w.canonDir(dir)
	w := p.w
	a := w.cur
	if w.changesOf(dir) != token {
		a.point(a.t) // the event is already queued: read it
		return true
	}
	a.changed = false
	w.inotify.watchers = append(w.inotify.watchers, watcher{a: a, dir: dir})
	waits := int64(until) > p.clock.mono(a.t)
	a.point(a.onClockUntil(int64(until)))
	a.onClock = false
	ranOut := p.clock.mono(a.t) >= int64(until)
	w.touch(objKey{kind: objChanges, s: dir}, false) // a.changed: the notifier's
	w.unwatch(a)
	if waits && !a.changed && ranOut {
		p.woke(a) // timed out (not told of a change, nor cut short by a context)
	}
	return a.changed
}
