package lease_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// lockedBuffer is a log sink for Run's lines, written from its goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// spyStore wraps a store: it calls onRelease before each Release, and
// fails every Renew with EIO while failRenew is set.
type spyStore struct {
	lease.Store
	mu         sync.Mutex
	onRelease  func()
	failRenew  bool
	renewDelay time.Duration // each Renew takes this long first
	hangFrom   int           // if set, only the Renews from this one (1-based) are delayed
	creates    []time.Time   // when each Create was called
	renews     []time.Time   // when each Renew was called
}

func (s *spyStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	s.creates = append(s.creates, time.Now())
	s.mu.Unlock()
	return s.Store.Create(holder, ttl)
}

func (s *spyStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	fail, delay := s.failRenew, s.renewDelay
	s.renews = append(s.renews, time.Now())
	if len(s.renews) < s.hangFrom {
		delay = 0
	}
	s.mu.Unlock()
	time.Sleep(delay)
	if fail {
		return lease.Record{}, &os.PathError{Op: "link", Path: "spy", Err: syscall.EIO}
	}
	return s.Store.Renew(cur, ttl)
}

func (s *spyStore) Release(cur lease.Record) error {
	if s.onRelease != nil {
		s.onRelease()
	}
	return s.Store.Release(cur)
}

// runAsync starts lease.Run and returns a channel that gets its result.
func runAsync(ctx context.Context, s lease.Store, cfg lease.Config, o lease.RunOptions) <-chan error {
	done := make(chan error, 1)
	go func() { done <- lease.Run(ctx, s, cfg, o) }()
	return done
}

// started returns callbacks that send each leader context to a channel.
func started() (lease.Callbacks, <-chan context.Context) {
	ch := make(chan context.Context, 4)
	return lease.Callbacks{OnStartedLeading: func(ctx context.Context) { ch <- ctx }}, ch
}

func waitCtx(t *testing.T, ch <-chan context.Context, what string) context.Context {
	t.Helper()
	select {
	case ctx := <-ch:
		return ctx
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not leading within 10 s", what)
		return nil
	}
}

// On the real OS, OnStartedLeading may block until its context is done,
// as client-go's may: the renewals go on, and one term lasts. (Called on
// Run's goroutine, it held them up: the term ended at its local deadline
// and began again, every 0.93 s.)
func TestRunOnStartedLeadingMayBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: time.Second, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	var terms, returned, early atomic.Int32
	ended := make(chan struct{}, 8)
	cfg.Callbacks.OnStartedLeading = func(ctx context.Context) {
		terms.Add(1)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // winding down
		returned.Add(1)
		ended <- struct{}{}
	}
	// OnStoppedLeading comes once OnStartedLeading has returned: work it
	// started and counted (a WaitGroup's Add) is there to wait for.
	cfg.Callbacks.OnStoppedLeading = func() {
		if returned.Load() != terms.Load() {
			early.Add(1)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	if err := lease.Run(ctx, lease.NewFileStore(path), cfg, lease.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked callback's context was not done after Run returned")
	}
	if n := terms.Load(); n != 1 {
		t.Errorf("%d terms in 3.5 s of a lone process with a 1 s lease whose OnStartedLeading blocks; want 1", n)
	}
	if n := early.Load(); n != 0 {
		t.Errorf("OnStoppedLeading was called %d times before OnStartedLeading had returned", n)
	}
}

// Cancelling Run's context while it leads ends the leader's context
// first, then tells OnStoppedLeading, then releases by compare-and-set,
// and Run returns nil at once (not at its next renewal), leaving the
// lease released. (Had it called os.Exit, the test binary would report
// it.)
func TestRunCancelReleasesAndReturns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	// Renewals far apart: returning promptly must not wait for one.
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second, WatchInterval: 10 * time.Second}
	cb, leading := started()
	var stoppedAt, releasedAt time.Time
	var leaderDoneAtRelease, stoppedBeforeRelease bool
	var lctx context.Context
	cb.OnStoppedLeading = func() { stoppedAt = time.Now() }
	cfg.Callbacks = cb
	s := &spyStore{Store: lease.NewFileStore(path)}
	s.onRelease = func() {
		releasedAt = time.Now()
		leaderDoneAtRelease = lctx.Err() != nil
		stoppedBeforeRelease = !stoppedAt.IsZero()
	}
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log})
	lctx = waitCtx(t, leading, "a lone process")
	time.Sleep(50 * time.Millisecond) // leading, between renewals
	cancelled := time.Now()
	cancel()
	select {
	case <-lctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the leader's context was not done within 1 s of cancelling Run's")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("Run had not returned 2 s after its context was cancelled; log:\n%s", log.String())
	}
	if took := time.Since(cancelled); took > time.Second {
		t.Errorf("Run returned %v after cancel, want well under the renew interval", took)
	}
	switch {
	case releasedAt.IsZero():
		t.Errorf("no release was written; log:\n%s", log.String())
	case !leaderDoneAtRelease:
		t.Error("the release was written while the leader's context was still live")
	case !stoppedBeforeRelease:
		t.Error("the release was written before OnStoppedLeading")
	}
	if rec, err := lease.NewFileStore(path).Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Run: record %+v, %v; want a released one (which reads as none)", rec, err)
	}
	for _, line := range []string{"[LEADER] Acquired lease, epoch 1 (version 1)", "Received shutdown signal, releasing lease", "Lease released"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log lacks %q:\n%s", line, log.String())
		}
	}
}

