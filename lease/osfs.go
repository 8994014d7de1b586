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

// ReadFile is os.ReadFile, with every error reported under Op "read" so that
// a failed open and a failed read look the same, as they do in the
// simulator, where reading a file is a single step.
func (OSFS) ReadFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, normalise("read", name, err)
	}
	return b, nil
}

// Stat is os.Stat, which is a single stat(2) on Linux.
func (OSFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := os.Stat(name)
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
