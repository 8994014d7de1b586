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
