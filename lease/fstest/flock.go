package fstest

import (
	"strconv"
	"syscall"

	"github.com/leaselab/leaselab/lease"
)

func (e env) flock(fd lease.FD, how int) {
	e.Helper()
	if err := e.fl.Flock(fd, how); err != nil {
		e.Fatalf("Flock(%d, %#x): %v", fd, how, err)
	}
}

// wantLocked checks that the lock is held through a descriptor other than
// fd: LOCK_EX|LOCK_NB through fd fails with EWOULDBLOCK.
func (e env) wantLocked(fd lease.FD) {
	e.Helper()
	err := e.fl.Flock(fd, lease.LOCK_EX|lease.LOCK_NB)
	e.wantErr("Flock(LOCK_EX|LOCK_NB) of a held lock", err, "flock", "fd "+strconv.Itoa(int(fd)), syscall.EWOULDBLOCK)
}

// testFlockExclusive checks that flock locks belong to open file
// descriptions: two descriptors of one file, even in one process, exclude
// each other, and locking again through the holder succeeds.
func testFlockExclusive(e env) {
	name := e.path("lock")
	a := e.open(name, lease.O_RDWR|lease.O_CREATE)
	b := e.open(name, lease.O_RDWR|lease.O_CREATE)
	e.flock(a, lease.LOCK_EX) // free: a blocking LOCK_EX does not wait
	e.wantLocked(b)
	e.flock(a, lease.LOCK_EX|lease.LOCK_NB) // already a's
	e.flock(a, lease.LOCK_EX)
	e.wantLocked(b)
	// A read-only descriptor can take the lock too: whoever can open the
	// file can hold everyone else off.
	e.flock(a, lease.LOCK_UN)
	ro := e.open(name, lease.O_RDONLY)
	e.flock(ro, lease.LOCK_EX|lease.LOCK_NB)
	e.wantLocked(a)
	e.close(ro)
	e.close(a)
	e.close(b)
}

func testFlockUnlock(e env) {
	name := e.path("lock")
	a := e.open(name, lease.O_RDWR|lease.O_CREATE)
	b := e.open(name, lease.O_RDWR)
	e.flock(a, lease.LOCK_UN) // not held: nothing to do, no error
	e.flock(a, lease.LOCK_EX)
	e.flock(a, lease.LOCK_UN)
	e.flock(b, lease.LOCK_EX|lease.LOCK_NB)
	e.wantLocked(a)
	e.flock(b, lease.LOCK_UN|lease.LOCK_NB)
	e.flock(a, lease.LOCK_EX|lease.LOCK_NB)
	e.close(a)
	e.close(b)
}

// testFlockCloseReleases checks that closing the locking descriptor
// releases the lock, as the death of its process does.
func testFlockCloseReleases(e env) {
	name := e.path("lock")
	a := e.open(name, lease.O_RDWR|lease.O_CREATE)
	b := e.open(name, lease.O_RDWR)
	e.flock(a, lease.LOCK_EX)
	e.close(a)
	e.flock(b, lease.LOCK_EX|lease.LOCK_NB)
	e.close(b)
}

// testFlockCloseOtherKeeps checks what makes flock usable where fcntl locks
// are not: closing another descriptor of the locked file (a store writing
// the record through its own descriptor) leaves the lock held.
func testFlockCloseOtherKeeps(e env) {
	name := e.path("lock")
	a := e.open(name, lease.O_RDWR|lease.O_CREATE)
	b := e.open(name, lease.O_RDWR)
	e.flock(a, lease.LOCK_EX)
	w := e.open(name, lease.O_WRONLY)
	e.write(w, "record")
	e.close(w)
	e.wantLocked(b)
	e.want(name, "record")
	e.close(a)
	e.close(b)
}

// testFlockInode checks that the lock is the inode's, not the name's: once
// the locked file is removed or replaced, a newcomer opening the name locks
// another file, and two processes hold "the" lock.
func testFlockInode(e env) {
	name := e.path("lock")
	a := e.open(name, lease.O_RDWR|lease.O_CREATE)
	e.flock(a, lease.LOCK_EX)
	if err := e.fsys.Remove(name); err != nil {
		e.Fatalf("Remove: %v", err)
	}
	b := e.open(name, lease.O_RDWR|lease.O_CREATE)
	e.flock(b, lease.LOCK_EX|lease.LOCK_NB)

	tmp := e.path("tmp")
	e.writeFile(tmp, "")
	if err := e.fsys.Rename(tmp, name); err != nil {
		e.Fatalf("Rename: %v", err)
	}
	c := e.open(name, lease.O_RDWR)
	e.flock(c, lease.LOCK_EX|lease.LOCK_NB)
	e.close(a)
	e.close(b)
	e.close(c)
}

func testFlockErrors(e env) {
	name := e.path("lock")
	fd := e.open(name, lease.O_RDWR|lease.O_CREATE)
	e.close(fd)
	p := "fd " + strconv.Itoa(int(fd))
	e.wantErr("Flock of a closed descriptor", e.fl.Flock(fd, lease.LOCK_EX|lease.LOCK_NB), "flock", p, syscall.EBADF)
	e.wantErr("Flock(LOCK_UN) of a closed descriptor", e.fl.Flock(fd, lease.LOCK_UN), "flock", p, syscall.EBADF)
	// The operation is checked before the descriptor (found by
	// TestDifferential).
	e.wantErr("Flock of a closed descriptor with no operation", e.fl.Flock(fd, lease.LOCK_NB), "flock", p, syscall.EINVAL)
	fd = e.open(name, lease.O_RDWR)
	e.wantErr("Flock with no operation", e.fl.Flock(fd, lease.LOCK_NB), "flock", "fd "+strconv.Itoa(int(fd)), syscall.EINVAL)
	e.close(fd)
}

// testFlockNoAccess checks a descriptor of access mode 3 (O_WRONLY|O_RDWR:
// neither reading nor writing, as Linux has it): flock refuses to lock
// through it, unlocking succeeds (found by TestDifferential).
func testFlockNoAccess(e env) {
	name := e.path("lock")
	e.writeFile(name, "")
	fd := e.open(name, lease.O_WRONLY|lease.O_RDWR)
	p := "fd " + strconv.Itoa(int(fd))
	_, err := e.fsys.Write(fd, []byte("x"))
	e.wantErr("Write through access mode 3", err, "write", p, syscall.EBADF)
	e.wantErr("Flock(LOCK_EX|LOCK_NB) through access mode 3", e.fl.Flock(fd, lease.LOCK_EX|lease.LOCK_NB), "flock", p, syscall.EBADF)
	e.wantErr("Flock(LOCK_EX) through access mode 3", e.fl.Flock(fd, lease.LOCK_EX), "flock", p, syscall.EBADF)
	e.flock(fd, lease.LOCK_UN)
	e.close(fd)
}
