package lease

import (
	"io/fs"
	"slices"
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
// file system, as flock and the boot id require anyway), and a user out
// of inotify instances or watches (fs.inotify.max_user_instances, 128 by
// default, shared with every tool that watches files) gets EMFILE or
// ENOSPC from a crowded directory's listing: an I/O error, never a torn
// listing. A directory one call lists needs neither. Opened with O_NOFOLLOW and
// O_DIRECTORY: a symbolic link or a file is refused (ELOOP, ENOTDIR); more
// than MaxReadDir bytes of entries is EFBIG.
func (OSFS) ReadDir(dir string) ([]string, error) {
	names, err := readDir(dir)
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

func readDir(dir string) ([]string, error) {
	names, calls, err := listOnce(dir)
	if err != nil || calls <= 1 {
		return names, err
	}
	for range maxRelist {
		ifd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
		if err != nil {
			return nil, err
		}
		const changes = syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
			syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW
		if _, err := syscall.InotifyAddWatch(ifd, dir, changes); err != nil {
			syscall.Close(ifd)
			return nil, err
		}
		names, _, err = listOnce(dir)
		changed := false
		if err == nil {
			var buf [4096]byte
			n, rerr := syscall.Read(ifd, buf[:])
			switch {
			case n > 0:
				changed = true // an event (an overflow is one too)
			case rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EINTR:
				err = rerr
			case rerr == syscall.EINTR:
				changed = true // (cannot tell: list again)
			}
		}
		syscall.Close(ifd)
		if err != nil {
			return nil, err
		}
		if !changed {
			return names, nil
		}
	}
	return nil, syscall.EAGAIN
}

// listOnce lists dir with getdents64 until it returns nothing more, and
// says how many calls returned names.
func listOnce(dir string) (names []string, calls int, err error) {
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
		if total += n; total > MaxReadDir {
			return nil, calls, syscall.EFBIG
		}
		calls++
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
		if readDirHook != nil {
			readDirHook()
		}
	}
}
