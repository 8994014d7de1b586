package lease

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// inotify delivers a change to the lease directory within milliseconds
// (the bound allows what a loaded machine adds to a goroutine's wake-up),
// and a change to a temporary file wakes nobody.
func TestInotifyLatency(t *testing.T) {
	const bound = 500 * time.Millisecond
	dir := t.TempDir()
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	tok := p.ChangeToken(dir)
	changed := make(chan time.Time, 1)
	go func() {
		// One visible event: the record is written under a temporary name
		// (ignored) and renamed into place, as every writer here does.
		tmp := filepath.Join(dir, "x.tmp.1")
		os.WriteFile(tmp, []byte("v"), 0o644)
		changed <- time.Now()
		os.Rename(tmp, filepath.Join(dir, "x"))
	}()
	if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
		t.Fatal("no notification within 5 s of a rename into the directory")
	}
	if lat := time.Since(<-changed); lat > bound {
		t.Errorf("notified %v after the change, want at most %v", lat, bound)
	} else {
		t.Logf("notified %v after the change", lat)
	}
	tok = p.ChangeToken(dir)
	os.WriteFile(filepath.Join(dir, "y.tmp.2"), []byte("v"), 0o644)
	if p.WaitChange(dir, tok, p.Mono()+100*time.Millisecond) {
		t.Error("woke for a temporary file")
	}
}

// A watched directory that is removed ends its watch (IN_IGNORED): the
// waiters are woken, and later waits fall back to their deadlines, capped
// at a second as a poll's, instead of waiting for events that can never
// come.
func TestRemovedDirEndsWatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "leases")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	defer p.note.close()
	tok := p.ChangeToken(dir)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
		t.Fatal("the directory's removal woke nobody within 5 s")
	}
	tok = p.ChangeToken(dir)
	start := time.Now()
	p.WaitChange(dir, tok, p.Mono()+5*time.Second)
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("a wait on a removed directory's ended watch took %v: it waited for events that cannot come", waited.Round(time.Millisecond))
	}
}

// Only the lease's own files wake its watchers once its name is known:
// another program's writes in its directory (a log beside the lease)
// woke every watcher for each write and cut every back-off short (a
// probe: a watcher whose reads failed read again at once, 33,000 times a
// second). A lease named like a temporary file still wakes them.
func TestWatchOnlyLeaseNames(t *testing.T) {
	dir := t.TempDir()
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	defer p.note.close()
	p.note.watchName(filepath.Join(dir, "job.tmp.lock"))
	quiet := []string{"run.log", "job.tmp.lockfile", "job.tmp.lock.tmp.5.1", "other.7", "job.tmp.lock.log", "job.tmp.lock.1.bak"}
	for _, name := range quiet {
		tok := p.ChangeToken(dir)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("line\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if p.WaitChange(dir, tok, p.Mono()+100*time.Millisecond) {
			t.Errorf("a write of %s woke the watcher of job.tmp.lock", name)
		}
	}
	for _, name := range []string{"job.tmp.lock.7", "job.tmp.lock.boot.2", "job.tmp.lock"} {
		tok := p.ChangeToken(dir)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("v"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
			t.Errorf("a write of %s woke nobody within 5 s", name)
		}
	}
}

// relevant's table: every event of a buffer is looked at, a nameless one
// always wakes, and without a lease name every name but a temporary
// file's does.
func TestRelevantNames(t *testing.T) {
	ev := func(name string) []byte {
		n := (len(name) + 1 + 15) / 16 * 16
		b := make([]byte, syscall.SizeofInotifyEvent+n)
		binary.NativeEndian.PutUint32(b[12:16], uint32(n))
		copy(b[syscall.SizeofInotifyEvent:], name)
		return b
	}
	lock := []string{"lock"}
	for _, c := range []struct {
		names []string
		evs   []string
		want  bool
	}{
		{lock, []string{"lock.3"}, true},
		{lock, []string{"lock"}, true},
		{lock, []string{"lock.boot.1"}, true},
		{lock, []string{""}, true},
		{lock, []string{"lock.tmp.1.2"}, false},
		{lock, []string{"lock.log"}, false},
		{lock, []string{"lock.pid"}, false},
		{lock, []string{"lock.1.bak"}, false},
		{lock, []string{"lock.boot.x"}, false},
		{lock, []string{"lock.007"}, false},
		{lock, []string{"run.log", "lockx", "lock.tmp.9.9"}, false},
		{lock, []string{"run.log", "lock.4"}, true},
		{[]string{"a", "lock"}, []string{"lock.4"}, true},
		{nil, []string{"run.log"}, true},
		{nil, []string{"x.tmp.1"}, false},
	} {
		var b []byte
		for _, n := range c.evs {
			b = append(b, ev(n)...)
		}
		if got := relevant(b, c.names); got != c.want {
			t.Errorf("names %q, events %q: relevant %v, want %v", c.names, c.evs, got, c.want)
		}
	}
}

// A directory moved away, or made only after its watch was asked for, is
// watched again at its path: the watch followed the moved directory, or
// stayed failed, and its watchers fell back to polling for the rest of
// the process's life (a probe: hand-overs 2.5 s slower after a move).
func TestWatchFollowsThePath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "leases")
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	defer p.note.close()
	p.ChangeToken(dir) // (it does not exist yet: the watch fails)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wakes := func(what string) {
		t.Helper()
		time.Sleep(retryWatch + 100*time.Millisecond)
		tok := p.ChangeToken(dir)
		start := time.Now()
		if err := os.WriteFile(filepath.Join(dir, "lock.1"), []byte("v"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
			t.Fatalf("%s: a new version woke nobody within 5 s", what)
		}
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Errorf("%s: woken after %v, a poll's delay, not a notice's", what, d)
		}
	}
	wakes("made after its watch was asked for")
	tok := p.ChangeToken(dir)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
		t.Fatal("the directory's move woke nobody within 5 s")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wakes("moved away and made again")
}

// The reference names its store's lock to the real runtime's watch, so
// that its directory's other files wake nobody (a review: a no-op there
// passed every test of the watch, which named the lease itself).
func TestReferenceNamesItsLease(t *testing.T) {
	dir := t.TempDir()
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	defer p.note.close()
	path := filepath.Join(dir, "job")
	newReference(p, &VersionedFile{FS: p, Path: path}, dir, Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second})
	p.note.mu.Lock()
	names := p.note.names[dir]
	p.note.mu.Unlock()
	if len(names) != 1 || names[0] != "job" {
		t.Fatalf("the watch of %s knows the leases %q, want [job]", dir, names)
	}
}

// A directory whose watch failed is not watched again more often than
// every retryWatch, however often it is looked at; and a token taken from
// the failed watch reads as a change on the new one (what happened
// between the two was not counted).
func TestWatchRetries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	defer p.note.close()
	tok := p.ChangeToken(dir)
	for range 50 {
		p.ChangeToken(dir)
	}
	p.note.mu.Lock()
	tries := p.note.tries
	p.note.mu.Unlock()
	if tries != 1 {
		t.Errorf("%d watches made for 51 looks at a missing directory within moments, want 1", tries)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(retryWatch + 50*time.Millisecond)
	start := time.Now()
	if !p.WaitChange(dir, tok, p.Mono()+3*time.Second) {
		t.Fatal("a token from the failed watch did not read as a change on the new one")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("the change was read after %v, not at once", d)
	}
}
