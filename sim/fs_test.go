package sim_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/fstest"
	"github.com/leaselab/leaselab/sim"
)

func TestFileSystem(t *testing.T) {
	fstest.TestFS(t, func(t *testing.T) (lease.FS, string) {
		f := sim.NewFileSystem()
		f.MkdirAll("/d")
		return f.View(f.NewFDTable()), "/d"
	})
}

func TestCloseAll(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	p := f.NewFDTable()
	fd, err := f.Open(p, "/d/lease", lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(p, fd, []byte("mine")); err != nil {
		t.Fatal(err)
	}
	p.CloseAll()
	if _, err := f.Write(p, fd, []byte("more")); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Write after CloseAll: err = %v, want EBADF", err)
	}
	if err := f.Close(p, fd); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Close after CloseAll: err = %v, want EBADF", err)
	}
	if b, err := f.ReadFile("/d/lease"); string(b) != "mine" || err != nil {
		t.Errorf("ReadFile after CloseAll = %q, %v; want \"mine\", nil", b, err)
	}
	// The table is usable again, as for a restarted process.
	if fd, err := f.Open(p, "/d/lease", lease.O_RDONLY, 0); fd != 3 || err != nil {
		t.Errorf("Open after CloseAll = %d, %v; want 3, nil", fd, err)
	}
}

