package lease

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// ReadDir lists directory dir with getdents64(2), called until it
// returns nothing more, as of one instant. The kernel makes each call
// under the directory's lock, but a call may return fewer names than its
// buffer holds (ext4 returns an indexed directory a block of its hash
// tree at a time), so a directory of more than a few dozen names takes
// several calls, and a link or unlink may land between two of them: a
// name present from the first call to the last is listed, one that came
// or went in between may or may not be (POSIX readdir). That is not
// enough for VersionedFile: a writer whose listing after its link spans
// a release and the next acquisition (two writes, milliseconds apart) can
// miss every version above its own and believe it won. So a listing that
// took more than one call is made again under an inotify watch on the
// directory, set before its first call and read, without waiting, after
// its last: the kernel queues the event for a name created, linked,
// removed or moved in the directory while it still holds the directory's
// lock (fsnotify_create, fsnotify_link, d_delete_notify, fsnotify_move),
// and getdents64 takes that lock too, so a change a listing call could
// have missed has its event queued before the next call, and no event
// means nothing changed during the listing, which is then the directory's
// content at any instant of it. A listing that saw changes is made again,
// up to maxRelist times (then EAGAIN: the caller's I/O error, an unknown
// outcome, never a wrong one). Limits: inotify sees only this machine's
// changes (not another NFS, FUSE or 9p client's: keep the lock on a local
// file system, as flock and the boot id require anyway); the watches
// share one inotify instance a process, made at its first crowded
// listing and kept, so that such listings take turns within a process;
// and a user out of inotify instances at that first listing
// (fs.inotify.max_user_instances, 128 by default, shared with every tool
// that watches files), or out of watches at any
// (fs.inotify.max_user_watches), gets EMFILE or ENOSPC from it: an I/O
// error, never a torn listing. A directory one call lists needs neither.
// Opened with O_NOFOLLOW and O_DIRECTORY: a symbolic link or a file is
// refused (ELOOP, ENOTDIR); more than MaxReadDir bytes of entries is
// EFBIG.
func (OSFS) ReadDir(dir string) ([]string, error) {
	names, err := readDir(dir, "", false)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: err}
	}
	return names, nil
}

// ReadDirPrefix implements PrefixLister: ReadDir's listing, of the names
// that begin with prefix only, made again only when one of those names
// changed during it (the inotify events name what they are about), and
// bounded by MaxReadDir in the bytes of those names' entries. So a lock
// in a busy shared directory, whose other names come and go every
// millisecond, is listed at once, and a directory of any number of other
// names is no error. (Found by a probe: with ReadDir, a directory of
// 15,000 names where another program made and removed 200 files a second
// ran out of re-listings on most writes, so that a lone process could
// not hold its lease; with 30,000 names it never led.)
func (OSFS) ReadDirPrefix(dir, prefix string) ([]string, error) {
	names, err := readDir(dir, prefix, true)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: err}
	}
	return names, nil
}

// maxRelist is how many times a listing that saw the directory change is
// made again before ReadDir gives up.
const maxRelist = 16

// readDirHook, if set (by tests), runs between two getdents64 calls of a
// listing: where another process's link or unlink may land.
var readDirHook func()

func readDir(dir, prefix string, only bool) ([]string, error) {
	names, calls, err := listOnce(dir, prefix, only)
	if err != nil || calls <= 1 {
		return names, err
	}
	for range maxRelist {
		names, changed, err := listWatched(dir, prefix, only)
		if err != nil {
			return nil, err
		}
		if !changed {
			return names, nil
		}
	}
	return nil, syscall.EAGAIN
}

// listWatch is the inotify instance that watches a directory while it is
// listed again: one for the process, made at the first listing that needs
// it and kept. Instances are few (fs.inotify.max_user_instances, 128 by
// default, for all of a user's processes): when ReadDir made one for each
// listing and closed it, its reads failed with EMFILE whenever other
// processes held them all. (Found by a probe: 128 idle runners of one
// user kept a 129th from ever leading, and a program that held every
// instance for 10 s made a healthy leader step down.) The mutex lets one
// listing at a time use it, since each empties the queue before it lists.
var listWatch struct {
	sync.Mutex
	fd   int
	made bool
}

