package lease

import (
	"io/fs"
	"os"
)

// FD is a file descriptor returned by [FS.Open]. It is only meaningful to the
// FS that returned it.
type FD int

// Open flags, the subset of open(2) flags the algorithms use. They have the
// values of package os so that an OS-backed FS can pass them through.
const (
	O_RDONLY = os.O_RDONLY
	O_WRONLY = os.O_WRONLY
	O_RDWR   = os.O_RDWR
	O_CREATE = os.O_CREATE
	O_EXCL   = os.O_EXCL
	O_TRUNC  = os.O_TRUNC
)

// FS is a file system whose every method is exactly one POSIX system call, so
// that a simulator can put a scheduling point, a crash or an injected error
// between any two of them. Compositions such as os.WriteFile are deliberately
// absent: callers spell out open, write and close (see [WriteFile]).
//
// Errors are *fs.PathError values wrapping a syscall.Errno, so errors.Is(err,
// fs.ErrExist), errors.Is(err, fs.ErrNotExist) and errors.Is(err,
// syscall.ENOSPC) work as they do with package os.
type FS interface {
	// Open is open(2) with O_CLOEXEC.
	Open(name string, flag int, perm fs.FileMode) (FD, error)
	// Write is write(2) at the descriptor's offset; a short write is an
	// error. Like io.Writer, it must not retain b.
	Write(fd FD, b []byte) (int, error)
	// Fsync is fsync(2).
	Fsync(fd FD) error
	// Close is close(2).
	Close(fd FD) error
	// ReadFile reads the whole content of the named file as one atomic step
	// (open, read to EOF, close on a real kernel; nobody writes a small lease
	// file concurrently with a reader in a way that tears it except through
	// O_TRUNC, which this FS models as its own step).
	ReadFile(name string) ([]byte, error)
	// Stat is stat(2).
	Stat(name string) (fs.FileInfo, error)
	// Remove is unlink(2): it removes the name, never a directory. Open
	// descriptors of the file stay valid.
	Remove(name string) error
	// Rename is rename(2): it atomically replaces newname if it exists.
	Rename(oldname, newname string) error
	// Link is link(2): it fails with EEXIST if newname exists.
	Link(oldname, newname string) error
}

// WriteFile does what os.WriteFile does, as the three system calls it makes:
// open(O_WRONLY|O_CREATE|O_TRUNC), write, close. The file is empty between the
// first and second step; a crash there leaves it empty. That window is the
// post's empty-file bug when the caller is the seed program's renewal.
func WriteFile(fsys FS, name string, data []byte, perm fs.FileMode) error {
	fd, err := fsys.Open(name, O_WRONLY|O_CREATE|O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = fsys.Write(fd, data)
	// os.WriteFile closes even when the write fails and reports the first error.
	if err1 := fsys.Close(fd); err1 != nil && err == nil {
		err = err1
	}
	return err
}
