package lease_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// recFS records every call made through it as a line such as
// "open /d/lease O_WRONLY|O_CREATE|O_EXCL", and can fail the Nth write.
type recFS struct {
	lease.FS
	calls     []string
	failWrite int // 1-based number of the write that fails with ENOSPC; 0: none
	writes    int
}

func flagNames(flag int) string {
	var parts []string
	switch flag & (lease.O_WRONLY | lease.O_RDWR) {
	case lease.O_WRONLY:
		parts = append(parts, "O_WRONLY")
	case lease.O_RDWR:
		parts = append(parts, "O_RDWR")
	default:
		parts = append(parts, "O_RDONLY")
	}
	for _, f := range []struct {
		bit  int
		name string
	}{{lease.O_CREATE, "O_CREATE"}, {lease.O_EXCL, "O_EXCL"}, {lease.O_TRUNC, "O_TRUNC"}, {lease.O_NOFOLLOW, "O_NOFOLLOW"}} {
		if flag&f.bit != 0 {
			parts = append(parts, f.name)
			flag &^= f.bit
		}
	}
	if rest := flag &^ (lease.O_WRONLY | lease.O_RDWR); rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", rest))
	}
	return strings.Join(parts, "|")
}

func (r *recFS) Open(name string, flag int, perm fs.FileMode) (lease.FD, error) {
	r.calls = append(r.calls, fmt.Sprintf("open %s %s %#o", name, flagNames(flag), perm))
	return r.FS.Open(name, flag, perm)
}

func (r *recFS) Write(fd lease.FD, b []byte) (int, error) {
	r.calls = append(r.calls, fmt.Sprintf("write %s", b))
	r.writes++
	if r.writes == r.failWrite {
		return 0, &fs.PathError{Op: "write", Path: "fd", Err: syscall.ENOSPC}
	}
	return r.FS.Write(fd, b)
}

func (r *recFS) Fsync(fd lease.FD) error {
	r.calls = append(r.calls, "fsync")
	return r.FS.Fsync(fd)
}

func (r *recFS) Close(fd lease.FD) error {
	r.calls = append(r.calls, "close")
	return r.FS.Close(fd)
}

func (r *recFS) ReadFile(name string) ([]byte, error) {
	r.calls = append(r.calls, "read "+name)
	return r.FS.ReadFile(name)
}

func (r *recFS) Stat(name string) (fs.FileInfo, error) {
	r.calls = append(r.calls, "stat "+name)
	return r.FS.Stat(name)
}

func (r *recFS) Remove(name string) error {
	r.calls = append(r.calls, "remove "+name)
	return r.FS.Remove(name)
}

func (r *recFS) Rename(oldname, newname string) error {
	r.calls = append(r.calls, "rename "+oldname+" "+newname)
	return r.FS.Rename(oldname, newname)
}

func (r *recFS) Link(oldname, newname string) error {
	r.calls = append(r.calls, "link "+oldname+" "+newname)
	return r.FS.Link(oldname, newname)
}

// fixedClock is a wall clock stopped at one instant.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                       { return c.t }
func (c fixedClock) Mono() time.Duration                  { return 0 }
func (c fixedClock) Sleep(time.Duration)                  { panic("Sleep called") }
func (c fixedClock) NewTicker(time.Duration) lease.Ticker { panic("NewTicker called") }

func (r *recFS) reset() { r.calls = nil }

func (r *recFS) want(t *testing.T, what string, want []string) {
	t.Helper()
	wantCalls(t, what, r.calls, want)
}

func wantCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s made the calls\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

const lockPath = "/d/leader.lock"

// now is the fixed wall-clock time of the store tests.
var now = time.Date(2025, 10, 14, 21, 14, 38, 500_000_000, time.UTC)

// newStore returns a seed store over a fresh simulated file system holding
// the directory /d, with the calls recorded.
func newStore(naive bool) (*lease.SeedFile, *recFS) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	r := &recFS{FS: f.View(f.NewFDTable())}
	return &lease.SeedFile{FS: r, Clock: fixedClock{now}, Path: lockPath, Naive: naive}, r
}

func content(t *testing.T, fsys lease.FS) (string, error) {
	t.Helper()
	b, err := fsys.ReadFile(lockPath)
	return string(b), err
}

