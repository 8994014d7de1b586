package lease

import (
	"io/fs"
	"slices"
	"syscall"
)

// ReadDir lists directory dir with one getdents64(2) call, which the
// kernel makes under the directory's lock: no link, unlink or rename in
// the directory lands half way through it. The call's buffer starts at
// 8 KiB; a call that may have left names out (less room left than the
// largest record) is made again, from a new open, with a buffer eight
// times larger, up to MaxReadDir (then EFBIG). Opened with O_NOFOLLOW and
// O_DIRECTORY: a symbolic link or a file is refused (ELOOP, ENOTDIR).
func (OSFS) ReadDir(dir string) ([]string, error) {
	names, err := readDir(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: err}
	}
	return names, nil
}

// maxDirent is the largest getdents64 record: 19 bytes of header, a
// name of up to 255 bytes and its NUL, padded to 8 bytes.
const maxDirent = 280

func readDir(dir string) ([]string, error) {
	for size := 8 << 10; ; size *= 8 {
		size = min(size, MaxReadDir)
		var fd int
		err := ignoringEINTR(func() (err error) {
			fd, err = syscall.Open(dir, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
			return err
		})
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		var n int
		err = ignoringEINTR(func() (err error) {
			n, err = syscall.Getdents(fd, buf)
			return err
		})
		syscall.Close(fd)
		if err != nil {
			return nil, err
		}
		if n <= size-maxDirent {
			// The next record, if there were one, would have fitted: this
			// one call read the whole directory.
			_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
			slices.Sort(names)
			return names, nil
		}
		if size == MaxReadDir {
			return nil, syscall.EFBIG
		}
	}
}
