package lease

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"
)

// DirFeed calls a function for every write to some files of one
// directory (inotify's IN_MODIFY): a store without a server to notify
// anyone, such as SQLite, makes its [ChangeFeed] from it. Only write(2)
// counts: opening, reading, mapping and closing do not. (The real
// runtime's Notifier, which watches the lease directory for every change,
// is one too: notify_linux.go.)
type DirFeed struct {
	mu      sync.Mutex
	fd, wd  int
	closing bool
}

// WatchFiles starts a DirFeed: notify is called, from a goroutine of the
// feed's, after each read of inotify events that holds a write to one of
// names in dir (a write to any other file of dir is not counted).
func WatchFiles(dir string, notify func(), names ...string) (*DirFeed, error) {
	return watchDir(dir, syscall.IN_MODIFY, func(b []byte) bool { return writesTo(b, names) }, notify, nil)
}

// watchDir starts a DirFeed on dir's events of mask: notify is called
// after each read of events that match accepts, and ended, if set, once
// the feed has ended (its error: EBADF after Close, ErrNotExist when the
// directory was removed, or the read's).
func watchDir(dir string, mask uint32, match func([]byte) bool, notify func(), ended func(error)) (*DirFeed, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	wd, err := syscall.InotifyAddWatch(fd, dir, mask)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("inotify %s: %w", dir, err)
	}
	d := &DirFeed{fd: fd, wd: wd}
	go d.read(match, notify, ended)
	return d, nil
}

// read reads events until the feed ends: Close (which removes the watch:
// the IN_IGNORED that follows wakes the read; closing the descriptor under
// a blocked read would not), the directory's removal (IN_IGNORED too: no
// event will ever come again) or a failed read.
func (d *DirFeed) read(match func([]byte) bool, notify func(), onEnd func(error)) {
	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	end := func(err error) {
		d.mu.Lock()
		d.closing = true // Close has nothing left to remove
		d.mu.Unlock()
		syscall.Close(d.fd)
		if onEnd != nil {
			onEnd(err)
		}
	}
	for {
		n, err := syscall.Read(d.fd, buf)
		if err == syscall.EINTR {
			continue
		}
		d.mu.Lock()
		closing := d.closing
		d.mu.Unlock()
		switch {
		case closing:
			end(syscall.EBADF) // closed: no more notifications
			return
		case err != nil || n <= 0:
			if err == nil {
				err = syscall.EIO
			}
			end(err)
			return
		}
		if match(buf[:n]) {
			notify()
		}
		if ended(buf[:n]) { // the directory is gone: no more events, ever
			end(fs.ErrNotExist)
			return
		}
	}
}

// eventHeader returns the mask and the name's length of the inotify event
// at the start of b (at least syscall.SizeofInotifyEvent bytes), read
// field by field: a *syscall.InotifyEvent into the buffer would claim
// bytes past an event that ends the allocation (its Go size is larger
// than the kernel's header), which the race detector's pointer checks
// reject.
func eventHeader(b []byte) (mask, nameLen uint32) {
	return binary.NativeEndian.Uint32(b[4:8]), binary.NativeEndian.Uint32(b[12:16])
}

// ended reports whether a buffer of inotify events holds IN_IGNORED (the
// watch was removed: the directory deleted, or Close) or IN_MOVE_SELF (the
// directory was moved: the watch follows it, away from its path; a mask
// that asks for it ends there).
func ended(b []byte) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		mask, nameLen := eventHeader(b)
		if mask&(syscall.IN_IGNORED|syscall.IN_MOVE_SELF) != 0 {
			return true // (moved: what it watches is no longer at its path)
		}
		b = b[min(len(b), syscall.SizeofInotifyEvent+int(nameLen)):]
	}
	return false
}

// writesTo reports whether a buffer of inotify events names one of names.
func writesTo(b []byte, names []string) bool {
	for len(b) >= syscall.SizeofInotifyEvent {
		_, nameLen := eventHeader(b)
		end := syscall.SizeofInotifyEvent + int(nameLen)
		if end > len(b) {
			return true // malformed: better a spurious notice than a lost one
		}
		if nameLen == 0 {
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