// A watcher whose context is cancelled returns at once, although its
// next wake-up (the lease's expiry, a poll) is far off, and writes
// nothing; the leader is undisturbed. Each Run has its own holder id.
func TestRunWatcherReturnsPromptly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	for _, poll := range []bool{false, true} {
		cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second, WatchInterval: 10 * time.Second, Poll: poll}
		cb, leading := started()
		cfg.Callbacks = cb
		lctxA, cancelA := context.WithCancel(context.Background())
		doneA := runAsync(lctxA, lease.NewFileStore(path), cfg, lease.RunOptions{ID: 1001})
		waitCtx(t, leading, "the first process")
		before, err := lease.NewFileStore(path).Read()
		if err != nil {
			t.Fatal(err)
		}
		var log lockedBuffer
		cfg.Callbacks = lease.Callbacks{OnStartedLeading: func(context.Context) { t.Error("the watcher led") }}
		ctxB, cancelB := context.WithCancel(context.Background())
		doneB := runAsync(ctxB, lease.NewFileStore(path), cfg, lease.RunOptions{ID: 1002, Log: &log})
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(log.String(), "[WATCHER] Lease held by 1001") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancelled := time.Now()
		cancelB()
		select {
		case err := <-doneB:
			if err != nil {
				t.Errorf("poll %v: the watcher's Run returned %v", poll, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("poll %v: the watcher's Run had not returned 5 s after cancel; log:\n%s", poll, log.String())
		}
		if took := time.Since(cancelled); took > time.Second {
			t.Errorf("poll %v: the watcher returned %v after cancel, want at once", poll, took)
		}
		if !strings.Contains(log.String(), "Not leading, nothing to release") {
			t.Errorf("poll %v: log:\n%s", poll, log.String())
		}
		after, err := lease.NewFileStore(path).Read()
		if err != nil || after != before {
			t.Errorf("poll %v: the record went from %+v to %+v (%v) while only a watcher stopped", poll, before, after, err)
		}
		cancelA()
		if err := <-doneA; err != nil {
			t.Errorf("poll %v: the leader's Run returned %v", poll, err)
		}
	}
}

