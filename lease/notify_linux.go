package lease

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// inotify is the real runtime's Notifier on Linux: one inotify instance
// per watched directory, read by a goroutine that counts the changes and
// wakes the waiters.
type inotify struct {
	mu   sync.Mutex
	dirs map[string]*dirWatch
}

type dirWatch struct {
	mu      sync.Mutex
	n       uint64
	changed chan struct{} // closed and replaced at every change
	err     error
	fd, wd  int  // the inotify instance and its watch (fd -1: none)
	closing bool // close was called: the reader closes fd and returns
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
	d := &dirWatch{changed: make(chan struct{}), fd: -1}
	if in.dirs == nil {
		in.dirs = map[string]*dirWatch{}
	}
	in.dirs[dir] = d
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	wd := -1
	if err == nil {
		wd, err = syscall.InotifyAddWatch(fd, dir, inotifyMask)
		if err != nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		d.err = err // WaitChange then falls back to waiting out its deadline
		return d
	}
	d.fd, d.wd = fd, wd
	go d.read(fd)
	return d
}

// close ends every watch: removing a watch queues IN_IGNORED, which wakes
// its reader, and the reader, seeing closing, closes the descriptor and
// returns. (Closing the descriptor under a blocked read would not wake
// it.) Waiters fall back to their deadlines. [Run] calls it when it
// returns, so that a service that runs elections one after another keeps
// no descriptor or goroutine of the ones that ended.
func (in *inotify) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for dir, d := range in.dirs {
		d.mu.Lock()
		if d.fd >= 0 && !d.closing {
			d.closing = true
			syscall.InotifyRmWatch(d.fd, uint32(d.wd))
		}
		d.mu.Unlock()
		delete(in.dirs, dir)
	}
}

// read counts inotify events until the descriptor fails. Events on
// temporary files (names with ".tmp.", which every writer in this package
// creates before it publishes) are not counted: only a published name can
// change what a reader reads, and waking every watcher for each step of
// another process's write would only make them contend with it.
func (d *dirWatch) read(fd int) {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		d.mu.Lock()
		if err != nil || n <= 0 || d.closing {
			if d.closing {
				err = syscall.EBADF // closed: no more notifications
			}
			d.err = err
			close(d.changed)
			d.changed = make(chan struct{})
			d.mu.Unlock()
			syscall.Close(fd)
			return
		}
		if !relevant(buf[:n]) {
			d.mu.Unlock()
			continue
		}
		d.n++
		close(d.changed)
		d.changed = make(chan struct{})
		d.mu.Unlock()
	}
}

// ChangeToken implements Notifier.
func (p *osProc) ChangeToken(dir string) uint64 {
	d := p.note.watch(dir)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// WaitChange implements Notifier.
func (p *osProc) WaitChange(dir string, token uint64, until time.Duration) bool {
	return p.WaitChangeContext(context.Background(), dir, token, until)
}

// WaitChangeContext implements ContextWaiter.
func (p *osProc) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	d := p.note.watch(dir)
	d.mu.Lock()
	n, ch, err := d.n, d.changed, d.err
	d.mu.Unlock()
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

// relevant reports whether a buffer of inotify events holds one that is
// not about a temporary file (or one without a name: the directory itself).
func relevant(b []byte) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := syscall.SizeofInotifyEvent + int(ev.Len)
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
