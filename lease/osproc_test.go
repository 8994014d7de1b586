package lease

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink shared by goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testProc is the real runtime with a made-up pid whose Exit ends only its
// own goroutines, so that two "processes" can contend in one test binary.
func testProc(pid int, out *syncBuffer) *osProc {
	return &osProc{start: time.Now(), pid: pid, out: out, errw: out, done: make(chan struct{})}
}

// The seed variant on the real OS file system, real clock and real
// goroutines: one process acquires and renews, another watches; when the
// leader dies the watcher takes over after the lease expires.
func TestSeedOnRealRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 3 s of real time")
	}
	path := filepath.Join(t.TempDir(), "leader.lock")
	cfg := Config{LeaseDuration: time.Second, RenewInterval: 200 * time.Millisecond, WatchInterval: 200 * time.Millisecond}
	v, _ := LookupVariant("seed")
	var la, lb syncBuffer
	a, b := testProc(4001, &la), testProc(4002, &lb)
	go Main(a, v, path, cfg)
	time.Sleep(50 * time.Millisecond)
	go Main(b, v, path, cfg)

	time.Sleep(500 * time.Millisecond)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ParseRecord(data)
	if err != nil || rec.Holder != 4001 || rec.Until < time.Now().Unix() {
		t.Fatalf("lock file %q: %+v, %v; want held by 4001 and unexpired", data, rec, err)
	}
	if !strings.Contains(la.String(), "[Process: 4001] [LEADER] Lease renewed, valid until ") ||
		!strings.Contains(lb.String(), "[Process: 4002] [WATCHER] Lease held by 4001, valid until ") {
		t.Fatalf("logs:\n%s%s", la.String(), lb.String())
	}

	// SIGKILL, as far as one test binary can: a's goroutines stop at their
	// next blocking call and the file stays as it is.
	a.doneOnce.Do(func() { close(a.done) })
	deadline := time.Now().Add(4 * time.Second)
	for !strings.Contains(lb.String(), "Takeover successful") {
		if time.Now().After(deadline) {
			t.Fatalf("no takeover within 4 s:\n%s", lb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.doneOnce.Do(func() { close(b.done) })
	if !strings.Contains(lb.String(), "[WATCHER] Lease held by 4001 expired at ") {
		t.Errorf("the watcher did not log the expiry:\n%s", lb.String())
	}
}

// A log line on the real runtime has the post's shape.
func TestOSProcLogFormat(t *testing.T) {
	var out syncBuffer
	p := testProc(60217, &out)
	p.Log(MsgHeld, 60217, time.Date(2025, 1, 1, 21, 14, 56, 0, time.Local).Unix())
	got := out.String()
	if !strings.HasPrefix(got, "0.00s [Process: 60217] [WATCHER] Lease held by 60217, valid until 21:14:56\n") {
		t.Errorf("got %q", got)
	}
}

// The reference variant on the real OS file system, clock and goroutines,
// with inotify: one process leads and renews, the other watches; when the
// leader dies the watcher takes over one lease after the last renewal it
// saw, not a lease plus a poll.
func TestReferenceOnRealRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 2 s of real time")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "leader.lock")
	cfg := Config{LeaseDuration: time.Second, RenewInterval: 200 * time.Millisecond, WatchInterval: 5 * time.Second}
	v, _ := LookupVariant("reference")
	var la, lb syncBuffer
	a, b := testProc(5001, &la), testProc(5002, &lb)
	go Main(a, v, path, cfg)
	time.Sleep(100 * time.Millisecond)
	go Main(b, v, path, cfg)
	time.Sleep(700 * time.Millisecond)
	if !strings.Contains(la.String(), "[LEADER] Acquired lease, epoch 1 (version 1)") ||
		!strings.Contains(la.String(), "[LEADER] Lease renewed, version") ||
		!strings.Contains(lb.String(), "[WATCHER] Lease held by 5001") {
		t.Fatalf("logs:\n%s%s", la.String(), lb.String())
	}
	// The watch interval is 5 s: only a notification can show the watcher
	// each renewal in time to take over one lease after the last one.
	killed := time.Now()
	a.doneOnce.Do(func() { close(a.done) })
	for !strings.Contains(lb.String(), "Takeover successful") {
		if time.Since(killed) > 3*time.Second {
			t.Fatalf("no takeover within 3 s:\n%s", lb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	gap := time.Since(killed)
	b.doneOnce.Do(func() { close(b.done) })
	// The last renewal was at most 200 ms before the kill.
	if gap > cfg.LeaseDuration+500*time.Millisecond || gap < cfg.LeaseDuration-300*time.Millisecond {
		t.Errorf("takeover %v after the kill, want about one lease (%v)", gap, cfg.LeaseDuration)
	}
	t.Logf("takeover %v after the kill", gap.Round(time.Millisecond))
}

// inotify delivers a change to the lease directory within milliseconds.
func TestInotifyLatency(t *testing.T) {
	dir := t.TempDir()
	p := testProc(1, &syncBuffer{})
	defer p.doneOnce.Do(func() { close(p.done) })
	tok := p.ChangeToken(dir)
	var changed time.Time
	go func() {
		time.Sleep(50 * time.Millisecond)
		changed = time.Now()
		os.WriteFile(filepath.Join(dir, "x"), []byte("v"), 0o644)
	}()
	if !p.WaitChange(dir, tok, p.Mono()+5*time.Second) {
		t.Fatal("no notification within 5 s")
	}
	if lat := time.Since(changed); lat > 50*time.Millisecond {
		t.Errorf("notified %v after the change", lat)
	} else {
		t.Logf("notified %v after the change", lat)
	}
	time.Sleep(50 * time.Millisecond) // one write is several events (create, modify, close)
	if p.WaitChange(dir, p.ChangeToken(dir), p.Mono()+20*time.Millisecond) {
		t.Error("woke without a change")
	}
}