// When renewals keep failing, the context OnStartedLeading was given ends
// at the local deadline (RenewDeadline after the acquiring write was
// started), not before and not much after, OnStoppedLeading follows, and
// each failure reaches OnError.
func TestRunContextEndsAtLocalDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	const deadline = 600 * time.Millisecond
	cfg := lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: 100 * time.Millisecond, WatchInterval: time.Second, RenewDeadline: deadline}
	cb, leading := started()
	stopped := make(chan struct{}, 4)
	cb.OnStoppedLeading = func() { stopped <- struct{}{} }
	var mu sync.Mutex
	var renewErrs int
	cb.OnError = func(op string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if op == "renew" && errors.Is(err, syscall.EIO) {
			renewErrs++
		}
	}
	cfg.Callbacks = cb
	s := &spyStore{Store: lease.NewFileStore(path), failRenew: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, s, cfg, lease.RunOptions{})
	defer func() {
		cancel()
		<-done
	}()
	lctx := waitCtx(t, leading, "a lone process")
	derived, stop := context.WithCancel(lctx) // (an HTTP request's, say)
	defer stop()
	s.mu.Lock()
	acquired := s.creates[0] // the deadline runs from before this call
	s.mu.Unlock()
	select {
	case <-lctx.Done():
	case <-time.After(deadline + 2*time.Second):
		t.Fatalf("the leader's context was still live %v after acquiring; deadline %v", time.Since(acquired), deadline)
	}
	// Why it ended, for the user's log: context.Cause says what Err says,
	// of the context and of those derived from it. (It said Canceled
	// until 2026-12-07: a probe.)
	<-derived.Done()
	if err, cause, dcause := lctx.Err(), context.Cause(lctx), context.Cause(derived); err != context.DeadlineExceeded || cause != err || dcause != err {
		t.Errorf("the context ended at the deadline: Err %v, Cause %v, a derived context's Cause %v; want DeadlineExceeded for each", err, cause, dcause)
	}
	ended := time.Since(acquired)
	if ended < deadline-10*time.Millisecond || ended > deadline+500*time.Millisecond {
		t.Errorf("the leader's context ended %v after the acquiring write began, want at the deadline %v", ended, deadline)
	}
	term, ok := lease.TermOf(lctx)
	if !ok || term.Valid() {
		t.Errorf("TermOf: ok %v, still valid after the context ended", ok)
	}
	select {
	case <-stopped:
	case <-time.After(time.Second):
		t.Error("OnStoppedLeading was not called")
	}
	mu.Lock()
	defer mu.Unlock()
	if renewErrs == 0 {
		t.Error("no failed renewal reached OnError")
	}
}

// A renewal in flight past the local deadline does not keep the leader's
// context alive: it is done at the deadline, and so is every context
// derived from it, which sees only Done (a probe found a derived context
// live until the hung renewal returned, after another process led).
func TestRunContextEndsAtDeadlineDuringHungRenewal(t *testing.T) {
	const deadline = 600 * time.Millisecond
	s := &spyStore{renewDelay: 2 * time.Second}
	lctx := leadHanging(t, s, 100*time.Millisecond, deadline)
	derived, stop := context.WithCancel(lctx)
	defer stop()
	s.mu.Lock()
	acquired := s.creates[0]
	s.mu.Unlock()
	select {
	case <-derived.Done():
	case <-time.After(deadline + 3*time.Second):
		t.Fatalf("a context derived from the leader's was still live %v after acquiring; deadline %v", time.Since(acquired), deadline)
	}
	// The first renewal began about 100 ms in and returns 2 s later: the
	// context must end at the deadline, well before.
	if ended := time.Since(acquired); ended < deadline-10*time.Millisecond || ended > deadline+400*time.Millisecond {
		t.Errorf("the derived context ended %v after the acquiring write began, want at the deadline %v (the renewal in flight returns at about 2.1 s)", ended, deadline)
	}
	if term, _ := lease.TermOf(lctx); term.Valid() {
		t.Error("the term is still valid after its context ended")
	}
}

