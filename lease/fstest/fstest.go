package fstest

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/leaselab/leaselab/lease"
)

// TestFS runs the conformance suite against the file systems made by mk,
// one subtest each. mk returns a fresh FS and an existing, empty directory
// in it, named so that dir+"/name" names a file in it.
//
// Errors are compared with errors.Is against errnos and never by their
// text. Their type, Op and Path are checked as well, so that a log line
// reads the same whichever FS produced it.
func TestFS(t *testing.T, mk func(t *testing.T) (fsys lease.FS, dir string)) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir := mk(t)
			e := env{T: t, fsys: fsys, dir: dir}
			if strings.HasPrefix(tc.name, "Flock") {
				fl, ok := fsys.(lease.FlockFS)
				if !ok {
					t.Skip("not a lease.FlockFS: no flock(2)")
				}
				e.fl = fl
			}
			tc.f(e)
		})
	}
}

var tests = []struct {
	name string
	f    func(env)
}{
	{"CreateExcl", testCreateExcl},
	{"TruncAtOpen", testTruncAtOpen},
	{"TruncReadOnly", testTruncReadOnly},
	{"WriteAndRead", testWriteAndRead},
	{"WriteInPlace", testWriteInPlace},
	{"WriteAfterTruncation", testWriteAfterTruncation},
	{"Append", testAppend},
	{"Missing", testMissing},
	{"NotDirectory", testNotDirectory},
	{"RemoveOpen", testRemoveOpen},
	{"Rename", testRename},
	{"RenameSameFile", testRenameSameFile},
	{"RenameDirectory", testRenameDirectory},
	{"Link", testLink},
	{"BadDescriptor", testBadDescriptor},
	{"Stat", testStat},
	{"WriteFile", testWriteFile},
	{"Directory", testDirectory},
	{"ReadBound", testReadBound},
	{"ReadDir", testReadDir},
	{"TrailingSlash", testTrailingSlash},
	{"Dots", testDots},
	{"LongNames", testLongNames},
	{"FlockExclusive", testFlockExclusive},
	{"FlockUnlock", testFlockUnlock},
	{"FlockCloseReleases", testFlockCloseReleases},
	{"FlockCloseOtherKeeps", testFlockCloseOtherKeeps},
	{"FlockInode", testFlockInode},
	{"FlockErrors", testFlockErrors},
	{"FlockNoAccess", testFlockNoAccess},
}

// env bundles what every subtest needs, with helpers that fail the test on
// an unexpected error so that the subtests read as the scenario they check.
type env struct {
	*testing.T
	fsys lease.FS
	fl   lease.FlockFS // fsys, for the Flock tests
	dir  string
}

func (e env) path(name string) string { return e.dir + "/" + name }

func (e env) open(name string, flag int) lease.FD {
	e.Helper()
	fd, err := e.fsys.Open(name, flag, 0o644)
	if err != nil {
		e.Fatalf("Open(%q, %#x): %v", name, flag, err)
	}
	return fd
}

func (e env) write(fd lease.FD, s string) {
	e.Helper()
	n, err := e.fsys.Write(fd, []byte(s))
	if err != nil || n != len(s) {
		e.Fatalf("Write(%d, %q) = %d, %v; want %d, nil", fd, s, n, err, len(s))
	}
}

func (e env) close(fd lease.FD) {
	e.Helper()
	if err := e.fsys.Close(fd); err != nil {
		e.Fatalf("Close(%d): %v", fd, err)
	}
}

func (e env) writeFile(name, s string) {
	e.Helper()
	if err := lease.WriteFile(e.fsys, name, []byte(s), 0o644); err != nil {
		e.Fatalf("WriteFile(%q): %v", name, err)
	}
}

// want checks name's content. Reading is not what is being tested here, so
// any error fails the test.
func (e env) want(name, want string) {
	e.Helper()
	got, err := e.fsys.ReadFile(name)
	if err != nil {
		e.Fatalf("ReadFile(%q): %v", name, err)
	}
	if string(got) != want {
		e.Fatalf("ReadFile(%q) = %q, want %q", name, got, want)
	}
}

