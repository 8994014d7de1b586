package lease

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// OSFS is the [FS] of the real operating system. Each method makes exactly
// the one system call it stands for, so a program behaves the same on the
// kernel as it does under the simulator.
type OSFS struct{}

var _ FS = OSFS{}

// Open calls open(2). O_CLOEXEC is always added because no descriptor of a
// lease file should leak into a child process and keep the file open.
func (OSFS) Open(name string, flag int, perm fs.FileMode) (FD, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		// Only permission bits: fs.FileMode puts setuid and friends in
		// bits that mean something else to the kernel.
		fd, err = syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return FD(fd), nil
}

// Fchmod calls fchmod(2) (ModeSetter).
func (OSFS) Fchmod(fd FD, perm fs.FileMode) error {
	if err := ignoringEINTR(func() error { return syscall.Fchmod(int(fd), uint32(perm.Perm())) }); err != nil {
		return &fs.PathError{Op: "fchmod", Path: fdPath(fd), Err: err}
	}
	return nil
}

// Write calls write(2) once. A short write is reported as io.ErrShortWrite
// rather than retried, because the retry would be a second system call the
// caller did not ask for.
func (OSFS) Write(fd FD, b []byte) (int, error) {
	var n int
	err := ignoringEINTR(func() (err error) {
		n, err = syscall.Write(int(fd), b)
		return err
	})
	if err != nil {
		return 0, &fs.PathError{Op: "write", Path: fdPath(fd), Err: err}
	}
	if n < len(b) {
		return n, &fs.PathError{Op: "write", Path: fdPath(fd), Err: io.ErrShortWrite}
	}
	return n, nil
}

// Fsync calls fsync(2).
func (OSFS) Fsync(fd FD) error {
	if err := ignoringEINTR(func() error { return syscall.Fsync(int(fd)) }); err != nil {
		return &fs.PathError{Op: "fsync", Path: fdPath(fd), Err: err}
	}
	return nil
}

// Close calls close(2). Unlike the other calls it is not retried on EINTR:
// Linux releases the descriptor even then, and a retry could close a
// descriptor another goroutine has just been given.
func (OSFS) Close(fd FD) error {
	if err := syscall.Close(int(fd)); err != nil {
		return &fs.PathError{Op: "close", Path: fdPath(fd), Err: err}
	}
	return nil
}

// ReadFile reads a regular file of at most MaxReadFile bytes, with every
// error reported under Op "read" so that a failed open and a failed read
// look the same, as they do in the simulator, where reading a file is a
// single step. It opens with O_NOFOLLOW (a symbolic link is ELOOP: whoever
// placed it chose what we would read) and O_NONBLOCK (a FIFO would block
// the open until someone wrote to it), then checks with fstat that the file
// is regular before reading.
func (OSFS) ReadFile(name string) ([]byte, error) {
	b, err := readFile(name)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

func readFile(name string) ([]byte, error) {
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := ignoringEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&syscall.S_IFMT == syscall.S_IFDIR:
		return nil, syscall.EISDIR
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, syscall.EINVAL
	case st.Size > MaxReadFile:
		return nil, syscall.EFBIG
	}
	b := make([]byte, 0, st.Size+1)
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = syscall.Read(fd, b[len(b):cap(b)])
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if len(b) > MaxReadFile {
			return nil, syscall.EFBIG // it grew while we read
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// Stat is os.Lstat, a single lstat(2): a symbolic link is described, not
// followed.
func (OSFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, normalise("stat", name, err)
	}
	return fi, nil
}

// Remove calls unlink(2) and never rmdir(2), unlike os.Remove: a lease
// algorithm that removes a directory by mistake should see EISDIR, not
// succeed.
func (OSFS) Remove(name string) error {
	if err := ignoringEINTR(func() error { return syscall.Unlink(name) }); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// Rename calls rename(2). Its errors are *fs.PathError, not *os.LinkError,
// so that every error of an FS has the same type; Path is "old -> new".
func (OSFS) Rename(oldname, newname string) error {
	if err := ignoringEINTR(func() error { return syscall.Rename(oldname, newname) }); err != nil {
		return &fs.PathError{Op: "rename", Path: oldname + " -> " + newname, Err: err}
	}
	return nil
}

// Link calls link(2); errors are reported as for [OSFS.Rename].
func (OSFS) Link(oldname, newname string) error {
	if err := ignoringEINTR(func() error { return syscall.Link(oldname, newname) }); err != nil {
		return &fs.PathError{Op: "link", Path: oldname + " -> " + newname, Err: err}
	}
	return nil
}

// Flock calls flock(2), retrying it when a signal interrupts the wait.
func (OSFS) Flock(fd FD, how int) error {
	if err := ignoringEINTR(func() error { return unix.Flock(int(fd), how) }); err != nil {
		return &fs.PathError{Op: "flock", Path: fdPath(fd), Err: err}
	}
	return nil
}

// fdPath names a descriptor in errors. The simulator names descriptors the
// same way, so that error strings of the two can be compared.
func fdPath(fd FD) string { return "fd " + strconv.Itoa(int(fd)) }

// normalise rewrites an error from package os to the Op and Path this FS
// promises, keeping the underlying errno.
func normalise(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// ignoringEINTR retries a system call interrupted by a signal before it did
// anything; the Go runtime's own signals make this common.
func ignoringEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}
