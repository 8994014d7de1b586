package lease

import (
	"os"
	"path/filepath"
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
