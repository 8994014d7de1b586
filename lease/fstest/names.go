package fstest

import (
	"path"
	"strings"
	"syscall"

	"github.com/leaselab/leaselab/lease"
)

// The cases below were found by TestDifferential (diff_test.go): names
// that are not clean. The kernel walks a name component by component, so
// a component before the last must be a directory, "." and ".." as the
// last name a directory by its place rather than by a name in its parent,
// and a trailing slash asks for a directory.

// testTrailingSlash checks names that end in a slash.
func testTrailingSlash(e env) {
	file, fresh := e.path("f"), e.path("g")
	e.writeFile(file, "x")
	_, err := e.fsys.Open(file+"/", lease.O_RDONLY, 0)
	e.wantErr("Open of a file with a slash", err, "open", file+"/", syscall.ENOTDIR)
	_, err = e.fsys.Open(file+"/", lease.O_WRONLY|lease.O_CREATE, 0o644)
	e.wantErr("Open(O_CREATE) of a file with a slash", err, "open", file+"/", syscall.EISDIR)
	_, err = e.fsys.Open(fresh+"/", lease.O_WRONLY|lease.O_CREATE, 0o644)
	e.wantErr("Open(O_CREATE) of a new name with a slash", err, "open", fresh+"/", syscall.EISDIR)
	_, err = e.fsys.Open(fresh+"/", lease.O_RDONLY, 0)
	e.wantErr("Open of a missing name with a slash", err, "open", fresh+"/", syscall.ENOENT)
	_, err = e.fsys.ReadFile(file + "/")
	e.wantErr("ReadFile", err, "read", file+"/", syscall.ENOTDIR)
	_, err = e.fsys.Stat(file + "/")
	e.wantErr("Stat", err, "stat", file+"/", syscall.ENOTDIR)
	e.wantErr("Remove", e.fsys.Remove(file+"/"), "remove", file+"/", syscall.ENOTDIR)
	e.wantErr("Rename from a name with a slash", e.fsys.Rename(file+"/", fresh),
		"rename", file+"/ -> "+fresh, syscall.ENOTDIR)
	e.wantErr("Rename to a name with a slash", e.fsys.Rename(file, fresh+"/"),
		"rename", file+" -> "+fresh+"/", syscall.ENOTDIR)
	e.wantErr("Link from a name with a slash", e.fsys.Link(file+"/", fresh),
		"link", file+"/ -> "+fresh, syscall.ENOTDIR)
	e.wantErr("Link to a name with a slash", e.fsys.Link(file, fresh+"/"),
		"link", file+" -> "+fresh+"/", syscall.ENOENT)
	e.want(file, "x")
	if _, err := e.fsys.Stat(fresh); err == nil {
		e.Errorf("Stat(%q) after the failed calls: it exists", fresh)
	}
	// A directory's name may end in slashes.
	fi, err := e.fsys.Stat(e.dir + "//")
	if err != nil || !fi.IsDir() || fi.Name() != path.Base(e.dir) {
		e.Errorf("Stat(%q) = %v, %v; want the directory %q", e.dir+"//", fi, err, path.Base(e.dir))
	}
	e.close(e.open(e.dir+"/", lease.O_RDONLY))
}

// testDots checks "." and ".." in names.
func testDots(e env) {
	file := e.path("f")
	e.writeFile(file, "x")
	for _, name := range []string{file + "/.", file + "/..", file + "/../f"} {
		_, err := e.fsys.Open(name, lease.O_RDONLY, 0)
		e.wantErr("Open through a file", err, "open", name, syscall.ENOTDIR)
		_, err = e.fsys.ReadFile(name)
		e.wantErr("ReadFile through a file", err, "read", name, syscall.ENOTDIR)
		_, err = e.fsys.Stat(name)
		e.wantErr("Stat through a file", err, "stat", name, syscall.ENOTDIR)
	}
	dot := e.dir + "/."
	e.wantErr("Rename of a directory's \".\"", e.fsys.Rename(dot, e.path("g")),
		"rename", dot+" -> "+e.path("g"), syscall.EBUSY)
	e.wantErr("Rename onto a directory's \".\"", e.fsys.Rename(file, dot),
		"rename", file+" -> "+dot, syscall.EBUSY)
	e.wantErr("Link onto a directory's \".\"", e.fsys.Link(file, dot),
		"link", file+" -> "+dot, syscall.EEXIST)
	e.wantErr("Remove of a directory's \".\"", e.fsys.Remove(dot), "remove", dot, syscall.EISDIR)
	if fi, err := e.fsys.Stat(dot); err != nil || !fi.IsDir() || fi.Name() != "." {
		e.Errorf("Stat(%q) = %v, %v; want the directory, named \".\"", dot, fi, err)
	}
	// The first name is walked first: the second's error comes after.
	e.wantErr("Rename through a file to the empty name", e.fsys.Rename(file+"/x", ""),
		"rename", file+"/x -> ", syscall.ENOTDIR)
	e.wantErr("Link through a file to the empty name", e.fsys.Link(file+"/.", ""),
		"link", file+"/. -> ", syscall.ENOTDIR)
	e.want(file, "x")
}

// testLongNames checks Linux's limits on names: a component of at most
// NAME_MAX (255) bytes, a name of less than PATH_MAX (4096).
func testLongNames(e env) {
	e.close(e.open(e.path(strings.Repeat("l", 255)), lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL))
	long := e.path(strings.Repeat("L", 256))
	_, err := e.fsys.Open(long, lease.O_WRONLY|lease.O_CREATE, 0o644)
	e.wantErr("Open of a name over NAME_MAX", err, "open", long, syscall.ENAMETOOLONG)
	_, err = e.fsys.Stat(long + "/f")
	e.wantErr("Stat below a name over NAME_MAX", err, "stat", long+"/f", syscall.ENAMETOOLONG)
	e.wantErr("Link to a name over NAME_MAX", e.fsys.Link(e.path(strings.Repeat("l", 255)), long),
		"link", e.path(strings.Repeat("l", 255))+" -> "+long, syscall.ENAMETOOLONG)
	// A walk that stops earlier says why it stopped.
	_, err = e.fsys.Stat(e.path("missing/") + strings.Repeat("L", 256))
	e.wantErr("Stat below a missing directory", err, "stat", e.path("missing/")+strings.Repeat("L", 256), syscall.ENOENT)
	huge := e.dir + strings.Repeat("/.", 2048)
	_, err = e.fsys.ReadDir(huge)
	e.wantErr("ReadDir of a name of PATH_MAX bytes or more", err, "readdir", huge, syscall.ENAMETOOLONG)
}
