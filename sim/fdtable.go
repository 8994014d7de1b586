package sim

import (
	"github.com/leaselab/leaselab/lease"
)

// FDTable is the descriptor table of one simulated process.
type FDTable struct {
	fds []description // indexed by descriptor
	fs  *FileSystem   // told of the flock locks its descriptors release
}

// NewFDTable returns an empty descriptor table for a new process.
func (f *FileSystem) NewFDTable() *FDTable {
	return &FDTable{fds: make([]description, firstFD, 8), fs: f}
}

// CloseAll drops every descriptor, as the kernel does when a process dies:
// the flock locks they hold are released at once. Files are left exactly
// as they are: a crash flushes nothing and undoes nothing.
func (t *FDTable) CloseAll() {
	for i := range t.fds {
		if t.fds[i].locked {
			t.unlock(lease.FD(i))
		}
	}
	clear(t.fds)
}

// unlock releases the flock lock that descriptor fd holds.
func (t *FDTable) unlock(fd lease.FD) {
	d := &t.fds[fd]
	ino := d.ino
	d.locked = false
	ino.locked = false
	if t.fs != nil && t.fs.unlocked != nil {
		t.fs.unlocked(ino)
	}
}

func (t *FDTable) alloc(d description) lease.FD {
	if len(t.fds) < firstFD { // a zero FDTable
		t.fds = append(t.fds, make([]description, firstFD-len(t.fds))...)
	}
	// The kernel hands out the lowest free descriptor; programs (and the
	// expected output of tests) can depend on it.
	for i := firstFD; i < len(t.fds); i++ {
		if t.fds[i].ino == nil {
			t.fds[i] = d
			return lease.FD(i)
		}
	}
	t.fds = append(t.fds, d)
	return lease.FD(len(t.fds) - 1)
}

func (t *FDTable) get(fd lease.FD) *description {
	if fd < 0 || int(fd) >= len(t.fds) || t.fds[fd].ino == nil {
		return nil
	}
	return &t.fds[fd]
}