// The real runtime moves the deadline's timer when a renewal extends the
// deadline: after three renewals, the fourth hangs, and a context derived
// from the leader's ends at the deadline of the third, not the first (a
// probe's mutant of osProc.AfterMono whose move did nothing passed every
// test: the one above hangs the first renewal, so nothing is moved).
func TestRunContextEndsAtMovedDeadline(t *testing.T) {
	const deadline = 600 * time.Millisecond
	s := &spyStore{renewDelay: 3 * time.Second, hangFrom: 4}
	cfg := leadHangingConfig(200*time.Millisecond, deadline)
	derived, stop := context.WithCancel(leadHanging(t, s, cfg.RenewInterval, deadline))
	defer stop()
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the leader's was still live 10 s after it led")
	}
	ended := time.Now()
	s.mu.Lock()
	renews := slices.Clone(s.renews)
	s.mu.Unlock()
	if len(renews) < 4 {
		t.Fatalf("the context ended after %d renewals, want it live through 3 (deadline %v, renewals every %v)", len(renews), deadline, cfg.RenewInterval)
	}
	// The third renewal (the last that returned) began at renews[2]: its
	// deadline is 600 ms later; the hung fourth returns 3 s after it began.
	want := renews[2].Add(deadline)
	if d := ended.Sub(want); d < -10*time.Millisecond || d > 400*time.Millisecond {
		t.Errorf("the derived context ended %v after the third renewal's deadline (want at it; the hung renewal returns %v after it)", d, renews[3].Add(s.renewDelay).Sub(want))
	}
}

// leadHangingConfig is a 3 s lease renewed every renew, with the local
// deadline given.
func leadHangingConfig(renew, deadline time.Duration) lease.Config {
	return lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: renew, WatchInterval: time.Second, RenewDeadline: deadline}
}

// leadHanging runs a lone lease.Run over s (a spyStore whose renewals
// hang as it says, over a new file store) with leadHangingConfig, until
// the test ends, and returns the leader's context once it leads.
func leadHanging(t *testing.T, s *spyStore, renew, deadline time.Duration) context.Context {
	t.Helper()
	s.Store = lease.NewFileStore(filepath.Join(t.TempDir(), "job.lease"))
	cfg := leadHangingConfig(renew, deadline)
	cb, leading := started()
	cfg.Callbacks = cb
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, s, cfg, lease.RunOptions{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return waitCtx(t, leading, "a lone process")
}

// epochStore scales a store's epochs by 1000, so that an epoch is never
// mistaken for a version (which equals it when a term starts on a file).
type epochStore struct{ lease.Store }

func scaled(rec lease.Record, err error) (lease.Record, error) {
	rec.Epoch *= 1000
	return rec, err
}

func unscaled(rec lease.Record) lease.Record {
	rec.Epoch /= 1000
	return rec
}

func (s epochStore) Read() (lease.Record, error) { return scaled(s.Store.Read()) }
func (s epochStore) Create(h int64, ttl time.Duration) (lease.Record, error) {
	return scaled(s.Store.Create(h, ttl))
}
func (s epochStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return scaled(s.Store.Renew(unscaled(cur), ttl))
}
func (s epochStore) Takeover(stale lease.Record, h int64, ttl time.Duration) (lease.Record, error) {
	return scaled(s.Store.Takeover(unscaled(stale), h, ttl))
}
func (s epochStore) Release(cur lease.Record) error { return s.Store.Release(unscaled(cur)) }

// TermOf gives the leader the fencing epoch of its term: the epoch of
// the record it wrote, greater than every earlier leader's.
func TestRunTermOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second, WatchInterval: 10 * time.Second}
	if _, ok := lease.TermOf(context.Background()); ok {
		t.Error("TermOf found a term in a context that has none")
	}
	var epochs []int64
	for i := range 2 {
		cb, leading := started()
		cfg.Callbacks = cb
		ctx, cancel := context.WithCancel(context.Background())
		s := epochStore{lease.NewFileStore(path)}
		done := runAsync(ctx, s, cfg, lease.RunOptions{ID: 2001 + i, Dir: filepath.Dir(path)})
		lctx := waitCtx(t, leading, "a lone process")
		term, ok := lease.TermOf(lctx)
		rec, err := s.Read()
		if !ok || err != nil {
			t.Fatalf("TermOf: %v; Read: %v", ok, err)
		}
		if term.Epoch() != rec.Epoch || rec.Holder != int64(2001+i) {
			t.Errorf("term %d: TermOf says epoch %d, the store holds %+v", i, term.Epoch(), rec)
		}
		if !term.Valid() {
			t.Errorf("term %d: not valid while leading", i)
		}
		epochs = append(epochs, term.Epoch())
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Ended by the shutdown, long before its deadline: Valid says so,
		// as Err does (until 2026-12-06 it said true until the deadline,
		// while the next leader led: a probe).
		if term.Valid() || lctx.Err() == nil {
			t.Errorf("term %d after the shutdown: Valid %v, Err %v", i, term.Valid(), lctx.Err())
		}
	}
	if epochs[1] <= epochs[0] {
		t.Errorf("epochs %v: the second leader's is not greater", epochs)
	}
}