// wantErr checks that err is a *fs.PathError with the given Op and Path
// wrapping errno.
func (e env) wantErr(call string, err error, op, path string, errno syscall.Errno) {
	e.Helper()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		e.Fatalf("%s: err = %v (%T), want *fs.PathError wrapping %v", call, err, err, errno)
	}
	if !errors.Is(err, errno) {
		e.Errorf("%s: err = %v, want %v (%d)", call, err, errno, int(errno))
	}
	if pe.Op != op || pe.Path != path {
		e.Errorf("%s: Op, Path = %q, %q; want %q, %q", call, pe.Op, pe.Path, op, path)
	}
}

func testCreateExcl(e env) {
	name := e.path("lock")
	const flag = lease.O_WRONLY | lease.O_CREATE | lease.O_EXCL
	e.close(e.open(name, flag))
	_, err := e.fsys.Open(name, flag, 0o644)
	e.wantErr("Open of existing name", err, "open", name, syscall.EEXIST)
	if !errors.Is(err, fs.ErrExist) {
		e.Errorf("errors.Is(%v, fs.ErrExist) = false", err)
	}
	_, err = e.fsys.Open(e.dir, flag, 0o644)
	e.wantErr("Open of existing directory", err, "open", e.dir, syscall.EEXIST)
}

// testTruncAtOpen checks the window the post is about: between the open
// that truncates and the write, the file is empty for any reader.
func testTruncAtOpen(e env) {
	name := e.path("lease")
	e.writeFile(name, "holder 1")
	fd := e.open(name, lease.O_WRONLY|lease.O_TRUNC)
	e.want(name, "")
	e.write(fd, "holder 2")
	e.close(fd)
	e.want(name, "holder 2")
}

// testTruncReadOnly checks Linux's answer to what POSIX leaves undefined.
func testTruncReadOnly(e env) {
	name := e.path("f")
	e.writeFile(name, "data")
	e.close(e.open(name, lease.O_RDONLY|lease.O_TRUNC))
	e.want(name, "")
}

func testWriteAndRead(e env) {
	name := e.path("f")
	fd := e.open(name, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL)
	e.want(name, "")
	e.write(fd, "abc")
	e.want(name, "abc") // visible at once, without close or fsync
	e.write(fd, "def")
	e.want(name, "abcdef")
	if err := e.fsys.Fsync(fd); err != nil {
		e.Fatalf("Fsync: %v", err)
	}
	n, err := e.fsys.Write(fd, nil)
	if n != 0 || err != nil {
		e.Errorf("Write(nil) = %d, %v; want 0, nil", n, err)
	}
	e.close(fd)
	e.want(name, "abcdef")
}

// testWriteInPlace checks that without O_TRUNC a write starts at offset 0
// and leaves the rest of the file.
func testWriteInPlace(e env) {
	name := e.path("f")
	e.writeFile(name, "hello world")
	fd := e.open(name, lease.O_RDWR)
	e.write(fd, "HELLO")
	e.want(name, "HELLO world")
	e.write(fd, " WORLD, again")
	e.close(fd)
	e.want(name, "HELLO WORLD, again")
}

// testWriteAfterTruncation checks a descriptor whose offset is past the end
// because another one truncated the file: the write leaves a hole of zeros.
func testWriteAfterTruncation(e env) {
	name := e.path("f")
	fd := e.open(name, lease.O_WRONLY|lease.O_CREATE)
	e.write(fd, "0123456789")
	e.writeFile(name, "ab")
	e.write(fd, "X")
	e.close(fd)
	e.want(name, "ab\x00\x00\x00\x00\x00\x00\x00\x00X")
}

func testAppend(e env) {
	name := e.path("log")
	e.writeFile(name, "a")
	fd := e.open(name, lease.O_WRONLY|os.O_APPEND)
	other := e.open(name, lease.O_WRONLY)
	e.write(fd, "b")
	e.write(other, "X") // at offset 0, over the "a"
	e.write(fd, "c")    // at the end, wherever it is now
	e.close(fd)
	e.close(other)
	e.want(name, "Xbc")
}

