package lease

import (
	"io/fs"
	"slices"
	"syscall"
)

// ReadDir lists directory dir with getdents64(2), called until it
// returns nothing more. The kernel makes each call under the directory's
// lock, but a call may return fewer names than its buffer holds (ext4
// returns an indexed directory a block of its hash tree at a time), so a
// directory of more than a few dozen names takes several calls, and a
// link or unlink may land between two of them: a name present from the
// first call to the last is listed, one that came or went in between may
// or may not be (POSIX readdir). VersionedFile is built for that (see
// its doc comment). Opened with O_NOFOLLOW and O_DIRECTORY: a symbolic
// link or a file is refused (ELOOP, ENOTDIR); more than MaxReadDir bytes of
// entries is EFBIG.
func (OSFS) ReadDir(dir string) ([]string, error) {
	names, err := readDir(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: err}
	}
	return names, nil
}

func readDir(dir string) ([]string, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, 8<<10)
	var names []string
	total := 0
	for {
		var n int
		err = ignoringEINTR(func() (err error) {
			n, err = syscall.Getdents(fd, buf)
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			slices.Sort(names)
			return names, nil
		}
		if total += n; total > MaxReadDir {
			return nil, syscall.EFBIG
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}
