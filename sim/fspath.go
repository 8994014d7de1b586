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
// error the kernel's path walk would. A name with a trailing slash must
// be a directory (ENOTDIR).
func (f *FileSystem) lookup(op, name string) (string, *inode, error) {
	p, k, errno := f.clean(name)
	if errno != 0 {
		return "", nil, pathErr(op, name, errno)
	}
	if k == lastLong {
		return "", nil, pathErr(op, name, syscall.ENAMETOOLONG)
	}
	if ino := f.names.get(p); ino != nil {
		if k == lastSlash && !ino.mode.IsDir() {
			return "", nil, pathErr(op, name, syscall.ENOTDIR)
		}
		return p, ino, nil
	}
	errno = f.parentErr(p)
	if errno == 0 {
		errno = syscall.ENOENT
	}
	return "", nil, pathErr(op, name, errno)
}

// openSlash is the part of open(2) a trailing slash adds, once the walk
// to the name succeeded: O_CREAT is EISDIR whatever the name is, and
// otherwise the name must exist (ENOENT) and be a directory (ENOTDIR).
func (f *FileSystem) openSlash(p string, ino *inode, flag int) syscall.Errno {
	switch errno := f.parentErr(p); {
	case errno != 0:
		return errno
	case flag&lease.O_CREATE != 0:
		return syscall.EISDIR
	case ino == nil:
		return syscall.ENOENT
	case !ino.mode.IsDir():
		return syscall.ENOTDIR
	}
	return 0
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

// lastKind is what a name's last component is, where Linux's calls answer
// differently by it: a name (LAST_NORM), "." or ".." or the root
// (LAST_DOT, LAST_DOTDOT, LAST_ROOT: a directory named by its place, which
// rename refuses with EBUSY and link with EEXIST), or a name followed by
// a slash, which must be a directory (open with O_CREAT is EISDIR, a
// lookup of a file ENOTDIR), or a name too long to look up.
type lastKind uint8

const (
	lastName lastKind = iota
	lastDots
	lastSlash
	lastLong // a name over NAME_MAX: its lookup is ENAMETOOLONG
)

// clean returns the absolute clean path that name refers to and the kind
// of its last component, or the error of the walk to it: ENOENT for the
// empty name, which the kernel rejects, and for a name not clean whose
// walk found a component missing, ENOTDIR for one that found a file,
// ENAMETOOLONG for a name over PATH_MAX or a component before the last
// over NAME_MAX (a last one over it is the call's lookup's error: lastLong).
// (A clean name's walk is checked later, and only when it matters: by
// parentErr when the name is not found.) Names are nearly always clean
// already, so it checks before walking the name (walk).
func (f *FileSystem) clean(name string) (string, lastKind, syscall.Errno) {
	if name == f.cleaned && name != "" {
		return name, lastName, 0
	}
	if name == "" {
		return "", lastName, syscall.ENOENT
	}
	if len(name) >= pathMax {
		return "", lastName, syscall.ENAMETOOLONG
	}
	if isClean(name) && (len(name) <= nameMax || !hasLongName(name)) {
		if name == "/" {
			return name, lastDots, 0
		}
		f.cleaned = name
		return name, lastName, 0
	}
	return f.walk(name)
}

// Linux's limits on names: a component of at most nameMax bytes (ext4's
// and tmpfs's NAME_MAX), a name shorter than pathMax (PATH_MAX, which
// counts the final NUL). A longer name is ENAMETOOLONG.
const (
	nameMax = 255
	pathMax = 4096
)

// hasLongName reports whether a component of name is longer than nameMax.
func hasLongName(name string) bool {
	for c := range strings.SplitSeq(name, "/") {
		if len(c) > nameMax {
			return true
		}
	}
	return false
}

// walk resolves a name that is not clean as the kernel's path walk does,
// component by component from "/" (relative names too): "." stays, ".."
// goes up, and a component other than the last must be a directory, so
// "f/.." and "f/." are no names of f's directory when f is a file: the
// walk stops there (ENOTDIR), as at a missing component (ENOENT).
func (f *FileSystem) walk(name string) (string, lastKind, syscall.Errno) {
	var comps []string
	for c := range strings.SplitSeq(name, "/") {
		if c != "" {
			comps = append(comps, c)
		}
	}
	if len(comps) == 0 {
		return "/", lastDots, 0
	}
	cur := "/"
	for _, c := range comps[:len(comps)-1] {
		switch c {
		case ".":
		case "..":
			cur = parentOf(cur)
		default:
			next := path.Join(cur, c)
			switch ino := f.names.get(next); {
			case len(c) > nameMax:
				return "", lastName, syscall.ENAMETOOLONG
			case ino == nil:
				return "", lastName, syscall.ENOENT
			case !ino.mode.IsDir():
				return "", lastName, syscall.ENOTDIR
			}
			cur = next
		}
	}
	switch c := comps[len(comps)-1]; c {
	case ".":
		return cur, lastDots, 0
	case "..":
		return parentOf(cur), lastDots, 0
	default:
		k := lastName
		switch {
		case len(c) > nameMax:
			k = lastLong
		case strings.HasSuffix(name, "/"):
			k = lastSlash
		}
		return path.Join(cur, c), k, 0
	}
}

// walkErr is the error of the walk to name, as clean found it (errno) or,
// for a clean name, as parentErr finds it for its clean path p: what the
// kernel reports before anything else of a call that names it.
func (f *FileSystem) walkErr(p string, errno syscall.Errno) syscall.Errno {
	if errno == 0 {
		errno = f.parentErr(p)
	}
	return errno
}

// baseName is the last element of name as package os names a FileInfo
// (trailing slashes dropped; "." and ".." kept as given).
func baseName(name string) string {
	name = strings.TrimRight(name, "/")
	if name == "" {
		return "/"
	}
	return name[strings.LastIndexByte(name, '/')+1:]
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
