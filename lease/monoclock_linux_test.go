package lease

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// clockNow reads clock id.
func clockNow(t testing.TB, id int32) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// timensEnv marks a test binary run in a time namespace whose
// CLOCK_BOOTTIME is 1,000 s ahead of its CLOCK_MONOTONIC
// (TestMonoClockInTimeNamespace).
const timensEnv = "LEASELAB_TEST_TIMENS"

func newTestOSProc() *osProc {
	return NewOSProcOptions(OSProcOptions{Out: io.Discard, Err: io.Discard}).(*osProc)
}

// The real runtime's Mono is CLOCK_BOOTTIME since the Proc's start, not
// CLOCK_MONOTONIC. On a machine never suspended the two clocks are one
// (this one's differ by under a microsecond), and this test tells them
// apart only in TestMonoClockInTimeNamespace's time namespace, 1,000 s
// apart.
func TestMonoReadsBootTime(t *testing.T) {
	b0 := clockNow(t, unix.CLOCK_BOOTTIME)
	p := newTestOSProc()
	m := p.Mono()
	b1 := clockNow(t, unix.CLOCK_BOOTTIME)
	if p.monoStart < b0 || p.monoStart > b1 {
		t.Errorf("Mono's origin %v is not a CLOCK_BOOTTIME reading of the Proc's start, in [%v, %v]", p.monoStart, b0, b1)
	}
	if m < 0 || m > b1-b0 {
		t.Errorf("Mono read %v at the start, want within [0, %v]", m, b1-b0)
	}
	time.Sleep(20 * time.Millisecond)
	b2 := clockNow(t, unix.CLOCK_BOOTTIME)
	m2 := p.Mono()
	b3 := clockNow(t, unix.CLOCK_BOOTTIME)
	if got := p.monoStart + m2; got < b2 || got > b3 {
		t.Errorf("Mono+origin = %v, not between CLOCK_BOOTTIME readings %v and %v", got, b2, b3)
	}
	diff := clockNow(t, unix.CLOCK_BOOTTIME) - clockNow(t, unix.CLOCK_MONOTONIC)
	t.Logf("CLOCK_BOOTTIME - CLOCK_MONOTONIC = %v", diff)
	if os.Getenv(timensEnv) != "" && diff < 999*time.Second {
		t.Fatalf("in the time namespace CLOCK_BOOTTIME is only %v ahead of CLOCK_MONOTONIC", diff)
	}
}