func wantContent(t *testing.T, r *recFS, want string) {
	t.Helper()
	got, err := content(t, r.FS)
	if err != nil || got != want {
		t.Errorf("lock file = %q, %v; want %q", got, err, want)
	}
}

func wantNoFile(t *testing.T, r *recFS) {
	t.Helper()
	if got, err := content(t, r.FS); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock file = %q, %v; want it absent", got, err)
	}
}

func TestWriteFileCalls(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (lease.FS, string){
		"sim": func(t *testing.T) (lease.FS, string) {
			f := sim.NewFileSystem()
			f.MkdirAll("/d")
			return f.View(f.NewFDTable()), "/d"
		},
		"os": func(t *testing.T) (lease.FS, string) { return lease.OSFS{}, t.TempDir() },
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := mk(t)
			r := &recFS{FS: fsys}
			p := dir + "/f"
			if err := lease.WriteFile(r, p, []byte("first, longer"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := lease.WriteFile(r, p, []byte("second"), 0o644); err != nil {
				t.Fatal(err)
			}
			open := "open " + p + " O_WRONLY|O_CREATE|O_TRUNC "
			r.want(t, "two WriteFiles", []string{open + "0600", "write first, longer", "close",
				open + "0644", "write second", "close"})
			if b, err := fsys.ReadFile(p); string(b) != "second" || err != nil {
				t.Errorf("content = %q, %v; want \"second\"", b, err)
			}

			// A failing write still closes, and reports the write's error.
			r.reset()
			r.failWrite = r.writes + 1
			err := lease.WriteFile(r, p, []byte("third"), 0o644)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("WriteFile with a failing write = %v, want ENOSPC", err)
			}
			r.want(t, "WriteFile with a failing write", []string{open + "0644", "write third", "close"})
			if b, err := fsys.ReadFile(p); len(b) != 0 || err != nil {
				t.Errorf("content after failed write = %q, %v; want empty (truncated at open)", b, err)
			}

			// A failing open makes no other call.
			r.reset()
			err = lease.WriteFile(r, dir+"/missing/f", []byte("x"), 0o644)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("WriteFile in a missing directory = %v, want ErrNotExist", err)
			}
			r.want(t, "WriteFile in a missing directory", []string{"open " + dir + "/missing/f O_WRONLY|O_CREATE|O_TRUNC 0644"})
		})
	}
}

func TestSeedFileCreate(t *testing.T) {
	s, r := newStore(false)
	rec, err := s.Create(60217, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Until is whole seconds of the store's wall clock plus the ttl.
	until := now.Add(9 * time.Second).Unix()
	if want := (lease.Record{Holder: 60217, Until: until}); rec != want {
		t.Errorf("Create = %+v, want %+v", rec, want)
	}
	data := fmt.Sprintf(`{"processId":60217,"leaseUntil":%d}`, until)
	r.want(t, "Create", []string{
		"open " + lockPath + " O_WRONLY|O_CREATE|O_EXCL 0644", "close",
		"open " + lockPath + " O_WRONLY|O_CREATE|O_TRUNC 0644", "write " + data, "close",
	})
	wantContent(t, r, data)

	if got, err := s.Read(); got != rec || err != nil {
		t.Errorf("Read = %+v, %v; want %+v", got, err, rec)
	}

	// A second Create fails at the O_EXCL open and leaves the lease alone.
	r.reset()
	_, err = s.Create(2, 9*time.Second)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing lease = %v, want ErrExist", err)
	}
	r.want(t, "Create over an existing lease", []string{"open " + lockPath + " O_WRONLY|O_CREATE|O_EXCL 0644"})
	wantContent(t, r, data)
}