// A config Run cannot run, a missing store or context, or a holder id
// where a Proc gives it, is an error at once: no panic, nothing written.
func TestRunBadConfig(t *testing.T) {
	dir := t.TempDir()
	s := lease.NewFileStore(filepath.Join(dir, "job.lease"))
	good := lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
	cases := []struct {
		name string
		ctx  context.Context
		s    lease.Store
		cfg  func(c *lease.Config)
		o    lease.RunOptions
		want string
	}{
		{name: "zero config", cfg: func(c *lease.Config) { *c = lease.Config{} }, want: "must be positive"},
		{name: "renew not below lease", cfg: func(c *lease.Config) { c.RenewInterval = c.LeaseDuration }, want: "must be longer than the renew interval"},
		{name: "deadline past the safe one", cfg: func(c *lease.Config) { c.RenewDeadline = c.LeaseDuration }, want: "must be shorter than lease"},
		{name: "renew not below deadline", cfg: func(c *lease.Config) { c.RenewDeadline = c.RenewInterval }, want: "must be shorter than the renew deadline"},
		{name: "one renewal before the deadline", cfg: func(c *lease.Config) { c.RenewDeadline = 2*c.RenewInterval - time.Millisecond }, want: "costs the term"},
		{name: "no time for a renewal", cfg: func(c *lease.Config) {
			c.LeaseDuration, c.RenewInterval, c.WatchInterval = 60*time.Millisecond, 5*time.Millisecond, 5*time.Millisecond
			c.RenewDeadline = 50 * time.Millisecond
		}, want: "costs the term"},
		{name: "drift bound", cfg: func(c *lease.Config) { c.DriftBoundPPM = 1_000_000 }, want: "drift bound"},
		{name: "nil store", s: nil, want: "nil store"},
		{name: "typed nil store", s: (*lease.VersionedFile)(nil), want: "nil store"},
		{name: "lease longer than a record states", cfg: func(c *lease.Config) { c.LeaseDuration = 25 * time.Hour }, want: "a lease record may state"},
		{name: "nil context", ctx: nil, want: "nil context"},
		// Store literals without their FS: a nil pointer's panic until
		// 2026-12-07 (a probe).
		{name: "flock register without FS", s: lease.FlockRegister{Path: filepath.Join(dir, "flock")}, want: "has no FS"},
		{name: "flock register pointer without FS", s: &lease.FlockRegister{Path: filepath.Join(dir, "flock")}, want: "has no FS"},
		{name: "versioned file without FS", s: &lease.VersionedFile{Path: filepath.Join(dir, "v.lease")}, want: "has no FS"},
		{name: "epoch file without FS", s: &lease.EpochFile{Path: filepath.Join(dir, "e.lease")}, want: "has no FS"},
		{name: "negative id", o: lease.RunOptions{ID: -1}, want: "holder id"},
		{name: "id with a proc", o: lease.RunOptions{ID: 7, Proc: lease.NewOSProc(&lockedBuffer{}, &lockedBuffer{})}, want: "RunOptions.ID"},
	}
	for _, c := range cases {
		cfg := good
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		ctx, store := c.ctx, c.s
		if c.name != "nil context" {
			ctx = context.Background()
		}
		if c.s == nil && !strings.Contains(c.name, "nil store") {
			store = s
		}
		// A Run that does not refuse runs until this context ends.
		if ctx != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
		}
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: Run panicked: %v", c.name, p)
				}
			}()
			err = lease.Run(ctx, store, cfg, c.o)
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Run returned %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("Run wrote %d files (%v) for configs it refused", len(ents), err)
	}
}

