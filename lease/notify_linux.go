package lease

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// inotify is the real runtime's Notifier on Linux: one inotify instance
// per watched directory, read by a goroutine that counts the changes and
// wakes the waiters.
type inotify struct {
	mu   sync.Mutex
	dirs map[string]*dirWatch
	// names are, per directory, the lease names whose files wake its
	// watchers (watchName); a directory without one wakes them for every
	// name but a temporary file's.
	names map[string][]string
	tries int // watches made (for a test of retryWatch)
}

// dirWatch is one directory's watch: a DirFeed counting into notices,
// and the error it ended with, if it did (waiters then fall back to
// their deadlines, and the next look at the directory after retryWatch
// watches it again).
type dirWatch struct {
	notices Notices
	feed    *DirFeed
	names   atomic.Pointer[[]string] // the directory's lease names, as inotify.names

	mu       sync.Mutex
	err      error
	failedAt time.Time
}

// The events that can change which version of a lease is current, or
// what a lock file holds; and the directory moved away (IN_MOVE_SELF: the
// watch would follow it, and miss every change at its old path).
const inotifyMask = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_DELETE | syscall.IN_CLOSE_WRITE | syscall.IN_MODIFY | syscall.IN_MOVE_SELF

// retryWatch is how soon a directory whose watch failed or ended (it did
// not exist yet; it was removed or moved away) is watched again.
const retryWatch = 500 * time.Millisecond

// watch returns dir's watch, made anew when the one before failed or
// ended at least retryWatch ago. A new watch's count starts past the old
// one's, so that a token taken from the old watch reads as a change (what
// happened between the two was not counted).
func (in *inotify) watch(dir string) *dirWatch {
	in.mu.Lock()
	defer in.mu.Unlock()
	old, ok := in.dirs[dir]
	if ok {
		old.mu.Lock()
		stale := old.err != nil && time.Since(old.failedAt) >= retryWatch
		old.mu.Unlock()
		if !stale {
			return old
		}
	}
	d := &dirWatch{}
	if ok {
		n, _ := old.notices.Changes()
		d.notices.n = n + 1
	}
	if names := in.names[dir]; names != nil {
		d.names.Store(&names)
	}
	if in.dirs == nil {
		in.dirs = map[string]*dirWatch{}
	}
	in.dirs[dir] = d
	in.tries++
	f, err := watchDir(dir, inotifyMask, d.relevant, d.notices.Notify, d.ended)
	if err != nil {
		d.err, d.failedAt = err, time.Now() // WaitChange then falls back to waiting out its deadline
		return d
	}
	d.feed = f
	return d
}

// watchName makes the files of the lease at path (path itself, path.N,
// path.boot.K) the ones whose changes wake the watchers of its directory,
// beside any other lease's there (NameWatcher). Another program's writes
// in that directory (a log beside the lease) woke every watcher for each
// of its writes, and cut short every back-off: a watcher whose reads
// failed read again at once, logging each failure to that log (a probe:
// 169,441 lines in 5 s, a CPU's worth).
func (in *inotify) watchName(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	in.mu.Lock()
	defer in.mu.Unlock()
	names := in.names[dir]
	if slices.Contains(names, base) {
		return
	}
	names = append(slices.Clip(names), base)
	if in.names == nil {
		in.names = map[string][]string{}
	}
	in.names[dir] = names
	if d, ok := in.dirs[dir]; ok {
		d.names.Store(&names)
	}
}

// ended records why the watch ended and wakes its waiters, who fall back
// to their deadlines. The next look at the directory watches it again (at
// once: nothing failed yet at its path).
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

// relevant reports whether a buffer of inotify events holds one that can
// change what a reader of the directory's leases reads: one without a
// name (the directory itself, a queue overflow), or about one of the
// leases' files (watchName), or, where no lease's name is known, about
// any file but a temporary one.
func (d *dirWatch) relevant(b []byte) bool {
	var names []string
	if p := d.names.Load(); p != nil {
		names = *p
	}
	return relevant(b, names)
}

// relevant is dirWatch.relevant for the lease names names. A temporary
// file (every writer in this package creates one before it publishes)
// never is: only a published name can change what a reader reads, and
// waking every watcher for each step of another process's write would
// only make them contend with it.
func relevant(b []byte, names []string) bool {
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
		if len(name) == 0 || leaseFile(string(name), names) {
			return true
		}
		b = b[end:]
	}
	return false
}

// leaseFile reports whether name is a published file of one of the
// leases names: the lease's own name, a version's or a boot record's (any
// name without ".tmp." when there is none). Not a temporary file, and not
// a file merely named after the lease (lease.log, lease.pid: a log named
// after its lease woke its watchers for each line).
func leaseFile(name string, names []string) bool {
	if names == nil {
		return !strings.Contains(name, ".tmp.")
	}
	for _, base := range names {
		if name == base {
			return true
		}
		rest, ok := strings.CutPrefix(name, base+".")
		if !ok {
			continue
		}
		rest, _ = strings.CutPrefix(rest, "boot.")
		if _, ok := decimal(rest); ok {
			return true
		}
	}
	return false
}

// WatchName implements NameWatcher.
func (p *osProc) WatchName(path string) { p.note.watchName(path) }

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
