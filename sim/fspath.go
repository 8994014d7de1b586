package sim

import (
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// lookup finds the clean path and inode of an existing name, or returns the
// error the kernel's path walk would.
func (f *FileSystem) lookup(op, name string) (string, *inode, error) {
	p, ok := f.clean(name)
	if !ok {
		return "", nil, pathErr(op, name, syscall.ENOENT)
	}
	if ino := f.names.get(p); ino != nil {
		return p, ino, nil
	}
	errno := f.parentErr(p)
	if errno == 0 {
		errno = syscall.ENOENT
	}
	return "", nil, pathErr(op, name, errno)
}

// parentErr reports whether the directory holding the clean path p exists:
// 0 if it does, otherwise ENOENT or ENOTDIR for the first component, from the
// root, that is missing or not a directory, as the kernel reports.
func (f *FileSystem) parentErr(p string) syscall.Errno {
	dir := p[:max(strings.LastIndexByte(p, '/'), 1)]
	if ino := f.names.get(dir); ino != nil && ino.mode.IsDir() {
		return 0
	}
	for i := 1; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		switch ino := f.names.get(dir[:i]); {
		case ino == nil:
			return syscall.ENOENT
		case !ino.mode.IsDir():
			return syscall.ENOTDIR
		}
	}
	return 0
}

func (f *FileSystem) hasChildren(dir string) bool {
	for name := range f.names.m {
		if isUnder(name, dir) {
			return true
		}
	}
	return false
}

// moveChildren renames everything below the directory from to below to. The
// map's order does not matter: no two children map to the same new name,
// and Rename has checked that to is not below from.
func (f *FileSystem) moveChildren(from, to string) {
	var children []string
	for name := range f.names.m {
		if isUnder(name, from) {
			children = append(children, name)
		}
	}
	for _, name := range children {
		f.names.set(to+name[len(from):], f.names.get(name))
		f.names.del(name)
	}
}

// isUnder reports whether the clean path p is strictly below the directory
// dir.
func isUnder(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

// clean returns the absolute clean form of name, and false for the empty
// name, which the kernel rejects with ENOENT. Names are nearly always clean
// already, so it checks before paying for path.Join.
func (f *FileSystem) clean(name string) (string, bool) {
	if name == f.cleaned && name != "" {
		return name, true
	}
	if name == "" {
		return "", false
	}
	if isClean(name) {
		f.cleaned = name
		return name, true
	}
	return path.Join("/", name), true
}

func (f *FileSystem) cleanPair(a, b string) (string, string, bool) {
	a, aok := f.clean(a)
	b, bok := f.clean(b)
	return a, b, aok && bok
}

// isClean reports whether p is absolute and has no empty, "." or ".."
// component, that is whether path.Clean would leave it alone. Such a
// component starts after a slash that another slash, a dot or the end
// follows, so a path with neither "//" nor "/." nor a final slash is clean
// (two vectorised searches: this runs at every call that names a path);
// one with a "/." goes through the components.
func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	if p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return false
	}
	if !strings.Contains(p, "/.") {
		return true
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// The error constructors format the Path as lease.OSFS does, so that error
// strings from the simulator and from the kernel can be compared.

func pathErr(op, name string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: name, Err: errno}
}

func fdErr(op string, fd lease.FD, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: "fd " + strconv.Itoa(int(fd)), Err: errno}
}

func linkErr(op, oldname, newname string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: oldname + " -> " + newname, Err: errno}
}

// fileInfo is what Stat returns; the model has no times and no Sys data.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string { return i.name }

func (i fileInfo) Size() int64 { return i.size }

func (i fileInfo) Mode() fs.FileMode { return i.mode }

func (i fileInfo) ModTime() time.Time { return time.Time{} }

func (i fileInfo) IsDir() bool { return i.mode.IsDir() }

func (i fileInfo) Sys() any { return nil }