// In a time namespace whose CLOCK_BOOTTIME is 1,000 s ahead of its
// CLOCK_MONOTONIC, Mono's origin is the former (TestMonoReadsBootTime)
// and a timer fires at its Mono instant (TestAfterMonoFiresOnBootTime):
// on CLOCK_MONOTONIC the first would be 1,000 s off, and a timerfd on
// CLOCK_MONOTONIC armed at a CLOCK_BOOTTIME instant would fire 1,000 s
// late. (Offsets are constant: a namespace cannot stand in for a
// suspension, which moves CLOCK_BOOTTIME alone.) It needs unshare(1) and
// the privilege to make a time namespace (CAP_SYS_ADMIN), else it skips.
func TestMonoClockInTimeNamespace(t *testing.T) {
	if os.Getenv(timensEnv) != "" {
		t.Skip("in the namespace already")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	if out, err := exec.Command("unshare", "--time", "--boottime", "1000", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a time namespace: %v: %s", err, out)
	}
	cmd := exec.Command("unshare", "--time", "--boottime", "1000", os.Args[0],
		"-test.run", "^(TestMonoReadsBootTime|TestAfterMonoFiresOnBootTime)$", "-test.v", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), timensEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMonoReadsBootTime") || !strings.Contains(string(out), "--- PASS: TestAfterMonoFiresOnBootTime") {
		t.Fatalf("in a time namespace (CLOCK_BOOTTIME 1,000 s ahead): %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// fdSet lists the process's open descriptors, with what they are open
// on (the link in /proc/self/fd: "anon_inode:[timerfd]").
func fdSet(t *testing.T) map[string]string {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	m := make(map[string]string, len(es))
	for _, e := range es {
		m[e.Name()], _ = os.Readlink("/proc/self/fd/" + e.Name())
	}
	return m
}

// newTimerFDInfo returns /proc/self/fdinfo/N of the one timerfd opened
// since before (fdSet).
func newTimerFDInfo(t *testing.T, before map[string]string) string {
	t.Helper()
	var found []string
	for fd, l := range fdSet(t) {
		if l == "anon_inode:[timerfd]" && before[fd] != l {
			found = append(found, fd)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d timerfds opened by AfterMono, want 1", len(found))
	}
	b, err := os.ReadFile("/proc/self/fdinfo/" + found[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// AfterMono's timer is a timerfd on CLOCK_BOOTTIME (clockid 7 in fdinfo),
// armed at an absolute instant (settime flags 01, TFD_TIMER_ABSTIME) that
// is the Mono instant asked for.
func TestAfterMonoIsATimerFDOnBootTime(t *testing.T) {
	p := newTestOSProc()
	before := fdSet(t)
	move := p.AfterMono(p.Mono()+time.Hour, func() { t.Error("called") })
	defer move(-1)
	info := newTimerFDInfo(t, before)
	if !strings.Contains(info, "clockid: 7\n") || unix.CLOCK_BOOTTIME != 7 {
		t.Errorf("the timerfd is not on CLOCK_BOOTTIME (7):\n%s", info)
	}
	if !strings.Contains(info, "settime flags: 01\n") {
		t.Errorf("the timerfd is not armed at an absolute time:\n%s", info)
	}
	var sec, nsec int64
	if i := strings.Index(info, "it_value: "); i < 0 {
		t.Fatalf("no it_value:\n%s", info)
	} else if _, err := fmt.Sscanf(info[i:], "it_value: (%d, %d)", &sec, &nsec); err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(sec)*time.Second + time.Duration(nsec); left < 59*time.Minute || left > time.Hour {
		t.Errorf("the timerfd expires in %v, want an hour", left)
	}
	move(p.Mono() + 2*time.Hour)
	if info := newTimerFDInfo(t, before); !strings.Contains(info, "it_value: (71") {
		t.Errorf("moved two hours ahead, the timerfd says:\n%s", info)
	}
}

// fireRecorder is an AfterMono callback that records the Mono of each call.
type fireRecorder struct {
	p     *osProc
	mu    sync.Mutex
	calls []time.Duration
	ch    chan time.Duration
}

func newFireRecorder(p *osProc) *fireRecorder {
	return &fireRecorder{p: p, ch: make(chan time.Duration, 16)}
}

func (r *fireRecorder) f() {
	m := r.p.Mono()
	r.mu.Lock()
	r.calls = append(r.calls, m)
	r.mu.Unlock()
	r.ch <- m
}

// next waits for the next call, at most d.
func (r *fireRecorder) next(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	select {
	case m := <-r.ch:
		return m
	case <-time.After(d):
		t.Fatalf("not called within %v", d)
		return 0
	}
}

func (r *fireRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// late is how late a timer may fire on a loaded test machine.
const late = 2 * time.Second

// The timer calls f once Mono reaches its instant, not before, once.
func TestAfterMonoFiresOnBootTime(t *testing.T) {
	p := newTestOSProc()
	r := newFireRecorder(p)
	at := p.Mono() + 50*time.Millisecond
	move := p.AfterMono(at, r.f)
	defer move(-1)
	if m := r.next(t, 10*time.Second); m < at || m > at+late {
		t.Errorf("called at Mono %v, want %v (at most %v late)", m, at, late)
	}
	time.Sleep(50 * time.Millisecond)
	if n := r.count(); n != 1 {
		t.Errorf("called %d times", n)
	}
}

// move moves the instant later before it fires (no call at the old one),
// earlier (a call then), and arms the timer again after it has fired.
func TestAfterMonoMoves(t *testing.T) {
	p := newTestOSProc()
	r := newFireRecorder(p)
	at := p.Mono() + 30*time.Millisecond
	move := p.AfterMono(at, r.f)
	defer move(-1)
	later := at + 250*time.Millisecond
	move(later)
	for p.Mono() < at+150*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.count(); n != 0 && p.Mono() < later {
		t.Fatalf("called at the instant it was moved from (%v), not %v", r.calls[0], later)
	}
	if m := r.next(t, 10*time.Second); m < later || m > later+late {
		t.Errorf("moved to %v, called at %v", later, m)
	}
	again := p.Mono() + 40*time.Millisecond
	move(again) // after the call: arms it again
	if m := r.next(t, 10*time.Second); m < again || m > again+late {
		t.Errorf("moved after its call to %v, called again at %v", again, m)
	}
	move(p.Mono() + time.Hour)
	earlier := p.Mono() + 20*time.Millisecond
	move(earlier)
	if m := r.next(t, 10*time.Second); m < earlier || m > earlier+late {
		t.Errorf("moved from an hour ahead to %v, called at %v", earlier, m)
	}
	move(earlier) // a passed instant: at once
	r.next(t, late)
	if n := r.count(); n != 4 {
		t.Errorf("called %d times, want 4", n)
	}
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(es)
}

// waitGoroutines waits, at most a second, until at most n goroutines run.
func waitGoroutines(n int) int {
	for end := time.Now().Add(time.Second); runtime.NumGoroutine() > n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return runtime.NumGoroutine()
}

// move(-1) cancels: no call once it has returned, for timers cancelled
// before their instant and around it, nor after one call; and each leaves
// no descriptor (counted in /proc/self/fd the moment the last move(-1)
// returns) nor goroutine behind.
func TestAfterMonoCancelLeavesNothing(t *testing.T) {
	p := newTestOSProc()
	fds, gs := openFDs(t), runtime.NumGoroutine()
	room := int(timerFDMax.Load() - timerFDs.Load()) // (timerFDMax: under a soft limit of 4,000 or less)
	var calls atomic.Int64
	f := func() { calls.Add(1) }
	const n = 1000
	moves := make([]func(time.Duration), n)
	for i := range moves {
		moves[i] = p.AfterMono(p.Mono()+100*time.Millisecond, f)
		moves[i](p.Mono() + 200*time.Millisecond)
	}
	if got, want := openFDs(t)-fds, min(n, room); got != want {
		t.Errorf("%d timers armed hold %d descriptors more, want %d", n, got, want)
	}
	for _, move := range moves {
		move(-1)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d timers cancelled left %d descriptors behind", n, got-fds)
	}
	if got := waitGoroutines(gs); got > gs {
		t.Errorf("%d timers cancelled left %d goroutines behind", n, got-gs)
	}
	time.Sleep(300 * time.Millisecond)
	if c := calls.Load(); c != 0 {
		t.Errorf("%d cancelled timers were called", c)
	}

	// Cancelled around their instants: calls fall due before move(-1)
	// returns or never.
	for i := range moves {
		moves[i] = p.AfterMono(p.Mono()+time.Duration(i%7)*100*time.Microsecond, f)
	}
	time.Sleep(300 * time.Microsecond)
	for _, move := range moves {
		move(-1)
	}
	time.Sleep(20 * time.Millisecond) // calls that fell due start
	c0 := calls.Load()
	time.Sleep(100 * time.Millisecond)
	if c1 := calls.Load(); c1 != c0 {
		t.Errorf("%d calls more after their timers were cancelled", c1-c0)
	}
	t.Logf("%d of %d timers cancelled around their instants were called", c0, n)

	// Called, then cancelled: no call again.
	calls.Store(0)
	for i := range moves {
		moves[i] = p.AfterMono(p.Mono(), f)
	}
	for end := time.Now().Add(10 * time.Second); calls.Load() < n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if c := calls.Load(); c != n {
		t.Fatalf("%d of %d due timers called", c, n)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d timers fired, never cancelled, hold %d descriptors", n, got-fds)
	}
	for _, move := range moves {
		move(-1)
	}
	time.Sleep(50 * time.Millisecond)
	if c := calls.Load(); c != n {
		t.Errorf("%d calls more after the calls and move(-1)", c-n)
	}
	if got := waitGoroutines(gs); got > gs {
		t.Errorf("%d timers fired and cancelled left %d goroutines behind", n, got-gs)
	}
	// Cancelled, then moved: armed again.
	r := newFireRecorder(p)
	move := p.AfterMono(p.Mono()+time.Hour, r.f)
	move(-1)
	at := p.Mono() + 10*time.Millisecond
	move(at)
	if m := r.next(t, 10*time.Second); m < at {
		t.Errorf("called at %v, before %v", m, at)
	}
	move(-1)
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors left behind", got-fds)
	}
}

// Without a timerfd (EMFILE, or timerFDMax of them open) a timer falls back to a runtime timer, with
// the same calls: at its instant, moved, again after a call, cancelled;
// and a timer whose first arming had one falls back when it is armed
// again after its call; a fallback's move tries a timerfd again.
func TestAfterMonoFallsBackWithoutTimerFD(t *testing.T) {
	p := newTestOSProc()
	r := newFireRecorder(p)
	first := p.AfterMono(p.Mono()+20*time.Millisecond, r.f) // on a timerfd
	defer first(-1)
	r.next(t, 10*time.Second)
	saved := timerFDMax.Load()
	timerFDMax.Store(0)
	defer timerFDMax.Store(saved)
	fds := openFDs(t)
	at := p.Mono() + 30*time.Millisecond
	first(at)
	if m := r.next(t, 10*time.Second); m < at || m > at+late {
		t.Errorf("armed again on a runtime timer at %v: called at %v", at, m)
	}

	at = p.Mono() + 30*time.Millisecond
	move := p.AfterMono(at, r.f)
	later := at + 200*time.Millisecond
	move(later)
	if m := r.next(t, 10*time.Second); m < later || m > later+late {
		t.Errorf("a fallback moved to %v: called at %v", later, m)
	}
	again := p.Mono() + 20*time.Millisecond
	move(again)
	if m := r.next(t, 10*time.Second); m < again || m > again+late {
		t.Errorf("a fallback moved after its call to %v: called at %v", again, m)
	}
	move(p.Mono() + 50*time.Millisecond)
	move(-1)
	time.Sleep(150 * time.Millisecond)
	if n := r.count(); n != 4 {
		t.Errorf("called %d times, want 4", n)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("the fallback holds %d descriptors", got-fds)
	}
	// With timerfds to be had again, a move arms one.
	timerFDMax.Store(saved)
	at = p.Mono() + 30*time.Millisecond
	move(at)
	if got := openFDs(t); got != fds+1 {
		t.Errorf("a fallback moved once timerfds could be made holds %d descriptors, want 1", got-fds)
	}
	if m := r.next(t, 10*time.Second); m < at || m > at+late {
		t.Errorf("moved to %v back on a timerfd: called at %v", at, m)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("fired, it holds %d descriptors", got-fds)
	}
}

// Timers past timerFDMax are runtime timers, and fire all the same: a
// thousand timers armed and never cancelled (mTimerPerRenewal's leak)
// hold timerFDMax descriptors at most, none once they have fired.
func TestAfterMonoTimerFDsBounded(t *testing.T) {
	p := newTestOSProc()
	saved := timerFDMax.Load()
	defer timerFDMax.Store(saved)
	fds, open := openFDs(t), timerFDs.Load()
	timerFDMax.Store(open + 100)
	var calls atomic.Int64
	var early atomic.Int64
	const n = 1000
	at := p.Mono() + 300*time.Millisecond
	for range n {
		p.AfterMono(at, func() {
			if p.Mono() < at {
				early.Add(1)
			}
			calls.Add(1)
		})
	}
	if got := openFDs(t) - fds; got != 100 {
		t.Errorf("%d timers armed past a bound of 100 timerfds hold %d descriptors", n, got)
	}
	for end := time.Now().Add(10 * time.Second); calls.Load() < n && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if c, e := calls.Load(), early.Load(); c != n || e != 0 {
		t.Errorf("%d of %d timers called, %d before their instant", c, n, e)
	}
	if got := openFDs(t) - fds; got != 0 {
		t.Errorf("%d timers fired hold %d descriptors", n, got)
	}
	if got := timerFDs.Load(); got != open {
		t.Errorf("timerFDs counts %d open, want %d", got, open)
	}
}

// Mono costs a clock_gettime(2) system call now (x/sys/unix makes no vDSO
// call), where time.Since(start) costs the vDSO's CLOCK_MONOTONIC.
func BenchmarkMono(b *testing.B) {
	p := newTestOSProc()
	b.Run("boottime", func(b *testing.B) {
		for b.Loop() {
			p.Mono()
		}
	})
	b.Run("time.Since", func(b *testing.B) {
		for b.Loop() {
			time.Since(p.start)
		}
	})
}

// AfterMono's arming, one move and its cancelling: a timerfd, a goroutine
// and four system calls, against a runtime timer's.
func BenchmarkAfterMono(b *testing.B) {
	p := newTestOSProc()
	f := func() {}
	b.Run("timerfd", func(b *testing.B) {
		for b.Loop() {
			move := p.AfterMono(p.Mono()+time.Hour, f)
			move(p.Mono() + 2*time.Hour)
			move(-1)
		}
	})
	b.Run("timerfd-move", func(b *testing.B) {
		move := p.AfterMono(p.Mono()+time.Hour, f)
		defer move(-1)
		for b.Loop() {
			move(p.Mono() + 2*time.Hour)
		}
	})
	b.Run("runtime-timer", func(b *testing.B) {
		for b.Loop() {
			t := time.AfterFunc(time.Hour, f)
			t.Reset(2 * time.Hour)
			t.Stop()
		}
	})
	b.Run("runtime-timer-move", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, f)
		defer t.Stop()
		for b.Loop() {
			t.Reset(time.Since(p.start) + 2*time.Hour)
		}
	})
}