// overtakingFS is the real file system, except that right after the
// link of version release it links the version above it for holder 200:
// a watcher woken by the release that acquires before the releaser's
// listing after its link.
type overtakingFS struct {
	lease.OSFS
	path    string
	release int64
}

func (f overtakingFS) Link(oldname, newname string) error {
	if err := f.OSFS.Link(oldname, newname); err != nil {
		return err
	}
	if newname == f.path+"."+strconv.FormatInt(f.release, 10) {
		next := f.path + "." + strconv.FormatInt(f.release+1, 10)
		rec := lease.AppendVersioned(nil, lease.Record{Holder: 200, Epoch: f.release + 1})
		if err := os.WriteFile(next, rec, 0o644); err != nil {
			panic(err)
		}
	}
	return nil
}

// A release that a watcher overtakes at once (it acquires between the
// release's link and the listing after it, so the store reports the
// release superseded) is a release: logged as one, and no error for the
// user's OnError.
func TestRunReleaseOvertaken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second, WatchInterval: 10 * time.Second}
	cb, leading := started()
	var errs []error
	var mu sync.Mutex
	cb.OnError = func(op string, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Errorf("%s: %w", op, err))
	}
	cfg.Callbacks = cb
	// Version 1 is the acquisition, 2 the release, 3 the watcher's.
	s := &lease.VersionedFile{FS: overtakingFS{path: path, release: 2}, Path: path, PID: 100}
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Proc: nil, Log: &log, ID: 100})
	waitCtx(t, leading, "a lone process")
	cancel()
	waitReturn(t, done, &log)
	if rec, err := lease.NewFileStore(path).Read(); err != nil || rec.Holder != 200 || rec.Version != 3 {
		t.Fatalf("after Run: %+v, %v; want the watcher's version 3", rec, err)
	}
	if !strings.Contains(log.String(), "Lease released") || strings.Contains(log.String(), "no longer ours") {
		t.Errorf("log: want the release logged as one:\n%s", log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 {
		t.Errorf("OnError got %v, want nothing: the release took effect", errs)
	}
}

// A service that runs elections one after another keeps nothing of the
// ones that ended: each Run on the real OS watches the lock's directory
// with inotify (a descriptor and a reading goroutine), and ends its
// watches when it returns. Twenty elections, each leading and then
// cancelled, leave the open descriptors and goroutines as they were.
func TestRunReleasesItsWatches(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(ents)
	}
	dir := t.TempDir()
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	settle := func(want func() bool) {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !want(); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	fd0, g0 := fds(), runtime.NumGoroutine()
	for i := range 20 {
		cb, ch := started()
		cfg.Callbacks = cb
		ctx, cancel := context.WithCancel(context.Background())
		done := runAsync(ctx, lease.NewFileStore(filepath.Join(dir, "l.lock")), cfg, lease.RunOptions{})
		waitCtx(t, ch, fmt.Sprintf("election %d", i))
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	settle(func() bool { return fds() <= fd0 && runtime.NumGoroutine() <= g0 })
	if fd, g := fds(), runtime.NumGoroutine(); fd > fd0 || g > g0 {
		t.Errorf("after 20 elections: %d open descriptors (%d before), %d goroutines (%d before)", fd, fd0, g, g0)
	}
}

// failingListingFS is the real file system, except that the listing
// right after the link of version after fails with EIO: a renewal whose
// link took effect and whose outcome its writer cannot know.
type failingListingFS struct {
	lease.OSFS
	path  string
	after int64
	armed *bool
}

func (f failingListingFS) Link(oldname, newname string) error {
	err := f.OSFS.Link(oldname, newname)
	if err == nil && newname == f.path+"."+strconv.FormatInt(f.after, 10) {
		*f.armed = true
	}
	return err
}

func (f failingListingFS) ReadDir(dir string) ([]string, error) {
	if *f.armed {
		*f.armed = false
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: syscall.EIO}
	}
	return f.OSFS.ReadDir(dir)
}

// A leader whose renewal linked its version but could not list the
// directory after it (an unknown outcome) finds that version at its next
// renewal: a record of its own term, which it renews from instead of
// stepping down and then waiting a whole lease for its own record.
func TestRunRenewsFromItsUnknownRenewal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 100 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	cb, leading := started()
	stopped := make(chan struct{}, 1)
	cb.OnStoppedLeading = func() { stopped <- struct{}{} }
	cfg.Callbacks = cb
	armed := false
	s := &lease.VersionedFile{FS: failingListingFS{path: path, after: 2, armed: &armed}, Path: path, PID: 100}
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log, ID: 100})
	waitCtx(t, leading, "a lone process")
	select {
	case <-stopped:
		t.Fatalf("stepped down before its context ended; log:\n%s", log.String())
	case <-time.After(time.Second):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l := log.String(); strings.Contains(l, "replaced by another write") || !strings.Contains(l, "Lease renewed, version 4") {
		t.Errorf("want renewals past version 3 and no step-down; log:\n%s", l)
	}
}

