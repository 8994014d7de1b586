package lease

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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
	// O_NOFOLLOW makes open fail (ELOOP) if the last component of the name
	// is a symbolic link. The simulator has no symbolic links, so there it
	// changes nothing.
	O_NOFOLLOW = syscall.O_NOFOLLOW
)

// Operations of [FlockFS.Flock], with the values of flock(2) (package unix).
// LOCK_SH exists for completeness: the simulator does not model shared
// locks and rejects it with EINVAL.
const (
	LOCK_SH = unix.LOCK_SH // a shared lock
	LOCK_EX = unix.LOCK_EX // an exclusive lock
	LOCK_NB = unix.LOCK_NB // with LOCK_EX or LOCK_SH: fail with EWOULDBLOCK instead of waiting
	LOCK_UN = unix.LOCK_UN // release the lock held through this descriptor, if any
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
	// O_TRUNC, which this FS models as its own step). A lease file is
	// small and lives in a directory others may write, so ReadFile reads
	// at most MaxReadFile bytes (a larger file is EFBIG), never follows a
	// symbolic link (ELOOP), never blocks on a FIFO, and reads only
	// regular files (a directory is EISDIR, anything else EINVAL).
	ReadFile(name string) ([]byte, error)
	// Stat is lstat(2): it describes a symbolic link, never its target.
	Stat(name string) (fs.FileInfo, error)
	// Remove is unlink(2): it removes the name, never a directory. Open
	// descriptors of the file stay valid.
	Remove(name string) error
	// Rename is rename(2): it atomically replaces newname if it exists.
	Rename(oldname, newname string) error
	// Link is link(2): it fails with EEXIST if newname exists.
	Link(oldname, newname string) error
	// ReadDir lists the names in directory dir (not "." or ".."), sorted,
	// as they were at one instant during the call: VersionedFile depends
	// on it. POSIX readdir promises less (a name linked or unlinked during
	// a listing of several getdents64 calls may or may not be listed):
	// OSFS on Linux makes a listing of several calls again under an
	// inotify watch until one saw no change (readdir_linux.go); elsewhere
	// keep the lock in a directory of its own, which one call lists. The
	// simulator's is one atomic step. It follows no symbolic link in the
	// last component; more than MaxReadDir bytes of entries is EFBIG.
	ReadDir(dir string) ([]string, error)
}

// PrefixLister is an optional ability of an FS: [FS.ReadDir] of only the
// names that begin with prefix, as of one instant for those names; a
// change to another name during the listing does not spoil it, and only
// those names' entries count against MaxReadDir. [VersionedFile] lists
// its directory with it when it can, so that a lock in a busy shared
// directory (/var/lock) keeps a leader. OSFS has it.
type PrefixLister interface {
	ReadDirPrefix(dir, prefix string) ([]string, error)
}

// ModeSetter is an optional ability of an FS: fchmod(2). A file a
// [VersionedFile] makes (a version, a boot record) must be readable by
// every process that shares the lease, whatever user it runs as and
// whatever its umask: a version another participant cannot read is one
// it waits on until it can (how long a lease it states only its content
// says), so a service with a umask of 077 beside one of another user
// stopped all leadership (a probe, 2026-12-07). So each new file is given
// the mode it was asked for, 0644, past the umask. OSFS has it; the
// simulator, which has no umask, does not need it.
type ModeSetter interface {
	Fchmod(fd FD, perm fs.FileMode) error
}

// MaxReadDir bounds the entries [FS.ReadDir] reads, in bytes of
// getdents64 records (about 24 bytes plus the name each): some 20,000
// names of up to 24 bytes. A lock directory holds a few of them;
// whoever fills it beyond that can write it, and so can take the lease
// anyway.
const MaxReadDir = 1 << 20

// FlockFS is an FS that can also lock files with flock(2), an optional
// ability as io/fs's ReadFileFS is: only the flock algorithms need it
// (FlockElection, FlockRegister). The real file system ([OSFS]) and the
// simulator's have it.
type FlockFS interface {
	FS
	// Flock is flock(2). LOCK_EX waits until no other open file
	// description holds the file's lock; LOCK_EX|LOCK_NB fails with
	// EWOULDBLOCK (EAGAIN) instead; LOCK_UN releases. The lock belongs to
	// the open file description, that is to fd (an FS has no dup or fork):
	// closing fd or the death of its process releases it, closing another
	// descriptor of the same file does not (unlike fcntl locks), and it is
	// a lock on the inode, not the name, so a file removed or replaced at
	// the same name is a different lock.
	Flock(fd FD, how int) error
}

// MaxReadFile bounds what [FS.ReadFile] reads: a lease record is tens of
// bytes, so anything larger is not one, and nobody who can write the lease
// directory can make a reader read megabytes.
const MaxReadFile = 64 << 10

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