func testMissing(e env) {
	name := e.path("missing")
	_, err := e.fsys.ReadFile(name)
	e.wantErr("ReadFile", err, "read", name, syscall.ENOENT)
	if !errors.Is(err, fs.ErrNotExist) {
		e.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
	_, err = e.fsys.Stat(name)
	e.wantErr("Stat", err, "stat", name, syscall.ENOENT)
	e.wantErr("Remove", e.fsys.Remove(name), "remove", name, syscall.ENOENT)
	_, err = e.fsys.Open(name, lease.O_RDONLY, 0)
	e.wantErr("Open", err, "open", name, syscall.ENOENT)
	_, err = e.fsys.Open(name, lease.O_WRONLY|lease.O_TRUNC, 0)
	e.wantErr("Open for writing", err, "open", name, syscall.ENOENT)
	inMissing := e.path("missing/f")
	_, err = e.fsys.Open(inMissing, lease.O_WRONLY|lease.O_CREATE, 0o644)
	e.wantErr("Open in a missing directory", err, "open", inMissing, syscall.ENOENT)
	_, err = e.fsys.Open("", lease.O_RDONLY, 0)
	e.wantErr("Open of empty name", err, "open", "", syscall.ENOENT)

	other := e.path("other")
	e.writeFile(other, "x")
	e.wantErr("Rename", e.fsys.Rename(name, other), "rename", name+" -> "+other, syscall.ENOENT)
	e.wantErr("Rename into a missing directory", e.fsys.Rename(other, inMissing),
		"rename", other+" -> "+inMissing, syscall.ENOENT)
	e.wantErr("Link", e.fsys.Link(name, other), "link", name+" -> "+other, syscall.ENOENT)
	e.wantErr("Link into a missing directory", e.fsys.Link(other, inMissing),
		"link", other+" -> "+inMissing, syscall.ENOENT)
	e.want(other, "x")
}

// testNotDirectory checks names that go through a regular file.
func testNotDirectory(e env) {
	file := e.path("f")
	e.writeFile(file, "x")
	below := file + "/g"
	_, err := e.fsys.Open(below, lease.O_WRONLY|lease.O_CREATE, 0o644)
	e.wantErr("Open", err, "open", below, syscall.ENOTDIR)
	_, err = e.fsys.ReadFile(below)
	e.wantErr("ReadFile", err, "read", below, syscall.ENOTDIR)
	_, err = e.fsys.Stat(below)
	e.wantErr("Stat", err, "stat", below, syscall.ENOTDIR)
	e.wantErr("Remove", e.fsys.Remove(below), "remove", below, syscall.ENOTDIR)
	e.wantErr("Rename", e.fsys.Rename(file, below), "rename", file+" -> "+below, syscall.ENOTDIR)
	e.wantErr("Link", e.fsys.Link(file, below), "link", file+" -> "+below, syscall.ENOTDIR)
}

// testRemoveOpen checks that unlink removes only the name: a holder that
// has the file open keeps writing into a file nobody else can see.
func testRemoveOpen(e env) {
	name := e.path("lease")
	fd := e.open(name, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL)
	e.write(fd, "before")
	if err := e.fsys.Remove(name); err != nil {
		e.Fatalf("Remove: %v", err)
	}
	if _, err := e.fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		e.Fatalf("Stat after Remove: err = %v, want ErrNotExist", err)
	}
	e.write(fd, " after")
	if err := e.fsys.Fsync(fd); err != nil {
		e.Fatalf("Fsync after Remove: %v", err)
	}
	fresh := e.open(name, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL)
	e.want(name, "")
	e.write(fd, " unseen")
	e.want(name, "")
	e.close(fd)
	e.close(fresh)
}

func testRename(e env) {
	tmp, target := e.path("lease.tmp"), e.path("lease")
	e.writeFile(target, "old holder")
	old := e.open(target, lease.O_WRONLY)
	e.writeFile(tmp, "new")
	if err := e.fsys.Rename(tmp, target); err != nil {
		e.Fatalf("Rename: %v", err)
	}
	e.want(target, "new")
	_, err := e.fsys.ReadFile(tmp)
	e.wantErr("ReadFile of old name", err, "read", tmp, syscall.ENOENT)
	// A descriptor of the replaced file now writes into a nameless file.
	e.write(old, "OLD")
	e.close(old)
	e.want(target, "new")

	fresh := e.path("fresh")
	if err := e.fsys.Rename(target, fresh); err != nil {
		e.Fatalf("Rename to a new name: %v", err)
	}
	e.want(fresh, "new")
	if _, err := e.fsys.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		e.Errorf("Stat of old name: err = %v, want ErrNotExist", err)
	}
}