// listWatched lists dir once under an inotify watch on it, and reports
// whether a name that begins with prefix (with only; any name without)
// changed during the listing. The watch is added first; then the queue is
// emptied: earlier listings' events, of any directory, their watches'
// IN_IGNORED, and this watch's events so far, which the listing does
// not need (the kernel queues an event after making its change, under
// the directory's lock, which getdents64 takes: a change whose event is
// queued before the listing's first call is whole in it). Then dir is
// listed, and the queue read: an event of this watch, or an overflow, is
// a change the listing may have missed. Events of any other watch (one
// that came late, or of a watch whose removal failed) do not count: the
// kernel gives a directory one watch an instance, and numbers an
// instance's watches cyclically, so none has this one's number (and one
// that did would only make the listing be made again). The watch is
// removed after, so that nothing is queued between listings.
func listWatched(dir, prefix string, only bool) (names []string, changed bool, err error) {
	listWatch.Lock()
	defer listWatch.Unlock()
	if !listWatch.made {
		fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
		if err != nil {
			return nil, false, ranOut("inotify instance", err)
		}
		listWatch.fd, listWatch.made = fd, true
	}
	const changes = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
		syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW
	wd, err := syscall.InotifyAddWatch(listWatch.fd, dir, changes)
	if err != nil {
		return nil, false, ranOut("inotify watch", err)
	}
	defer syscall.InotifyRmWatch(listWatch.fd, uint32(wd)) // (EINVAL if the directory went: its watch with it)
	if err := drain(listWatch.fd); err != nil {
		return nil, false, err
	}
	names, _, err = listOnce(dir, prefix, only)
	if err != nil {
		return nil, false, err
	}
	changed, err = changedDuring(listWatch.fd, int32(wd), prefix, only)
	if err != nil {
		return nil, false, err
	}
	return names, changed, nil
}

// ranOut returns the error of an inotify instance or watch (what) that
// could not be had for lack of one (EMFILE, ENFILE, ENOSPC) with the
// limit that ran out named, since EMFILE alone reads as a leak of
// descriptors, and its errno kept, for callers that tell errors apart by
// it; any other error as it is.
func ranOut(what string, err error) error {
	var limit string
	switch err {
	case syscall.EMFILE:
		limit = "fs.inotify.max_user_instances, or the process's descriptors"
	case syscall.ENFILE:
		limit = "the system's open files"
	case syscall.ENOSPC:
		limit = "fs.inotify.max_user_watches"
	default:
		return err
	}
	return &inotifyError{what, err, limit}
}

// inotifyError is ranOut's error.
type inotifyError struct {
	what  string
	err   error
	limit string
}

func (e *inotifyError) Error() string {
	return e.what + " for the listing: " + e.err.Error() + " (" + e.limit + ")"
}

func (e *inotifyError) Unwrap() error { return e.err }

// drain reads and discards the events queued on the inotify descriptor
// ifd, without waiting, until there are none.
func drain(ifd int) error {
	var buf [4096]byte
	for {
		n, err := syscall.Read(ifd, buf[:])
		switch {
		case err == syscall.EAGAIN || err == nil && n <= 0:
			return nil
		case err != nil && err != syscall.EINTR:
			return err
		}
	}
}

// changedDuring reads the events queued on the inotify descriptor ifd,
// without waiting, and reports whether one of watch wd is of a name that
// begins with prefix (with only; of any name without) or says the
// directory itself went, or one says the queue overflowed.
func changedDuring(ifd int, wd int32, prefix string, only bool) (bool, error) {
	var buf [4096]byte
	for {
		n, err := syscall.Read(ifd, buf[:])
		switch {
		case err == syscall.EAGAIN:
			return false, nil // no event, or none of these names
		case err == syscall.EINTR:
			return true, nil // (cannot tell: list again)
		case err != nil:
			return false, err
		case n <= 0:
			return false, nil
		}
		for b := buf[:n]; len(b) >= syscall.SizeofInotifyEvent; {
			mask, nameLen := eventHeader(b)
			name := b[syscall.SizeofInotifyEvent:min(len(b), syscall.SizeofInotifyEvent+int(nameLen))]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if mask&syscall.IN_Q_OVERFLOW != 0 ||
				int32(binary.NativeEndian.Uint32(b[0:4])) == wd &&
					(!only || mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_IGNORED) != 0 || bytes.HasPrefix(name, []byte(prefix))) {
				return true, nil
			}
			b = b[min(len(b), syscall.SizeofInotifyEvent+int(nameLen)):]
		}
	}
}

// listOnce lists dir with getdents64 until it returns nothing more, and
// says how many calls returned names; with only, it keeps the names that
// begin with prefix, and bounds the bytes of their entries alone.
func listOnce(dir, prefix string, only bool) (names []string, calls int, err error) {
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 8<<10)
	total := 0
	for {
		var n int
		err = ignoringEINTR(func() (err error) {
			n, err = syscall.Getdents(fd, buf)
			return err
		})
		if err != nil {
			return nil, calls, err
		}
		if n == 0 {
			slices.Sort(names)
			return names, calls, nil
		}
		calls++
		if !only {
			if total += n; total > MaxReadDir {
				return nil, calls, syscall.EFBIG
			}
			_, _, names = syscall.ParseDirent(buf[:n], -1, names)
		} else {
			k := len(names)
			_, _, names = syscall.ParseDirent(buf[:n], -1, names)
			kept := names[:k]
			for _, name := range names[k:] {
				if strings.HasPrefix(name, prefix) {
					kept = append(kept, name)
					if total += direntSize(name); total > MaxReadDir {
						return nil, calls, syscall.EFBIG
					}
				}
			}
			names = kept
		}
		if readDirHook != nil {
			readDirHook()
		}
	}
}

// direntSize is the bytes a getdents64 record of name takes: its fixed
// part, the name and its NUL, rounded up to 8.
func direntSize(name string) int { return (19 + len(name) + 1 + 7) &^ 7 }
