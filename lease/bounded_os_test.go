package lease_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// lockNames lists dir's names.
func lockNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// On the real file system, a thousand renewals leave the two newest
// versions; a writer that read a version long gone re-creates it, learns
// from its listing that it was superseded, and removes it again; foreign
// names, a directory and a FIFO at old versions' names are never removed
// and never stop a write.
func TestVersionedBoundedOnOS(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.lock")
	for _, n := range []string{"job.lock", "job.lock.007", "job.lock.x", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("foreign"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "job.lock.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "job.lock.2"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := len(lockNames(t, dir))
	a := &lease.VersionedFile{FS: lease.OSFS{}, Path: path, PID: 100}
	b := &lease.VersionedFile{FS: lease.OSFS{}, Path: path, PID: 200}
	// The directory and the FIFO are versions 1 and 2, held by no one
	// known: take them over.
	cur, err := a.Read()
	if err != nil || cur.Version != 2 || cur.Holder != lease.Unknown {
		t.Fatalf("read over a directory and a FIFO at versions 1 and 2: %+v, %v", cur, err)
	}
	cur, err = a.Takeover(cur, 100, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stale := cur
	most := 0
	for range 1000 {
		cur, err = a.Renew(cur, 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(lockNames(t, dir))-foreign)
	}
	if most > 2 {
		t.Errorf("up to %d names beside the %d foreign ones after a renewal, in 1,000, want at most the two newest versions", most, foreign)
	}
	// b, paused since it read version 3, renews it: link(2) re-creates
	// version 4, which the sweep removed long ago.
	_, err = b.Renew(stale, 9*time.Second)
	if !errors.Is(err, lease.ErrConflict) || !lease.Superseded(err) {
		t.Fatalf("a renewal of version %d after %d: %v, want superseded", stale.Version, cur.Version, err)
	}
	names := lockNames(t, dir)
	got := strings.Join(names, " ")
	for _, want := range []string{"job.lock ", "job.lock.007", "job.lock.x", "job.lock.1 ", "job.lock.2 ", "other"} {
		if !strings.Contains(got+" ", want) {
			t.Errorf("%q is gone: %s", want, got)
		}
	}
	if len(names) != foreign+2 {
		t.Errorf("names at the end: %s; want the %d foreign ones and the two newest versions", got, foreign)
	}
	if rec, err := a.Read(); err != nil || rec.Version != cur.Version || rec.Holder != 100 {
		t.Errorf("read after the stale write: %+v, %v; want version %d held by 100", rec, err, cur.Version)
	}
}

// The files a VersionedFile makes are readable by every participant
// whatever the process's umask: a version another user's watcher cannot
// read is waited on until it can be (a probe: a service with a umask of
// 077 beside one of another user, and nobody led again after its
// SIGKILL). Versions, the release and the boot record all get 0644.
func TestVersionedModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "job.lock")
	f := &lease.VersionedFile{FS: lease.OSFS{}, Path: path, PID: 100,
		Boot: func() (string, error) { return "boot-a", nil }}
	rec, err := f.Create(100, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = f.Renew(rec, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(rec); err != nil {
		t.Fatal(err)
	}
	names := lockNames(t, dir)
	if len(names) < 3 {
		t.Fatalf("made %v, want versions and a boot record", names)
	}
	for _, n := range names {
		st, err := os.Lstat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o644 {
			t.Errorf("%s has mode %v under a umask of 077, want -rw-r--r--", n, st.Mode())
		}
	}
}