func TestSeedFileCreateNaive(t *testing.T) {
	s, r := newStore(true)
	rec, err := s.Create(7, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"processId":7,"leaseUntil":%d}`, now.Unix()+3)
	r.want(t, "naive Create", []string{
		"stat " + lockPath,
		"open " + lockPath + " O_WRONLY|O_CREATE 0644", "close",
		"open " + lockPath + " O_WRONLY|O_CREATE|O_TRUNC 0644", "write " + data, "close",
	})
	wantContent(t, r, data)
	if rec.Holder != 7 || rec.Until != now.Unix()+3 {
		t.Errorf("naive Create = %+v", rec)
	}

	// The stat finds the file: ErrExist, and nothing else is done.
	r.reset()
	_, err = s.Create(8, 3*time.Second)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("naive Create over an existing lease = %v, want ErrExist", err)
	}
	r.want(t, "naive Create over an existing lease", []string{"stat " + lockPath})
	wantContent(t, r, data)
}

// TestSeedFileNaiveRace is the post's check-then-act race: two processes
// both stat before either opens; both "create", and both write.
func TestSeedFileNaiveRace(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	a := &lease.SeedFile{FS: f.View(f.NewFDTable()), Clock: fixedClock{now}, Path: lockPath, Naive: true}
	// b's stat happens before a's create: model it by letting b's FS see
	// the file as absent at its stat.
	b := &lease.SeedFile{FS: statMissing{f.View(f.NewFDTable())}, Clock: fixedClock{now}, Path: lockPath, Naive: true}
	if _, err := a.Create(1, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(2, 9*time.Second); err != nil {
		t.Errorf("the second naive Create = %v; want success, which is the bug", err)
	}
	if rec, err := a.Read(); err != nil || rec.Holder != 2 {
		t.Errorf("after the race the file holds %+v, %v; want holder 2 (a's lease overwritten)", rec, err)
	}
}

// statMissing reports every name as missing to Stat.
type statMissing struct{ lease.FS }

func (s statMissing) Stat(name string) (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
}

func TestSeedFileCreateWriteFails(t *testing.T) {
	for _, naive := range []bool{false, true} {
		s, r := newStore(naive)
		r.failWrite = 1
		_, err := s.Create(60217, 9*time.Second)
		if !errors.Is(err, syscall.ENOSPC) || lease.FailedStep(err) != "write" {
			t.Errorf("naive=%v: Create with a failing write = %v (step %q), want ENOSPC at step write",
				naive, err, lease.FailedStep(err))
		}
		if n := len(r.calls); n == 0 || r.calls[n-1] != "remove "+lockPath {
			t.Errorf("naive=%v: Create with a failing write made %q; want it to end with the cleanup remove", naive, r.calls)
		}
		wantNoFile(t, r)
	}
}

func TestSeedFileTakeover(t *testing.T) {
	s, r := newStore(false)
	stale := lease.Record{Holder: 1, Until: now.Unix() - 1}
	if err := lease.WriteFile(r.FS, lockPath, stale.AppendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Takeover(stale, 2, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"processId":2,"leaseUntil":%d}`, now.Unix()+9)
	r.want(t, "Takeover", []string{
		"remove " + lockPath,
		"open " + lockPath + " O_WRONLY|O_CREATE|O_EXCL 0644", "close",
		"open " + lockPath + " O_WRONLY|O_CREATE|O_TRUNC 0644", "write " + data, "close",
	})
	wantContent(t, r, data)
	if rec != (lease.Record{Holder: 2, Until: now.Unix() + 9}) {
		t.Errorf("Takeover = %+v", rec)
	}

	// BUG (documented): remove by name. A takeover with a stale record that
	// is no longer current removes the current lease all the same.
	r.reset()
	if _, err := s.Takeover(stale, 3, 9*time.Second); err != nil {
		t.Errorf("Takeover of a record that is no longer current = %v; the seed does not compare", err)
	}
	if got, _ := s.Read(); got.Holder != 3 {
		t.Errorf("after the second Takeover the holder is %d, want 3", got.Holder)
	}

	// With no file, the remove fails and nothing else happens.
	r.FS.Remove(lockPath)
	r.reset()
	_, err = s.Takeover(stale, 2, 9*time.Second)
	if lease.FailedStep(err) != "remove" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Takeover with no file = %v (step %q), want ErrNotExist at step remove", err, lease.FailedStep(err))
	}
	r.want(t, "Takeover with no file", []string{"remove " + lockPath})
}

