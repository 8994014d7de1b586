package lease_test

import (
	"errors"
	"io/fs"
	"math"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

func TestFlockRecord(t *testing.T) {
	for _, r := range []lease.Record{{Holder: 60217, Epoch: 1}, {Holder: 0, Epoch: 7}, {Holder: 999_999_999_999_999_999, Epoch: 999_999_999_999_999_999}} {
		b := lease.AppendFlockRecord([]byte("x"), r)[1:]
		if len(b) != lease.FlockRecordSize || b[len(b)-1] != '\n' {
			t.Errorf("AppendFlockRecord(%+v) = %q: want %d bytes ending in a newline", r, b, lease.FlockRecordSize)
		}
		r.Version = r.Epoch
		if got, err := lease.ParseFlockRecord(b); got != r || err != nil {
			t.Errorf("ParseFlockRecord(%q) = %+v, %v; want %+v", b, got, err, r)
		}
		// A foreign longer file that the record overwrote leaves a tail.
		if got, err := lease.ParseFlockRecord(append(b, "tail of something longer"...)); got != r || err != nil {
			t.Errorf("ParseFlockRecord with a tail = %+v, %v; want %+v", got, err, r)
		}
	}
	if b := lease.AppendFlockRecord(nil, lease.Record{Holder: math.MinInt64, Epoch: math.MaxInt64}); len(b) != lease.FlockRecordSize {
		t.Errorf("the longest record takes %d bytes, want %d", len(b), lease.FlockRecordSize)
	}
	for _, bad := range []string{"", " \n", `{"processId":1,"epoch":0}`, `{"processId":-1,"epoch":1}`,
		`{"processId":1,"leaseUntil":1760476487}`, "\x00\x00\x00", `{"processId":1,"epoch":1} x`,
		strings.Repeat(" ", 64) + `{"processId":1,"epoch":1}`} {
		if got, err := lease.ParseFlockRecord([]byte(bad)); err == nil {
			t.Errorf("ParseFlockRecord(%q) = %+v, want an error", bad, got)
		}
	}
}

// newFlockStore returns a flock store over a fresh simulated file system
// holding the directory /d, with the calls recorded.
func newFlockStore() (*lease.EpochFile, *recFS, *sim.FileSystem) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	r := &recFS{FS: f.View(f.NewFDTable())}
	return &lease.EpochFile{FS: r, Path: lockPath}, r, f
}

// The store's system calls: a read of the whole file; a write is open
// without O_CREAT or O_TRUNC, one write of the whole record, fsync, close,
// then an fsync of the directory. Renew and Release make none.
func TestFlockFileCalls(t *testing.T) {
	s, r, f := newFlockStore()
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read with no file: %v, want ErrNotExist", err)
	}
	f.Place(lockPath, nil, 0o644)
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of an empty file: %v, want ErrNotExist", err)
	}
	r.reset()
	rec, err := s.Create(60217, 9*time.Second)
	if want := (lease.Record{Holder: 60217, Epoch: 1, Version: 1}); rec != want || err != nil {
		t.Fatalf("Create = %+v, %v; want %+v", rec, err, want)
	}
	data := string(lease.AppendFlockRecord(nil, rec))
	open := "open " + lockPath + " O_WRONLY|O_NOFOLLOW 0644"
	// (The directory is fsynced by the algorithm once it opens the file,
	// not by every write.)
	r.want(t, "Create", []string{open, "write " + data, "fsync", "close"})
	wantContent(t, r, data)

	r.reset()
	if got, err := s.Read(); got != rec || err != nil {
		t.Errorf("Read = %+v, %v; want %+v", got, err, rec)
	}
	rec2, err := s.Takeover(rec, 60222, 9*time.Second)
	if want := (lease.Record{Holder: 60222, Epoch: 2, Version: 2}); rec2 != want || err != nil {
		t.Fatalf("Takeover = %+v, %v; want %+v", rec2, err, want)
	}
	data = string(lease.AppendFlockRecord(nil, rec2))
	r.want(t, "Read, Takeover", []string{"read " + lockPath, open, "write " + data, "fsync", "close"})

	r.reset()
	if got, err := s.Renew(rec2, 9*time.Second); got != rec2 || err != nil {
		t.Errorf("Renew = %+v, %v; want %+v", got, err, rec2)
	}
	if err := s.Release(rec2); err != nil {
		t.Errorf("Release: %v", err)
	}
	r.want(t, "Renew, Release", nil)
	wantContent(t, r, data)

	// A failed write is reported as the write step, and still closes.
	r.reset()
	r.failWrite = r.writes + 1
	if _, err := s.Takeover(rec2, 1, time.Second); !errors.Is(err, syscall.ENOSPC) || lease.FailedStep(err) != "write" {
		t.Errorf("Takeover with a failing write: %v, want a write step failing with ENOSPC", err)
	}
	r.want(t, "failed write", []string{open, "write " + string(lease.AppendFlockRecord(nil, lease.Record{Holder: 1, Epoch: 3})), "close"})

	// The store never creates the file: if it is gone, the write fails.
	f.Remove(lockPath)
	if _, err := s.Create(1, time.Second); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create with the lock file gone: %v, want ErrNotExist", err)
	}
}

