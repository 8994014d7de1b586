package lease

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// inotify is the real runtime's Notifier on Linux: one inotify instance
// per watched directory, read by a goroutine that counts the changes and
// wakes the waiters.
type inotify struct {
	mu   sync.Mutex
	dirs map[string]*dirWatch
}

// dirWatch is one directory's watch: a DirFeed counting into notices,
// and the error it ended with, if it did (waiters then fall back to
// their deadlines).
type dirWatch struct {
	notices Notices
	feed    *DirFeed

	mu  sync.Mutex
	err error
}

// The events that can change which version of a lease is current, or
// what a lock file holds.
const inotifyMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_DELETE | syscall.IN_CLOSE_WRITE | syscall.IN_MODIFY

func (in *inotify) watch(dir string) *dirWatch {
	in.mu.Lock()
	defer in.mu.Unlock()
	if d, ok := in.dirs[dir]; ok {
		return d
	}
	d := &dirWatch{}
	if in.dirs == nil {
		in.dirs = map[string]*dirWatch{}
	}
	in.dirs[dir] = d
	f, err := watchDir(dir, inotifyMask, relevant, d.notices.Notify, d.ended)
	if err != nil {
		d.err = err // WaitChange then falls back to waiting out its deadline
		return d
	}
	d.feed = f
	return d
}

// ended records why the watch ended and wakes its waiters, who fall back
// to their deadlines.
func (d *dirWatch) ended(err error) {
	d.mu.Lock()
	d.err = err
	d.mu.Unlock()
	d.notices.Notify()
}

// state is the watch's count, the channel its next change closes, and its
// error, if it has ended.
func (d *dirWatch) state() (uint64, <-chan struct{}, error) {
	n, ch := d.notices.Changes()
	d.mu.Lock()
	defer d.mu.Unlock()
	return n, ch, d.err
}

// close ends every watch (DirFeed.Close: its reader closes the
// descriptor). Waiters fall back to their deadlines. [Run] calls it when
// it returns, so that a service that runs elections one after another
// keeps no descriptor or goroutine of the ones that ended.
func (in *inotify) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for dir, d := range in.dirs {
		if d.feed != nil {
			d.feed.Close()
		}
		delete(in.dirs, dir)
	}
}

// relevant reports whether a buffer of inotify events holds one that is
// not about a temporary file (names with ".tmp.", which every writer in
// this package creates before it publishes: only a published name can
// change what a reader reads, and waking every watcher for each step of
// another process's write would only make them contend with it), or one
// without a name (the directory itself, a queue overflow).
func relevant(b []byte) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		_, nameLen := eventHeader(b)
		end := syscall.SizeofInotifyEvent + int(nameLen)
		if end > len(b) {
			return true // malformed: better a spurious wake-up than a lost one
		}
		name := b[syscall.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if !bytes.Contains(name, []byte(".tmp.")) {
			return true
		}
		b = b[end:]
	}
	return false
}

// ChangeToken implements Notifier.
func (p *osProc) ChangeToken(dir string) uint64 {
	n, _, _ := p.note.watch(dir).state()
	return n
}

// WaitChange implements Notifier.
func (p *osProc) WaitChange(dir string, token uint64, until time.Duration) bool {
	return p.WaitChangeContext(context.Background(), dir, token, until)
}

// WaitChangeContext implements ContextWaiter.
func (p *osProc) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	n, ch, err := p.note.watch(dir).state()
	if n != token {
		return true
	}
	wait := until - p.Mono()
	if err != nil {
		// No notifications: wait out the deadline, but no longer than a
		// poll would (the caller re-reads when this returns).
		wait = min(wait, time.Second)
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	case <-p.done:
		runtime.Goexit()
		return false
	}
}

var _ Notifier = (*osProc)(nil)