func TestDescriptorNumbers(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	if err := f.Place("/d/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, q := f.NewFDTable(), f.NewFDTable()
	open := func(t *sim.FDTable) lease.FD {
		fd, err := f.Open(t, "/d/f", lease.O_RDONLY, 0)
		if err != nil {
			panic(err)
		}
		return fd
	}
	var got []lease.FD
	got = append(got, open(p), open(p), open(p), open(q))
	f.Close(p, 4)
	got = append(got, open(p))
	f.Close(p, 3)
	f.Close(p, 5)
	got = append(got, open(p), open(p), open(p))
	if want := []lease.FD{3, 4, 5, 3, 4, 3, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("descriptors = %v, want %v", got, want)
	}
	for _, fd := range []lease.FD{-1, 0, 1, 2, 100} {
		if err := f.Close(p, fd); !errors.Is(err, syscall.EBADF) {
			t.Errorf("Close(%d): err = %v, want EBADF", fd, err)
		}
	}
}

func TestFiles(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/var/lock")
	f.MkdirAll("/b")
	for _, name := range []string{"/var/lock/z", "/var/lock/a", "/b/x"} {
		if err := f.Place(name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Open(f.NewFDTable(), "/b/gone", lease.O_WRONLY|lease.O_CREATE, 0o644); err != nil {
		t.Fatal(err)
	}
	f.Remove("/b/gone") // open but nameless: not listed

	var got []string
	for _, s := range f.Files() {
		got = append(got, fmt.Sprintf("%s %q %v", s.Name, s.Data, s.Dir))
	}
	want := []string{
		`/ "" true`,
		`/b "" true`,
		`/b/x "/b/x" false`,
		`/var "" true`,
		`/var/lock "" true`,
		`/var/lock/a "/var/lock/a" false`,
		`/var/lock/z "/var/lock/z" false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Files() =\n%q\nwant\n%q", got, want)
	}

	// The listing is a copy.
	f.Files()[2].Data[0] = 'X'
	if b, _ := f.ReadFile("/b/x"); string(b) != "/b/x" {
		t.Errorf("after changing Files()' data, ReadFile = %q", b)
	}
}

func TestPlace(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	v := f.View(f.NewFDTable())
	if err := f.Place("/d/a", []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Link("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	data := []byte("2")
	if err := f.Place("/d/a", data, 0o644); err != nil {
		t.Fatal(err)
	}
	data[0] = 'X'
	if b, _ := v.ReadFile("/d/b"); string(b) != "2" {
		t.Errorf("link after Place = %q, want %q", b, "2")
	}
	if fi, _ := v.Stat("/d/a"); fi.Mode() != 0o644 {
		t.Errorf("mode after Place = %v, want %v", fi.Mode(), fs.FileMode(0o644))
	}
	if err := f.Place("/nodir/a", nil, 0o644); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Place in a missing directory: err = %v, want ENOENT", err)
	}
	if err := f.Place("/d", nil, 0o644); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Place onto a directory: err = %v, want EISDIR", err)
	}
}

// TestRenameDirectory covers what the conformance suite cannot reach
// without mkdir. The errnos are those Linux gives.
func TestRenameDirectory(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/a/b")
	f.MkdirAll("/empty")
	f.MkdirAll("/full/x")
	f.Place("/a/b/f", []byte("f"), 0o644)
	f.Place("/file", nil, 0o644)

	for _, tc := range []struct {
		old, new string
		want     syscall.Errno
	}{
		{"/a", "/full", syscall.ENOTEMPTY},
		{"/a", "/file", syscall.ENOTDIR},
		{"/file", "/empty", syscall.EISDIR},
		{"/a", "/a/b/c", syscall.EINVAL},
		{"/a/b", "/a", syscall.ENOTEMPTY},
		{"/", "/x", syscall.EBUSY},
		{"/a", "/", syscall.EBUSY},
	} {
		if err := f.Rename(tc.old, tc.new); !errors.Is(err, tc.want) {
			t.Errorf("Rename(%q, %q): err = %v, want %v", tc.old, tc.new, err, tc.want)
		}
	}
	if err := f.Rename("/a", "/empty"); err != nil {
		t.Fatalf("Rename onto an empty directory: %v", err)
	}
	var names []string
	for _, s := range f.Files() {
		names = append(names, s.Name)
	}
	want := []string{"/", "/empty", "/empty/b", "/empty/b/f", "/file", "/full", "/full/x"}
	if !slices.Equal(names, want) {
		t.Errorf("after Rename, names = %q, want %q", names, want)
	}
}

// TestNames checks that names are cleaned before lookup while errors quote
// them as given, as the kernel's callers see.
func TestNames(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	f.Place("/d/f", []byte("x"), 0o644)
	for _, name := range []string{"/d//f", "/d/./f", "d/f", "/d/../d/f"} {
		if b, err := f.ReadFile(name); string(b) != "x" || err != nil {
			t.Errorf("ReadFile(%q) = %q, %v; want \"x\", nil", name, b, err)
		}
	}
	_, err := f.ReadFile("d//missing")
	if want := "read d//missing: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("ReadFile of a missing name: err = %v, want %q", err, want)
	}
}

func TestUnmodelledFlag(t *testing.T) {
	f := sim.NewFileSystem()
	_, err := f.Open(f.NewFDTable(), "/", syscall.O_DIRECTORY, 0)
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Open with O_DIRECTORY: err = %v, want EINVAL", err)
	}
}

// ExampleFileSystem shows the window in which a lease file renewed with
// lease.WriteFile is empty, here seen by a second process.
func ExampleFileSystem() {
	f := sim.NewFileSystem()
	f.MkdirAll("/var/lock")
	if err := f.Place("/var/lock/lease", []byte("holder 1"), 0o644); err != nil {
		panic(err)
	}
	holder, reader := f.NewFDTable(), f.NewFDTable()

	fd, err := f.Open(holder, "/var/lock/lease", lease.O_WRONLY|lease.O_CREATE|lease.O_TRUNC, 0o644)
	if err != nil {
		panic(err)
	}
	b, _ := f.View(reader).ReadFile("/var/lock/lease")
	fmt.Printf("between open and write: %q\n", b)

	f.Write(holder, fd, []byte("holder 1, renewed"))
	holder.CloseAll() // the holder dies without closing

	for _, s := range f.Files() {
		if !s.Dir {
			fmt.Printf("%s: %q\n", s.Name, s.Data)
		}
	}
	// Output:
	// between open and write: ""
	// /var/lock/lease: "holder 1, renewed"
}

// BenchmarkFSOpenWriteClose measures a lease renewal as lease.WriteFile
// makes it: open with O_TRUNC, write, close.
func BenchmarkFSOpenWriteClose(b *testing.B) {
	f := sim.NewFileSystem()
	f.MkdirAll("/var/lock")
	p := f.NewFDTable()
	data := []byte("holder 17 until 1700000000.000000000")
	b.ReportAllocs()
	for b.Loop() {
		fd, err := f.Open(p, "/var/lock/lease", lease.O_WRONLY|lease.O_CREATE|lease.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(p, fd, data); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(p, fd); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(3*b.N), "ns/syscall")
}

// What ReadFile returned does not change when the file does: not by an
// overwrite in place, an O_TRUNC rewrite or an append (ReadFile lends the
// file's bytes, and the next change copies them first).
func TestReadFileSnapshot(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	p := f.NewFDTable()
	write := func(flag int, s string) {
		t.Helper()
		fd, err := f.Open(p, "/d/lease", lease.O_WRONLY|lease.O_CREATE|flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(p, fd, []byte(s)); err != nil {
			t.Fatal(err)
		}
		f.Close(p, fd)
	}
	write(0, "first record")
	var reads [][]byte
	var want []string
	for _, c := range []struct {
		flag int
		s    string
	}{
		{0, "FIRST"},                    // in place, from offset 0
		{lease.O_TRUNC, "second"},       // truncated, then rewritten
		{os.O_APPEND, " and a tail"},    // appended
		{lease.O_TRUNC, "third record"}, // truncated again
	} {
		b, err := f.ReadFile("/d/lease")
		if err != nil {
			t.Fatal(err)
		}
		reads, want = append(reads, b), append(want, string(b))
		write(c.flag, c.s)
	}
	for i, b := range reads {
		if string(b) != want[i] {
			t.Errorf("read %d changed from %q to %q after later writes", i, want[i], b)
		}
	}
	if b, _ := f.ReadFile("/d/lease"); string(b) != "third record" {
		t.Errorf("file = %q, want %q", b, "third record")
	}
}
