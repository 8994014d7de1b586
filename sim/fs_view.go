package sim

import (
	"io/fs"

	"github.com/leaselab/leaselab/lease"
)

// View returns the file system as seen by the process owning t. Its methods
// act at once, with no scheduling point, for tests and for setting up a
// world.
func (f *FileSystem) View(t *FDTable) lease.FlockFS {
	return view{f, t}
}

type view struct {
	f *FileSystem
	t *FDTable
}

func (v view) Open(name string, flag int, perm fs.FileMode) (lease.FD, error) {
	return v.f.Open(v.t, name, flag, perm)
}
func (v view) Write(fd lease.FD, b []byte) (int, error) { return v.f.Write(v.t, fd, b) }
func (v view) Fsync(fd lease.FD) error                  { return v.f.Fsync(v.t, fd) }
func (v view) Close(fd lease.FD) error                  { return v.f.Close(v.t, fd) }
func (v view) ReadFile(name string) ([]byte, error)     { return v.f.ReadFile(name) }
func (v view) Stat(name string) (fs.FileInfo, error)    { return v.f.Stat(name) }
func (v view) Remove(name string) error                 { return v.f.Remove(name) }
func (v view) Rename(oldname, newname string) error     { return v.f.Rename(oldname, newname) }
func (v view) Link(oldname, newname string) error       { return v.f.Link(oldname, newname) }
func (v view) Flock(fd lease.FD, how int) error         { return v.f.Flock(v.t, fd, how) }
func (v view) ReadDir(dir string) ([]string, error)     { return v.f.ReadDir(dir) }