// Whatever someone else wrote over the record is unreadable, not absent;
// a longer foreign file is overwritten at its start, and reads back.
func TestFlockFileForeign(t *testing.T) {
	s, _, f := newFlockStore()
	for _, junk := range []string{`{"processId":1,"leaseUntil":1760476487}`, "garbage", strings.Repeat("a", 1000)} {
		f.Place(lockPath, []byte(junk), 0o644)
		rec, err := s.Read()
		if !errors.Is(err, lease.ErrUnreadable) || rec.Holder != lease.Unknown {
			t.Errorf("Read of %.20q = %+v, %v; want Unknown, ErrUnreadable", junk, rec, err)
		}
		rec, err = s.Takeover(lease.Record{Holder: lease.Unknown, Epoch: 41}, 9, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Read(); got != rec || err != nil {
			t.Errorf("Read after writing over %.20q = %+v, %v; want %+v", junk, got, err, rec)
		}
	}
}

// The flock store makes a boot record only under the lock (Create,
// Takeover), and first sweeps the temporary files that others left
// there; a Read, which watchers make before they contend, learns the
// record if it exists and makes or removes nothing (a sweep outside the
// lock could remove a temporary file a live watcher was writing). A file
// at a temporary name that is not the protocol's stays.
func TestFlockBootRecordUnderLock(t *testing.T) {
	s, r, f := newFlockStore()
	s.PID, s.Boot = 7, func() (string, error) { return "boot-2", nil }
	for name, data := range map[string]string{
		lockPath:                 "",
		lockPath + ".boot.1":     "boot-1",                 // the previous boot's record
		lockPath + ".tmp.9.1":    "boot-1",                 // a process killed making it
		lockPath + ".tmp.9.2":    "",                       // one killed before its write
		lockPath + ".tmp.7.1":    "boot-2",                 // this PID's, of a process killed this boot
		lockPath + ".tmp.9.3":    strings.Repeat("x", 300), // not the protocol's
		"/d/leader.lock.tmp.x.1": "boot-1",                 // nor this
	} {
		f.Place(name, []byte(data), 0o644)
	}
	names := func() string {
		n, err := r.FS.ReadDir("/d")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(n)
		return strings.Join(n, " ")
	}
	before := names()
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read: %v, want ErrNotExist", err)
	}
	if got := names(); got != before {
		t.Errorf("Read changed the directory: %s, was %s", got, before)
	}
	rec, err := s.Create(60217, 9*time.Second)
	if want := (lease.Record{Holder: 60217, Epoch: lease.BootStride + 1, Version: lease.BootStride + 1}); rec != want || err != nil {
		t.Errorf("Create = %+v, %v; want %+v", rec, err, want)
	}
	if got, want := names(), "leader.lock leader.lock.boot.2 leader.lock.tmp.9.3 leader.lock.tmp.x.1"; got != want {
		t.Errorf("after Create the directory holds %s, want %s", got, want)
	}
}