// testRenameSameFile checks POSIX's rule that renaming a file onto a name
// of the same file does nothing, even when the names differ: both remain.
func testRenameSameFile(e env) {
	a, b := e.path("a"), e.path("b")
	e.writeFile(a, "x")
	if err := e.fsys.Rename(a, a); err != nil {
		e.Fatalf("Rename onto itself: %v", err)
	}
	e.want(a, "x")
	if err := e.fsys.Link(a, b); err != nil {
		e.Fatalf("Link: %v", err)
	}
	if err := e.fsys.Rename(a, b); err != nil {
		e.Fatalf("Rename onto a link: %v", err)
	}
	e.want(a, "x")
	e.want(b, "x")
}

// testRenameDirectory checks the errors of renames involving directories
// that can be made without mkdir.
func testRenameDirectory(e env) {
	file := e.path("f")
	e.writeFile(file, "x")
	// Linux reports a target that is an ancestor of the source as not
	// empty before it looks at the kinds of the two.
	e.wantErr("Rename onto the parent", e.fsys.Rename(file, e.dir),
		"rename", file+" -> "+e.dir, syscall.ENOTEMPTY)
	below := e.path("sub")
	e.wantErr("Rename into itself", e.fsys.Rename(e.dir, below),
		"rename", e.dir+" -> "+below, syscall.EINVAL)
	e.want(file, "x")
}

func testLink(e env) {
	a, b, c := e.path("a"), e.path("b"), e.path("c")
	e.writeFile(a, "a")
	e.writeFile(b, "b")
	err := e.fsys.Link(a, b)
	e.wantErr("Link onto an existing name", err, "link", a+" -> "+b, syscall.EEXIST)
	if !errors.Is(err, fs.ErrExist) {
		e.Errorf("errors.Is(%v, fs.ErrExist) = false", err)
	}
	e.want(b, "b")
	e.wantErr("Link onto itself", e.fsys.Link(a, a), "link", a+" -> "+a, syscall.EEXIST)

	if err := e.fsys.Link(a, c); err != nil {
		e.Fatalf("Link: %v", err)
	}
	e.want(c, "a")
	fd := e.open(a, lease.O_WRONLY|lease.O_TRUNC)
	e.write(fd, "shared")
	e.close(fd)
	e.want(c, "shared")
	if err := e.fsys.Remove(a); err != nil {
		e.Fatalf("Remove: %v", err)
	}
	e.want(c, "shared")
}

func testBadDescriptor(e env) {
	name := e.path("f")
	fd := e.open(name, lease.O_WRONLY|lease.O_CREATE)
	e.close(fd)
	p := "fd " + strconv.Itoa(int(fd))
	e.wantErr("second Close", e.fsys.Close(fd), "close", p, syscall.EBADF)
	_, err := e.fsys.Write(fd, []byte("x"))
	e.wantErr("Write after Close", err, "write", p, syscall.EBADF)
	e.wantErr("Fsync after Close", e.fsys.Fsync(fd), "fsync", p, syscall.EBADF)

	rd := e.open(name, lease.O_RDONLY)
	_, err = e.fsys.Write(rd, []byte("x"))
	e.wantErr("Write to a read-only descriptor", err, "write", "fd "+strconv.Itoa(int(rd)), syscall.EBADF)
	e.close(rd)
	e.want(name, "")
}