func TestSeedFileTakeoverWriteFails(t *testing.T) {
	s, r := newStore(false)
	stale := lease.Record{Holder: 1, Until: now.Unix() - 1}
	if err := lease.WriteFile(r.FS, lockPath, stale.AppendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	r.failWrite = 1
	_, err := s.Takeover(stale, 2, 9*time.Second)
	if lease.FailedStep(err) != "write" || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Takeover with a failing write = %v (step %q), want ENOSPC at step write", err, lease.FailedStep(err))
	}
	for _, c := range r.calls[1:] {
		if strings.HasPrefix(c, "remove") {
			t.Errorf("Takeover with a failing write cleaned up (%q); the seed leaves the empty file", r.calls)
		}
	}
	// The empty file stays: the wedge.
	wantContent(t, r, "")
	if _, err := s.Read(); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of the empty lock file = %v, want a parse error other than ErrNotExist", err)
	}
	if _, err := s.Create(3, 9*time.Second); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over the empty lock file = %v, want ErrExist", err)
	}
}

func TestSeedFileTakeoverLostRace(t *testing.T) {
	s, r := newStore(false)
	stale := lease.Record{Holder: 1, Until: now.Unix() - 1}
	if err := lease.WriteFile(r.FS, lockPath, stale.AppendJSON(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another process creates the file between our remove and our create.
	s.FS = afterRemove{r, func() { lease.WriteFile(r.FS, lockPath, []byte("other"), 0o644) }}
	_, err := s.Takeover(stale, 2, 9*time.Second)
	if lease.FailedStep(err) != "create" || !errors.Is(err, fs.ErrExist) {
		t.Errorf("Takeover losing the create = %v (step %q), want ErrExist at step create", err, lease.FailedStep(err))
	}
	wantContent(t, r, "other")
}

// afterRemove runs f after every successful Remove.
type afterRemove struct {
	lease.FS
	f func()
}

func (a afterRemove) Remove(name string) error {
	err := a.FS.Remove(name)
	if err == nil {
		a.f()
	}
	return err
}

func TestSeedFileRenewAndRelease(t *testing.T) {
	s, r := newStore(false)
	if err := lease.WriteFile(r.FS, lockPath, []byte(`{"processId":9,"leaseUntil":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// BUG (documented): Renew does not compare; it writes cur's holder.
	rec, err := s.Renew(lease.Record{Holder: 5, Until: 1}, 9*time.Second)
	if err != nil || rec != (lease.Record{Holder: 5, Until: now.Unix() + 9}) {
		t.Errorf("Renew = %+v, %v", rec, err)
	}
	data := fmt.Sprintf(`{"processId":5,"leaseUntil":%d}`, now.Unix()+9)
	r.want(t, "Renew", []string{"open " + lockPath + " O_WRONLY|O_CREATE|O_TRUNC 0644", "write " + data, "close"})
	wantContent(t, r, data)

	r.reset()
	if err := s.Release(lease.Record{Holder: 123}); err != nil {
		t.Errorf("Release = %v", err)
	}
	r.want(t, "Release", []string{"remove " + lockPath})
	wantNoFile(t, r)
	if err := s.Release(rec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Release with no file = %v, want ErrNotExist", err)
	}
}

func TestSeedFileRead(t *testing.T) {
	s, r := newStore(false)
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file = %v, want ErrNotExist", err)
	}
	for _, tc := range []struct {
		data string
		ok   bool
		want lease.Record
	}{
		{"", false, lease.Record{}},
		{"{", false, lease.Record{}},
		{`{"processId":1`, false, lease.Record{}},
		{`{"processId":4,"leaseUntil":5}`, true, lease.Record{Holder: 4, Until: 5}},
		{`{"leaseUntil":5}`, true, lease.Record{Until: 5}},
	} {
		if err := lease.WriteFile(r.FS, lockPath, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		r.reset()
		got, err := s.Read()
		r.want(t, "Read", []string{"read " + lockPath})
		switch {
		case tc.ok && (err != nil || got != tc.want):
			t.Errorf("Read of %q = %+v, %v; want %+v", tc.data, got, err, tc.want)
		case !tc.ok && err == nil:
			t.Errorf("Read of %q = %+v, want an error", tc.data, got)
		case !tc.ok && errors.Is(err, fs.ErrNotExist):
			t.Errorf("Read of %q = %v: an unreadable file must not look missing", tc.data, err)
		}
	}
}
