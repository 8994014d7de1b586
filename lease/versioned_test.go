package lease_test

import (
	"errors"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"pgregory.net/rapid"
)

// FuzzVersionedRecord: the reference store's record parser never panics,
// accepts only what it writes, and reads back what it writes.
func FuzzVersionedRecord(f *testing.F) {
	for _, s := range []string{`{"processId":1,"epoch":1}`, ``, `{`, `{"processId":-1,"epoch":1}`, `{"processId":1,"epoch":0}`,
		`{"processId":123456789012345678,"epoch":9}`, "\x00\xff",
		`{"processId":1,"epoch":1,"leaseMs":9000}`, `{"processId":1,"epoch":1,"leaseMs":0}`, `{"processId":1,"epoch":1,"leaseMs":-5}`,
		`{"processId":1,"epoch":1,"leaseMs":86400001}`, `{"processId":1,"epoch":1,"leaseMs":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := lease.ParseVersioned(b)
		if err != nil {
			return
		}
		if got := string(lease.AppendVersioned(nil, r)); got != string(b) {
			t.Fatalf("%q parsed as %+v, which encodes as %q", b, r, got)
		}
	})
}

// Every record a process can write reads back as written, whatever its
// holder: a holder id of 19 digits (10^18 or more, as a random int63 is
// nine times in ten) was written and then read by every other process as
// garbage, which took over after its own shorter lease while the holder
// led (a probe, with lease.Run on the real file system).
func TestVersionedRecordRoundTrip(t *testing.T) {
	check := func(r lease.Record) {
		t.Helper()
		b := lease.AppendVersioned(nil, r)
		if got, err := lease.ParseVersioned(b); err != nil || got != r {
			t.Errorf("%s read back as %+v, %v; want %+v", b, got, err, r)
		}
	}
	for _, h := range []int64{0, 1, 999_999_999_999_999_999, 1_000_000_000_000_000_000, math.MaxInt64} {
		for _, e := range []int64{1, 1_000_000_000_000_000_000, math.MaxInt64} {
			check(lease.Record{Holder: h, Epoch: e})
			check(lease.Record{Holder: h, Epoch: e, TTL: 9 * time.Second})
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		r := lease.Record{Holder: rapid.Int64Min(0).Draw(t, "holder"), Epoch: rapid.Int64Min(1).Draw(t, "epoch")}
		if rapid.Bool().Draw(t, "ttl") {
			r.TTL = time.Duration(rapid.Int64Range(1, 86_400_000).Draw(t, "ms")) * time.Millisecond
		}
		b := lease.AppendVersioned(nil, r)
		if got, err := lease.ParseVersioned(b); err != nil || got != r {
			t.Fatalf("%s read back as %+v, %v; want %+v", b, got, err, r)
		}
	})
	// One past the range is refused, not wrapped.
	if r, err := lease.ParseVersioned([]byte(`{"processId":9223372036854775808,"epoch":1}`)); err == nil {
		t.Errorf("a holder past int64 parsed as %+v", r)
	}
}

// A record states the lease its writer held it for, and a reader gets it
// back (Record.TTL), rounded up to a millisecond; a record written before
// leases were stated reads with TTL 0; a stated lease that is not a
// positive number of milliseconds up to a day is not a record.
func TestVersionedRecordStatesItsLease(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	a := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 100}
	b := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 200}
	w, err := a.Create(100, 27*time.Second+time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	want := 27001 * time.Millisecond
	if w.TTL != want {
		t.Errorf("Create returned TTL %v, want %v (rounded up to a millisecond)", w.TTL, want)
	}
	data, err := f.ReadFile(lockPath + ".1")
	if err != nil || string(data) != `{"processId":100,"epoch":1,"leaseMs":27001}` {
		t.Errorf("version 1 holds %q, %v", data, err)
	}
	if r, err := b.Read(); err != nil || r.TTL != want || r.Holder != 100 {
		t.Errorf("Read = %+v, %v; want holder 100 with TTL %v", r, err, want)
	}
	r, err := a.Renew(w, 9*time.Second)
	if err != nil || r.TTL != 9*time.Second {
		t.Fatalf("Renew with a 9 s lease = %+v, %v", r, err)
	}
	if r, err := b.Read(); err != nil || r.TTL != 9*time.Second {
		t.Errorf("Read after the renewal = %+v, %v; want TTL 9s", r, err)
	}
	for _, c := range []struct {
		data string
		ttl  time.Duration
		ok   bool
	}{
		{`{"processId":7,"epoch":3}`, 0, true},
		{`{"processId":7,"epoch":3,"leaseMs":1}`, time.Millisecond, true},
		{`{"processId":7,"epoch":3,"leaseMs":86400000}`, 24 * time.Hour, true},
		{`{"processId":7,"epoch":3,"leaseMs":86400001}`, 0, false},
		{`{"processId":7,"epoch":3,"leaseMs":0}`, 0, false},
		{`{"processId":7,"epoch":3,"leaseMs":-9000}`, 0, false},
		{`{"processId":7,"epoch":3,"leaseMs":9000,"x":1}`, 0, false},
		{`{"processId":7,"epoch":3,"leaseMs":}`, 0, false},
	} {
		r, err := lease.ParseVersioned([]byte(c.data))
		if (err == nil) != c.ok || c.ok && r.TTL != c.ttl {
			t.Errorf("ParseVersioned(%s) = %+v, %v; want ok %v with TTL %v", c.data, r, err, c.ok, c.ttl)
		}
	}
}

// eioReads fails every ReadFile with EIO while on: a disk that cannot
// read a version's content, though its name is there.
type eioReads struct {
	lease.FS
	on bool
}

func (e *eioReads) ReadFile(name string) ([]byte, error) {
	if e.on {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EIO}
	}
	return e.FS.ReadFile(name)
}

// A version whose content cannot be read (EIO) is named by its version
// alone. Read reports it held by lease.Unknown, with the error, so that the
// observer's clock for it starts but nothing is taken over on a lease it
// has not read; a takeover of that record is a compare-and-set on the
// version, whatever it holds, here a release. Create cannot tell a
// release from a lease and must not say a record exists: it returns the
// I/O error (the model rejects "exists" from an empty register).
func TestVersionedUnreadableVersion(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	a := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 100}
	eio := &eioReads{FS: f.View(f.NewFDTable())}
	b := &lease.VersionedFile{FS: eio, Path: lockPath, PID: 200}
	v1, err := a.Create(100, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(v1); err != nil {
		t.Fatal(err)
	}
	eio.on = true
	rec, err := b.Read()
	if !errors.Is(err, syscall.EIO) || rec != (lease.Record{Holder: lease.Unknown, Version: 2}) {
		t.Errorf("Read of a released version that cannot be read = %+v, %v; want {Holder: Unknown, Version: 2}, EIO", rec, err)
	}
	if _, err := b.Create(200, time.Second); err == nil || errors.Is(err, fs.ErrExist) || !errors.Is(err, syscall.EIO) {
		t.Errorf("Create over a released version that cannot be read: %v, want EIO (not EEXIST)", err)
	}
	got, err := b.Takeover(rec, 200, time.Second)
	if want := (lease.Record{Holder: 200, Epoch: 3, Version: 3, TTL: time.Second}); err != nil || got != want {
		t.Errorf("Takeover(%+v) = %+v, %v; want %+v", rec, got, err, want)
	}
	if _, err := b.Takeover(rec, 300, time.Second); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("a second Takeover(%+v): %v, want ErrConflict", rec, err)
	}
	// Content that is not a record is one held by Unknown, for good: that
	// record exists.
	if err := f.Place(lockPath+".4", []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	eio.on = false
	if rec, err := b.Read(); err != nil || rec != (lease.Record{Holder: lease.Unknown, Version: 4}) {
		t.Errorf("Read of a foreign version = %+v, %v; want {Holder: Unknown, Version: 4}", rec, err)
	}
	if _, err := b.Create(200, time.Second); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a foreign version: %v, want EEXIST", err)
	}
}

// A store on a machine without a boot id (Boot nil) never hands out an
// epoch below the one it replaces, even where a runtime with a boot id
// (another container on a shared volume) numbered epochs by boot: the
// next term's epoch is above both base+version and the replaced record's
// epoch. (Found by review: without it, 0+version fell below (K-1)*1e9.)
func TestVersionedEpochsNeverGoBack(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	boot := func() (string, error) { return "boot-b", nil }
	withBoot := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 100, Boot: boot}
	// An earlier boot's record first, so that withBoot's epochs are 1e9 + version.
	earlier := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 50,
		Boot: func() (string, error) { return "boot-a", nil }}
	if _, err := earlier.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of an empty directory: %v", err)
	}
	v1, err := withBoot.Create(100, time.Second)
	if err != nil || v1.Epoch <= lease.BootStride {
		t.Fatalf("Create with a boot id: %+v, %v; want an epoch above %d", v1, err, lease.BootStride)
	}
	without := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 200}
	v2, err := without.Takeover(v1, 200, time.Second)
	if err != nil || v2.Epoch <= v1.Epoch {
		t.Errorf("Takeover without a boot id: %+v, %v; want an epoch above %d", v2, err, v1.Epoch)
	}
	if err := without.Release(v2); err != nil {
		t.Fatal(err)
	}
	v3, err := without.Create(200, time.Second)
	if err != nil || v3.Epoch <= v2.Epoch {
		t.Errorf("Create after a release without a boot id: %+v, %v; want an epoch above %d", v3, err, v2.Epoch)
	}
}

// A name of a boot record's form whose number no machine reaches (a
// foreign file: the directory is shared with something else) is not a
// boot record: it neither sets the epoch base, whose (K-1)*BootStride
// would overflow, nor is it removed. Numbers up to MaxBootRecord are the
// protocol's.
func TestVersionedForeignBootNumber(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	view := f.View(f.NewFDTable())
	foreign := lockPath + ".boot.99999999999"
	if err := lease.WriteFile(view, foreign, []byte("boot-a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &lease.VersionedFile{FS: view, Path: lockPath, PID: 100, Boot: func() (string, error) { return "boot-a", nil }}
	rec, err := s.Create(100, time.Second)
	if err != nil || rec.Epoch != 1 {
		t.Fatalf("Create beside %s: %+v, %v; want epoch 1 (boot record 1, version 1)", foreign, rec, err)
	}
	names, err := view.ReadDir("/d")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"leader.lock.1", "leader.lock.boot.1", "leader.lock.boot.99999999999"}
	if !slices.Equal(names, want) {
		t.Errorf("directory: %q, want %q", names, want)
	}
	if lease.MaxBootRecord*lease.BootStride/lease.BootStride != lease.MaxBootRecord || lease.MaxBootRecord*lease.BootStride > math.MaxInt64-1e18 {
		t.Errorf("MaxBootRecord %d: its base overflows, or leaves no room for versions", lease.MaxBootRecord)
	}
}

// Versions another process wrote are removed once they are below the two
// kept: read first, and taken for the protocol's own because they hold a
// record, the lease its writer held included.
func TestVersionedSweepsOthersVersions(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	a := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 100}
	b := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 200}
	rec, err := a.Create(100, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = a.Renew(rec, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	if rec, err = b.Takeover(rec, 200, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if rec, err = b.Renew(rec, 9*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	names, err := f.View(f.NewFDTable()).ReadDir("/d")
	if want := []string{"leader.lock.4", "leader.lock.5"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("after a's versions 1 and 2 and b's 3 to 5: %q, %v; want %q", names, err, want)
	}
}

// Two processes that share a PID (containers, each in a PID namespace of
// its own, on one lock directory) make temporary files of the same names:
// a name that exists is not a record. A create beside another process's
// temporary file of the same name succeeds, and so does one after the
// first 63 names of its PID are taken; with all 64 of the next taken it
// fails, but not with "a lease exists".
func TestVersionedSharedPIDTemporaryNames(t *testing.T) {
	f := sim.NewFileSystem()
	f.MkdirAll("/d")
	a := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 1}
	b := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 1}
	taken := func(from, to int) {
		t.Helper()
		for i := from; i <= to; i++ {
			if err := f.Place(lockPath+".tmp.1."+strconv.Itoa(i), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	taken(1, 1) // b's first temporary name, under way
	r, err := a.Create(1, 9*time.Second)
	if err != nil || r.Version != 1 {
		t.Fatalf("Create beside another process's temporary file of the same name = %+v, %v; want version 1", r, err)
	}
	taken(3, 65)
	if r, err = a.Renew(r, 9*time.Second); err != nil || r.Version != 2 {
		t.Fatalf("Renew with 63 temporary names of its PID taken = %+v, %v; want version 2", r, err)
	}
	taken(67, 130)
	_, err = a.Renew(r, 9*time.Second)
	if err == nil || errors.Is(err, fs.ErrExist) || errors.Is(err, lease.ErrConflict) {
		t.Errorf("Renew with its next 64 temporary names taken: %v; want an error that is neither EEXIST nor a conflict", err)
	}
	if got, err := b.Read(); err != nil || got.Version != 2 {
		t.Errorf("Read = %+v, %v; want version 2", got, err)
	}
}

// failingReads is a file system whose next reads of whole files fail
// with errno.
type failingReads struct {
	lease.FS
	errno syscall.Errno
	left  int
}

func (f *failingReads) ReadFile(name string) ([]byte, error) {
	if f.left > 0 {
		f.left--
		return nil, &fs.PathError{Op: "read", Path: name, Err: f.errno}
	}
	return f.FS.ReadFile(name)
}

// A version whose read fails says only that it could not be read this
// time, whatever the error, unless the error says the name holds no
// record for good (a directory, not a regular file, too large): Read
// returns the version held by Unknown with the error, and reads it again
// next time. (A probe: ENOSPC and EACCES made garbage, cached for the
// version's life, and a 3 s watcher took over a 9 s lease at 3 s.)
func TestVersionedReadErrorsAreNotGarbage(t *testing.T) {
	for _, c := range []struct {
		errno   syscall.Errno
		garbage bool
		times   int // reads that fail (0: one)
	}{
		{syscall.EIO, false, 0}, {syscall.EMFILE, false, 0}, {syscall.ENOSPC, false, 0}, {syscall.EACCES, false, 0},
		{syscall.ESTALE, false, 0}, {syscall.EPERM, false, 0}, {syscall.ENOMEM, false, 0},
		{syscall.EISDIR, true, 0}, {syscall.EINVAL, true, 0}, {syscall.EFBIG, true, 0}, {syscall.ELOOP, true, 0}, {syscall.ENXIO, true, 0},
		{syscall.ENOENT, true, 3}, // a name that vanished three times
	} {
		f := sim.NewFileSystem()
		f.MkdirAll("/d")
		w := &lease.VersionedFile{FS: f.View(f.NewFDTable()), Path: lockPath, PID: 1}
		want, err := w.Create(1, 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ff := &failingReads{FS: f.View(f.NewFDTable()), errno: c.errno, left: max(c.times, 1)}
		r := &lease.VersionedFile{FS: ff, Path: lockPath, PID: 2}
		got, err := r.Read()
		switch {
		case got.Holder != lease.Unknown || got.Version != want.Version:
			t.Errorf("%v: Read = %+v, %v; want version %d held by Unknown", c.errno, got, err, want.Version)
		case c.garbage && err != nil:
			t.Errorf("%v: Read = %+v, %v; want garbage: no error", c.errno, got, err)
		case !c.garbage && !errors.Is(err, c.errno):
			t.Errorf("%v: Read = %+v, %v; want the error", c.errno, got, err)
		}
		got, err = r.Read()
		if !c.garbage && (err != nil || got != want) {
			t.Errorf("%v: the read after = %+v, %v; want %+v, read again", c.errno, got, err, want)
		}
	}
}

// linkHook is a file system that runs before ahead of the first link it
// is asked for: a writer paused between its temporary file and its link.
type linkHook struct {
	lease.FS
	before func(tmp string)
}

func (l *linkHook) Link(oldname, newname string) error {
	if f := l.before; f != nil {
		l.before = nil
		f(oldname)
	}
	return l.FS.Link(oldname, newname)
}

// instance is a lease.Instancer Proc (its other methods unused).
type instance struct {
	lease.Proc
	n uint64
}

func (i instance) Instance() uint64 { return i.n }

// A writer paused between its temporary file and its link, whose file a
// sweep removed (a paused writer looks like a dead one), must not publish
// the file another process of its PID has since made under the same name:
// temporary names start at a base no two processes of one PID share
// (lease.TempBase). With one base (the store before 2026-12-07's evening)
// the other's content is linked as the paused writer's version; a check of
// three processes of PID 1 produced it (a leader paused with its SIGTERM
// pending; the README's "Shared PIDs").
func TestVersionedSharedPIDPausedLink(t *testing.T) {
	for _, c := range []struct {
		name      string
		a, b      int64
		published bool
	}{
		{"one base", 0, 0, true},
		{"instances", lease.TempBase(instance{n: 0}), lease.TempBase(instance{n: 2}), false},
		{"random", lease.RandomTempBase(), lease.RandomTempBase(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := sim.NewFileSystem()
			f.MkdirAll("/d")
			fa, fb := f.View(f.NewFDTable()), f.View(f.NewFDTable())
			hook := &linkHook{FS: fa}
			a := &lease.VersionedFile{FS: hook, Path: lockPath, PID: 1, TempBase: c.a}
			b := &lease.VersionedFile{FS: fb, Path: lockPath, PID: 1, TempBase: c.b}
			hook.before = func(tmp string) {
				if err := fb.Remove(tmp); err != nil { // the sweep
					t.Fatal(err)
				}
				name, fd, err := b.OpenTempForTest() // b's write, paused before its link
				if err != nil {
					t.Fatal(err)
				}
				if _, err := fb.Write(fd, []byte(`{"processId":1,"epoch":9,"leaseMs":9000}`)); err != nil {
					t.Fatal(err)
				}
				fb.Close(fd)
				if (name == tmp) != c.published {
					t.Errorf("b's temporary name %s, a's %s", name, tmp)
				}
			}
			_, err := a.Create(1, 9*time.Second)
			got, rerr := b.Read()
			if c.published {
				if err != nil || rerr != nil || got.Epoch != 9 {
					t.Errorf("with one base: a's create %v, then a read %+v, %v; want b's content published as a's version", err, got, rerr)
				}
				return
			}
			if !errors.Is(err, fs.ErrNotExist) || !errors.Is(rerr, fs.ErrNotExist) {
				t.Errorf("a's create = %v, then a read = %+v, %v; want its link to fail (ENOENT) and no version", err, got, rerr)
			}
		})
	}
}

// RandomTempBase is what its doc says: a multiple of 2^16 below 2^56, so
// that its name's SEQ, 17 digits at most, parses (decimal takes 18), and
// drawn from 2^40 values: over 64 draws, one at least at or above 2^52
// (each falls there with probability 15/16). (It was below 2^39, one of
// 2^23: a review, helper-103.)
func TestRandomTempBaseRange(t *testing.T) {
	high := false
	for range 64 {
		b := lease.RandomTempBase()
		if b < 0 || b >= 1<<56 || b%(1<<16) != 0 {
			t.Fatalf("RandomTempBase() = %d: want a multiple of 2^16 in [0, 2^56)", b)
		}
		high = high || b >= 1<<52
	}
	if !high {
		t.Errorf("64 draws of RandomTempBase all below 2^52: not drawn from [0, 2^56)")
	}
}