// scriptedStore is a lease held by process 7 at version 1 whose takeover
// fails with EIO failures times; then it reads as released, and records
// when that read and the next Create came.
type scriptedStore struct {
	mu                 sync.Mutex
	failures, failed   int
	releasedAt, create time.Time
}

func (s *scriptedStore) Read() (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed < s.failures {
		return lease.Record{Holder: 7, Epoch: 1, Version: 1}, nil
	}
	if s.releasedAt.IsZero() {
		s.releasedAt = time.Now()
	}
	return lease.Record{}, &fs.PathError{Op: "read", Path: "scripted", Err: syscall.ENOENT}
}

func (s *scriptedStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.create.IsZero() {
		s.create = time.Now()
	}
	return lease.Record{Holder: holder, Epoch: 3, Version: 3, TTL: ttl}, nil
}

func (s *scriptedStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	cur.Version++
	return cur, nil
}

func (s *scriptedStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed++
	return lease.Record{}, &fs.PathError{Op: "link", Path: "scripted", Err: syscall.EIO}
}

func (s *scriptedStore) Release(cur lease.Record) error { return nil }

// A watcher backing off after failed takeovers that next reads the lease
// as released (someone's write, the release, succeeded: the disk takes
// writes) acquires at once, not when its back-off runs out. (The file
// store reads a release as no lease, without its version: the reset for
// a version nobody had seen missed it, and reference~keep-one's timing
// showed it, a release taken up 1.7 s late.)
func TestRunReleaseResetsBackOff(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	cb, leading := started()
	cfg.Callbacks = cb
	s := &scriptedStore{failures: 6} // back-offs of 10, 20, 40, 80, 160 and 300 ms
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Proc: nil, ID: 100, Dir: ""})
	waitCtx(t, leading, "the watcher, once the lease reads released")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if late := s.create.Sub(s.releasedAt); late > 100*time.Millisecond {
		t.Errorf("created %v after reading the lease released, want at once (its back-off: 300 ms)", late)
	}
}

// A lock in a directory that is not there is reported to OnError, each
// try, with its cause: a missing directory is no outcome of the protocol,
// unlike a missing lease, which is not reported.
func TestRunReportsMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	cfg := lease.Config{LeaseDuration: time.Second, RenewInterval: 100 * time.Millisecond, WatchInterval: 100 * time.Millisecond}
	errs := make(chan error, 100)
	cfg.Callbacks.OnError = func(op string, err error) {
		select {
		case errs <- err:
		default:
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := runAsync(ctx, lease.NewFileStore(filepath.Join(dir, "job.lease")), cfg, lease.RunOptions{})
	select {
	case err := <-errs:
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
			t.Errorf("OnError got %v, want the missing directory %s", err, dir)
		}
	case <-time.After(time.Second):
		t.Error("a lock in a missing directory: nothing reached OnError within a second")
	}
	cancel()
	<-done
	// And a missing lease in a directory that is there is not an error.
	cfg.Callbacks.OnError = func(op string, err error) { t.Errorf("OnError(%s, %v) for a lease nobody held", op, err) }
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	<-runAsync(ctx, lease.NewFileStore(filepath.Join(t.TempDir(), "job.lease")), cfg, lease.RunOptions{})
}
