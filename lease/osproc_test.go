package lease

import (
	"bytes"
	"fmt"
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
	l := &lineWriter{w: out}
	return &osProc{start: time.Now(), monoStart: monoNow(), pid: pid, logOut: l, logErr: l, done: make(chan struct{})}
}

// waitLog waits up to within for cond, and fails, saying what it waited
// for and printing the logs, if it does not come. The deadlines are
// generous: a loaded machine is slow, and these tests judge what the
// algorithm does, not how fast the machine is.
func waitLog(t *testing.T, what string, within time.Duration, cond func() bool, logs ...*syncBuffer) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			var all strings.Builder
			for _, l := range logs {
				all.WriteString(l.String())
			}
			t.Fatalf("waited %v for %s; logs:\n%s", within, what, all.String())
		}
	}
}

// leaderOf waits until exactly one of the two processes has acquired, and
// returns it first. Which one wins depends on the machine, not on the
// algorithm: only that one does is asserted.
func leaderOf(t *testing.T, acquired string, a, b *osProc, la, lb *syncBuffer) (l, f *osProc, ll, lf *syncBuffer) {
	t.Helper()
	waitLog(t, "a process to acquire", 10*time.Second, func() bool {
		return strings.Contains(la.String(), acquired) || strings.Contains(lb.String(), acquired)
	}, la, lb)
	if strings.Contains(la.String(), acquired) && strings.Contains(lb.String(), acquired) {
		t.Fatalf("both processes acquired:\n%s%s", la.String(), lb.String())
	}
	if strings.Contains(la.String(), acquired) {
		return a, b, la, lb
	}
	return b, a, lb, la
}

// The seed variant on the real OS file system, real clock and real
// goroutines: one process acquires and renews, the other watches it; when
// the leader dies the watcher takes over after the lease expires.
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
	go Main(b, v, path, cfg)
	defer b.doneOnce.Do(func() { close(b.done) })
	defer a.doneOnce.Do(func() { close(a.done) })
	l, f, ll, lf := leaderOf(t, "[LEADER] Acquired lease at ", a, b, &la, &lb)
	renewed := fmt.Sprintf("[Process: %d] [LEADER] Lease renewed, valid until ", l.pid)
	held := fmt.Sprintf("[Process: %d] [WATCHER] Lease held by %d, valid until ", f.pid, l.pid)
	waitLog(t, "the leader to renew and the other to watch it", 10*time.Second, func() bool {
		return strings.Contains(ll.String(), renewed) && strings.Contains(lf.String(), held)
	}, ll, lf)
	// The leader rewrites the file (truncate, then write) at every
	// renewal: a read may fall between the two.
	waitLog(t, fmt.Sprintf("the lock file to name the leader %d", l.pid), 10*time.Second, func() bool {
		data, err := os.ReadFile(path)
		rec, perr := ParseRecord(data)
		return err == nil && perr == nil && rec.Holder == int64(l.pid)
	}, ll, lf)

	// SIGKILL, as far as one test binary can: the leader's goroutines stop
	// at their next blocking call and the file stays as it is.
	l.doneOnce.Do(func() { close(l.done) })
	waitLog(t, "the watcher to take over", 10*time.Second, func() bool { return strings.Contains(lf.String(), "Takeover successful") }, lf)
	if want := fmt.Sprintf("[WATCHER] Lease held by %d expired at ", l.pid); !strings.Contains(lf.String(), want) {
		t.Errorf("the watcher did not log the expiry (%q):\n%s", want, lf.String())
	}
}

// A log line on the real runtime has the post's shape.
func TestOSProcLogFormat(t *testing.T) {
	var out syncBuffer
	p := testProc(60217, &out)
	p.Log(MsgHeld, 60217, time.Date(2025, 1, 1, 21, 14, 56, 0, time.Local).Unix())
	p.FlushLog(10 * time.Second)
	got := out.String()
	if !strings.HasPrefix(got, "0.00s [Process: 60217] [WATCHER] Lease held by 60217, valid until 21:14:56\n") {
		t.Errorf("got %q", got)
	}
}

// The reference variant on the real OS file system, clock and goroutines,
// with inotify: one process leads and renews, the other watches; when the
// leader dies the watcher takes over about one lease after the last
// renewal it saw, not a lease plus a poll. (That no takeover comes before
// the lease has run out is safety, judged by the checker and by torture.)
func TestReferenceOnRealRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 2 s of real time")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "leader.lock")
	// The watch interval is far longer than the test: the watcher learns
	// of renewals by inotify (or its wake when the lease it saw can have
	// run out), never by polling.
	cfg := Config{LeaseDuration: time.Second, RenewInterval: 200 * time.Millisecond, WatchInterval: 30 * time.Second}
	v, _ := LookupVariant("reference")
	var la, lb syncBuffer
	a, b := testProc(5001, &la), testProc(5002, &lb)
	go Main(a, v, path, cfg)
	go Main(b, v, path, cfg)
	defer b.doneOnce.Do(func() { close(b.done) })
	defer a.doneOnce.Do(func() { close(a.done) })
	l, _, ll, lf := leaderOf(t, "[LEADER] Acquired lease, epoch ", a, b, &la, &lb)
	held := fmt.Sprintf("[WATCHER] Lease held by %d", l.pid)
	waitLog(t, "the leader to renew and the other to watch it", 10*time.Second, func() bool {
		return strings.Contains(ll.String(), "[LEADER] Lease renewed, version") && strings.Contains(lf.String(), held)
	}, ll, lf)
	killed := time.Now()
	l.doneOnce.Do(func() { close(l.done) })
	waitLog(t, "the watcher to take over", 10*time.Second, func() bool { return strings.Contains(lf.String(), "Takeover successful") }, lf)
	gap := time.Since(killed)
	// The last renewal was at most a renew interval (plus what a busy
	// machine adds) before the kill; a watcher that waited for its poll
	// would take the 30 s watch interval.
	if limit := cfg.LeaseDuration + 2*time.Second; gap > limit {
		t.Errorf("takeover %v after the kill, want about one lease (%v), at most %v:\n%s", gap, cfg.LeaseDuration, limit, lf.String())
	}
	t.Logf("takeover %v after the kill", gap.Round(time.Millisecond))
}
