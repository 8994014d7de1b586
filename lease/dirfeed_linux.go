package lease

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"unsafe"
)

// DirFeed calls a function for every write to some files of one
// directory (inotify's IN_MODIFY): a store without a server to notify
// anyone, such as SQLite, makes its [ChangeFeed] from it. Only write(2)
// counts: opening, reading, mapping and closing do not.
type DirFeed struct {
	mu      sync.Mutex
	fd, wd  int
	closing bool
}

// WatchFiles starts a DirFeed: notify is called, from a goroutine of the
// feed's, after each read of inotify events that holds a write to one of
// names in dir (a write to any other file of dir is not counted).
func WatchFiles(dir string, notify func(), names ...string) (*DirFeed, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	wd, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_MODIFY)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify %s: %w", dir, err)
	}
	d := &DirFeed{fd: fd, wd: wd}
	go d.read(notify, names)
	return d, nil
}

func (d *DirFeed) read(notify func(), names []string) {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := syscall.Read(d.fd, buf)
		if err == syscall.EINTR {
			continue
		}
		d.mu.Lock()
		closing := d.closing
		d.mu.Unlock()
		if err != nil || n <= 0 || closing {
			syscall.Close(d.fd)
			return
		}
		if writesTo(buf[:n], names) {
			notify()
		}
		if ended(buf[:n]) { // the directory is gone: no more events, ever
			d.mu.Lock()
			d.closing = true // Close has nothing left to remove
			d.mu.Unlock()
			syscall.Close(d.fd)
			return
		}
	}
}

// ended reports whether a buffer of inotify events holds IN_IGNORED: the
// watch was removed (the directory deleted, or Close).
func ended(b []byte) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
		if ev.Mask&syscall.IN_IGNORED != 0 {
			return true
		}
		b = b[min(len(b), syscall.SizeofInotifyEvent+int(ev.Len)):]
	}
	return false
}

// writesTo reports whether a buffer of inotify events names one of names.
func writesTo(b []byte, names []string) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		ev := (*syscall.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := syscall.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return true // malformed: better a spurious notice than a lost one
		}
		if ev.Len == 0 {
			// No name: the queue overflowed (IN_Q_OVERFLOW: writes were
			// lost uncounted) or the watch ended. A spurious notice costs
			// a read; a lost one, a poll.
			return true
		}
		name := b[syscall.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if slices.Contains(names, string(name)) {
			return true
		}
		b = b[end:]
	}
	return false
}

// Close ends the feed: removing the watch wakes its reader, which closes
// the descriptor.
func (d *DirFeed) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return nil
	}
	d.closing = true
	_, err := syscall.InotifyRmWatch(d.fd, uint32(d.wd))
	return err
}