func testStat(e env) {
	name := e.path("f")
	e.writeFile(name, "12345")
	fi, err := e.fsys.Stat(name)
	if err != nil {
		e.Fatalf("Stat: %v", err)
	}
	if fi.Name() != "f" || fi.Size() != 5 || fi.IsDir() || !fi.Mode().IsRegular() {
		e.Errorf("Stat(file): Name, Size, IsDir, Mode = %q, %d, %v, %v; want f, 5, false, regular",
			fi.Name(), fi.Size(), fi.IsDir(), fi.Mode())
	}
	fi, err = e.fsys.Stat(e.dir)
	if err != nil {
		e.Fatalf("Stat(dir): %v", err)
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeDir == 0 {
		e.Errorf("Stat(dir): IsDir, Mode = %v, %v; want a directory", fi.IsDir(), fi.Mode())
	}
}

func testWriteFile(e env) {
	name := e.path("f")
	e.writeFile(name, "a longer first content")
	e.want(name, "a longer first content")
	e.writeFile(name, "short")
	e.want(name, "short")
	e.writeFile(name, "")
	e.want(name, "")
}

func testDirectory(e env) {
	// O_WRONLY|O_RDWR is Linux's access mode 3, for neither reading nor
	// writing, which open checks as a write (found by TestDifferential).
	for _, flag := range []int{lease.O_WRONLY, lease.O_RDWR, lease.O_RDONLY | lease.O_CREATE, lease.O_RDONLY | lease.O_TRUNC, lease.O_WRONLY | lease.O_RDWR} {
		_, err := e.fsys.Open(e.dir, flag, 0o644)
		e.wantErr("Open of a directory", err, "open", e.dir, syscall.EISDIR)
	}
	e.close(e.open(e.dir, lease.O_RDONLY))
	_, err := e.fsys.ReadFile(e.dir)
	e.wantErr("ReadFile", err, "read", e.dir, syscall.EISDIR)
	e.wantErr("Remove", e.fsys.Remove(e.dir), "remove", e.dir, syscall.EISDIR)

	// A directory gets no second name, and an existing name is checked
	// first.
	file := e.path("f")
	e.writeFile(file, "x")
	other := e.path("d2")
	e.wantErr("Link of a directory", e.fsys.Link(e.dir, other),
		"link", e.dir+" -> "+other, syscall.EPERM)
	e.wantErr("Link of a directory onto a file", e.fsys.Link(e.dir, file),
		"link", e.dir+" -> "+file, syscall.EEXIST)
	e.want(file, "x")
}

// A file larger than lease.MaxReadFile is not a lease: ReadFile refuses
// it with EFBIG instead of reading it whole; one byte less is read.
func testReadBound(e env) {
	name := e.path("big")
	e.writeFile(name, strings.Repeat("x", lease.MaxReadFile))
	if b, err := e.fsys.ReadFile(name); err != nil || len(b) != lease.MaxReadFile {
		e.Errorf("ReadFile of %d bytes: %d bytes, %v", lease.MaxReadFile, len(b), err)
	}
	fd := e.open(name, lease.O_WRONLY|os.O_APPEND)
	e.write(fd, "y")
	e.close(fd)
	_, err := e.fsys.ReadFile(name)
	e.wantErr("ReadFile of a file over the bound", err, "read", name, syscall.EFBIG)
}

// ReadDir lists a directory's names, sorted, without "." and "..": what
// was linked and not yet removed, and nothing of a file's other names or
// of what was renamed away.
func testReadDir(e env) {
	list := func(want ...string) {
		e.Helper()
		got, err := e.fsys.ReadDir(e.dir)
		if err != nil || !slices.Equal(got, want) {
			e.Errorf("ReadDir(%s) = %q, %v; want %q", e.dir, got, err, want)
		}
	}
	list()
	for _, n := range []string{"lock.2", "lock.10", "lock.1", "a"} {
		e.writeFile(e.path(n), n)
	}
	list("a", "lock.1", "lock.10", "lock.2")
	if err := e.fsys.Link(e.path("lock.2"), e.path("lock.3")); err != nil {
		e.Fatal(err)
	}
	if err := e.fsys.Rename(e.path("a"), e.path("b")); err != nil {
		e.Fatal(err)
	}
	if err := e.fsys.Remove(e.path("lock.1")); err != nil {
		e.Fatal(err)
	}
	list("b", "lock.10", "lock.2", "lock.3")

	missing := e.path("missing")
	_, err := e.fsys.ReadDir(missing)
	e.wantErr("ReadDir of a missing directory", err, "readdir", missing, syscall.ENOENT)
	if !errors.Is(err, fs.ErrNotExist) {
		e.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
	file := e.path("b")
	_, err = e.fsys.ReadDir(file)
	e.wantErr("ReadDir of a file", err, "readdir", file, syscall.ENOTDIR)
}
