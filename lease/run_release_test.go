package lease_test

// Run's release and store-failure tests (run_test.go holds the rest).

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// downStore fails every Release and Read with a timeout once down is set:
// a server gone while its leader shuts down.
type downStore struct {
	lease.Store
	down atomic.Bool
}

func (s *downStore) Read() (lease.Record, error) {
	if s.down.Load() {
		return lease.Record{}, &os.PathError{Op: "read", Path: "down", Err: os.ErrDeadlineExceeded}
	}
	return s.Store.Read()
}

func (s *downStore) Release(cur lease.Record) error {
	if s.down.Load() {
		return &os.PathError{Op: "release", Path: "down", Err: os.ErrDeadlineExceeded}
	}
	return s.Store.Release(cur)
}

// A leader that can neither release nor read at shutdown says that it
// could not release, and that the lease will expire, not that the lease
// is no longer its own (a probe of leaselab run with its server stopped).
func TestRunReleaseFailsSaysSo(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 10 * time.Second, WatchInterval: 10 * time.Second}
	cb, leading := started()
	cfg.Callbacks = cb
	s := &downStore{Store: lease.NewFileStore(filepath.Join(t.TempDir(), "job.lease"))}
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log})
	waitCtx(t, leading, "a lone process")
	s.down.Store(true)
	cancel()
	waitReturn(t, done, &log)
	if got := log.String(); !strings.Contains(got, "Could not release the lease: it expires at its lease's end") || strings.Contains(got, "no longer ours") {
		t.Errorf("log:\n%s\nwant the failed release said, and not \"no longer ours\"", got)
	}
}

// waitReturn waits up to 5 s for Run, whose context was cancelled, to
// return, and fails t unless it returned nil.
func waitReturn(t *testing.T, done <-chan error, log *lockedBuffer) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Run had not returned 5 s after its context was cancelled; log:\n%s", log.String())
	}
}

// replyLostStore is a lease server's register, with a nonce per write,
// whose renewal number lostAt loses its reply: it fails with EIO, having
// taken effect, and returns what it sent (lease.Store). With other, the
// record it makes instead is another process's of the same PID and epoch
// (after a loss of the server's data, in another PID namespace): another
// nonce. Then it calls onLost.
type replyLostStore struct {
	mu             sync.Mutex
	rec            lease.Record
	present        bool
	nonces, renews uint64
	lostAt         uint64
	other          bool
	onLost         func()
}

func (s *replyLostStore) Read() (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.present {
		return lease.Record{}, &fs.PathError{Op: "read", Path: "server", Err: syscall.ENOENT}
	}
	return s.rec, nil
}

func (s *replyLostStore) write(holder, epoch int64, ttl time.Duration) lease.Record {
	s.nonces++
	s.rec = lease.Record{Holder: holder, Epoch: epoch, Version: s.rec.Version + 1, TTL: ttl, Nonce: s.nonces}
	if s.rec.Epoch == 0 {
		s.rec.Epoch = s.rec.Version
	}
	s.present = true
	return s.rec
}

func (s *replyLostStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.present {
		return lease.Record{}, fs.ErrExist
	}
	return s.write(holder, 0, ttl), nil
}

func (s *replyLostStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.present || s.rec != cur {
		return lease.Record{}, lease.ErrConflict
	}
	s.renews++
	if s.renews != s.lostAt {
		return s.write(cur.Holder, cur.Epoch, ttl), nil
	}
	sent := s.write(cur.Holder, cur.Epoch, ttl)
	if s.other {
		s.write(cur.Holder, cur.Epoch, ttl) // another's, of its PID and epoch
	}
	if s.onLost != nil {
		s.onLost()
	}
	sent.Epoch, sent.Version = 0, 0
	return sent, &fs.PathError{Op: "renew", Path: "server", Err: syscall.EIO}
}

func (s *replyLostStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.present || s.rec != stale {
		return lease.Record{}, lease.ErrConflict
	}
	return s.write(holder, 0, ttl), nil
}

func (s *replyLostStore) Release(cur lease.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.present || s.rec != cur {
		return lease.ErrConflict
	}
	s.present = false
	return nil
}

// A leader whose renewal took effect but lost its reply finds, at its
// next renewal or its release, a record of its PID and its term's epoch:
// its own renewal only when its nonce is the one that renewal sent. It
// renews from (or releases) its own; another's (another process of its
// PID, after the server lost its data) it leaves, and steps down. (A
// check with the loss and shared PIDs as faults: it took another's for
// its own by PID and epoch, and two led.)
func TestRunTellsItsLostRenewalByNonce(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 100 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	for _, tc := range []struct {
		name           string
		other, release bool
	}{{"own renewal", false, false}, {"another's record", true, false}, {"own renewal, at the release", false, true}, {"another's record, at the release", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cb, leading := started()
			stopped := make(chan struct{}, 1)
			cb.OnStoppedLeading = func() { stopped <- struct{}{} }
			cfg.Callbacks = cb
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &replyLostStore{lostAt: 2, other: tc.other}
			if tc.release {
				s.onLost = cancel // the release comes next
			}
			var log lockedBuffer
			done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log, ID: 100})
			waitCtx(t, leading, "a lone process")
			if !tc.release {
				select {
				case <-stopped:
				case <-time.After(time.Second):
				}
				cancel()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			rec, present, renews := s.rec, s.present, s.renews
			s.mu.Unlock()
			l := log.String()
			switch stepped := strings.Contains(l, "replaced by another write"); {
			case !tc.release && tc.other && !stepped:
				t.Errorf("led on over another's record of its PID and epoch; log:\n%s", l)
			case !tc.release && !tc.other && (stepped || renews < 4):
				t.Errorf("want renewals from its own lost renewal and no step-down (%d renewals); log:\n%s", renews, l)
			case tc.release && tc.other && !present:
				t.Errorf("released another's record of its PID and epoch; log:\n%s", l)
			case tc.release && !tc.other && present:
				t.Errorf("left its own lost renewal unreleased (%+v); log:\n%s", rec, l)
			}
		})
	}
}

// failingReleaseStore is a replyLostStore whose first release fails
// with EIO before it reaches the server.
type failingReleaseStore struct {
	replyLostStore
	releases int
}

func (s *failingReleaseStore) Release(cur lease.Record) error {
	s.mu.Lock()
	s.releases++
	first := s.releases == 1
	s.mu.Unlock()
	if first {
		return &fs.PathError{Op: "release", Path: "server", Err: syscall.EIO}
	}
	return s.replyLostStore.Release(cur)
}

// A release that failed before it reached the server, whose record a
// read then shows unchanged, is tried again: the lease is given back, not
// left to expire. (A review: once ownRenewal asked for a renewal's nonce,
// the record released itself, whose nonce no failed renewal had sent,
// was taken for another's.)
func TestRunReleasesAgainAfterAFailedRelease(t *testing.T) {
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 100 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	cb, leading := started()
	cfg.Callbacks = cb
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &failingReleaseStore{}
	var log lockedBuffer
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log, ID: 100})
	waitCtx(t, leading, "a lone process")
	time.Sleep(250 * time.Millisecond) // a renewal or two
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	present, releases := s.present, s.releases
	s.mu.Unlock()
	if present || releases != 2 {
		t.Errorf("after one failed release: %d releases, the lease still there: %v; log:\n%s", releases, present, log.String())
	}
}

// TestRunRefusesPathNamingNoFile: a file store over a path that names no
// file in a directory is an error from Run, at once, with nothing written.
// Until 2026-12-05 Run over NewFileStore("") or NewFileStore("dir/") looped
// in the boot record's creation, ignoring its context: the listing never
// showed the PATH.boot.1 it linked, and every pass left a temporary file
// (3,400 in 3 s, a probe).
func TestRunRefusesPathNamingNoFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // NewFileStore("") writes in the working directory
	cfg := lease.Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
	for i, s := range []lease.Store{
		lease.NewFileStore(""),
		lease.NewFileStore(dir + "/"),
		lease.NewFileStore(dir + "/."),
		lease.NewFileStore(dir + "/sub/.."),
		lease.FlockRegister{FS: lease.OSFS{}, Path: dir + "/"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		done := make(chan error, 1)
		go func() { done <- lease.Run(ctx, s, cfg, lease.RunOptions{}) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "lock path") {
				t.Errorf("Run over %T %d returned %v, want an error about the lock path", s, i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Run over %T %d did not return 3 s after its context ended", s, i)
		}
		cancel()
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("Run wrote %d files (%v) for paths it refused", len(ents), err)
	}
}

func TestCheckLockPath(t *testing.T) {
	for _, p := range []string{"", "/", "//", "/var/lib/", "x/", ".", "..", "/a/.", "/a/..", "/a/b/../c/lease", "a/../lease", "/../lease",
		// the names another lock derives from its own (a probe: leases
		// P and P.tmp.5 took each other's files; P and P.boot too)
		"/d/x.tmp.5", "/d/x.tmp.5.12", "/d/x.boot", "/d/x.boot.3", "/d/x.7", "x.lock.0", "/d/tmp.5", "/d/.tmp.5"} {
		if err := lease.CheckLockPath(p); err == nil {
			t.Errorf("CheckLockPath(%q) = nil, want an error", p)
		}
	}
	for _, p := range []string{"lease", "./lease", "/var/lib/job/lease", "a//b", "/a/.lease", "/a/..b", "../lease", "../../locks/lease",
		"/d/x.tmp", "/d/x.tmp.a", "/d/x.boot.b", "/d/job2", "/d/v1.2x", "/d/.7", "/d/boot", "/d/7"} {
		if err := lease.CheckLockPath(p); err != nil {
			t.Errorf("CheckLockPath(%q) = %v, want nil", p, err)
		}
	}
}

// hiddenBoots is the real file system, except that its listings leave out
// boot records: names the store links that its listing never shows.
type hiddenBoots struct{ lease.OSFS }

func (f hiddenBoots) ReadDir(dir string) ([]string, error) { return f.drop(f.OSFS.ReadDir(dir)) }
func (f hiddenBoots) ReadDirPrefix(dir, prefix string) ([]string, error) {
	return f.drop(f.OSFS.ReadDirPrefix(dir, prefix))
}
func (hiddenBoots) drop(names []string, err error) ([]string, error) {
	return slices.DeleteFunc(names, func(n string) bool { return strings.Contains(n, ".boot.") }), err
}

// TestBootRecordUnseenIsAnError: a boot record whose name exists but no
// listing shows is an error, not a loop linking temporary files for ever
// (how a path naming no file spun until 2026-12-05).
func TestBootRecordUnseenIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := &lease.VersionedFile{FS: hiddenBoots{}, Path: filepath.Join(dir, "lease"), PID: 1,
		Boot: func() (string, error) { return "boot-a", nil }}
	done := make(chan error, 1)
	go func() {
		_, err := s.Create(1, time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "does not show it") {
			t.Errorf("Create returned %v, want an error saying the listing does not show the boot record", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Create did not return in 5 s")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) > 2 {
		t.Errorf("Create left %d files, want at most the boot record", len(ents))
	}
}

// A leader whose stepping down (a slow OnStoppedLeading) outlasts its local
// deadline still releases its own last write, by compare-and-set, once:
// nobody else wrote since, and a watcher takes over at once instead of a
// lease later (until 2026-12-07's evening it wrote nothing there, and said
// "Local deadline passed before the release").
func TestRunReleaseLateReleasesOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	cb, leading := started()
	cb.OnStoppedLeading = func() { time.Sleep(cfg.LeaseDuration) } // outlasts the local deadline
	cfg.Callbacks = cb
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, lease.NewFileStore(path), cfg, lease.RunOptions{Log: &log})
	waitCtx(t, leading, "a lone process")
	cancel()
	waitRun(t, done, &log)
	if !strings.Contains(log.String(), "Lease released") || strings.Contains(log.String(), "Local deadline passed before the release") {
		t.Errorf("log:\n%s", log.String())
	}
	wantReleased(t, path)
}

// A leader whose stepping down outlasts its whole lease finds, at its late
// release, the record of the process that took over meanwhile: the
// compare-and-set fails and changes nothing, and it says the deadline
// passed, not that it released.
func TestRunReleaseLateLeavesAnothers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
	cb, leading := started()
	taken := make(chan struct{})
	cb.OnStoppedLeading = func() { <-taken } // until the other process leads
	cfg.Callbacks = cb
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, lease.NewFileStore(path), cfg, lease.RunOptions{Log: &log})
	waitCtx(t, leading, "the first process")
	// The second process, its own store on the same path, is a watcher
	// until the first one's lease runs out while it steps down.
	cfg2 := cfg
	cb2, leading2 := started()
	cfg2.Callbacks = cb2
	var log2 lockedBuffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done2 := runAsync(ctx2, lease.NewFileStore(path), cfg2, lease.RunOptions{Log: &log2})
	cancel()
	waitCtx(t, leading2, "the second process")
	close(taken)
	waitRun(t, done, &log)
	if !strings.Contains(log.String(), "Local deadline passed before the release") || strings.Contains(log.String(), "Lease released") {
		t.Errorf("first process's log:\n%s", log.String())
	}
	rec, err := lease.NewFileStore(path).Read()
	if err != nil || rec.Holder == 0 {
		t.Errorf("after the first Run: record %+v, %v; want the second process's lease", rec, err)
	}
	cancel2()
	waitRun(t, done2, &log2)
}

// waitRun waits for a Run to return nil after its context was cancelled.
func waitRun(t *testing.T, done <-chan error, log *lockedBuffer) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run had not returned 10 s after its context was cancelled; log:\n%s", log.String())
	}
}

// lostRenewalStore makes the first renewal after lose is set take effect
// and answer EIO (its reply lost), and the read after it fail too: the
// leader's next renewal meets its own record as a conflict, cannot read
// whose it is, and steps down.
type lostRenewalStore struct {
	lease.Store
	lose     atomic.Bool
	badReads atomic.Int32
}

func (s *lostRenewalStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Renew(cur, ttl)
	if err == nil && s.lose.CompareAndSwap(true, false) {
		s.badReads.Store(1)
		return lease.Record{}, &os.PathError{Op: "renew", Path: "lost", Err: syscall.EIO}
	}
	return rec, err
}

func (s *lostRenewalStore) Read() (lease.Record, error) {
	if s.badReads.Add(-1) >= 0 {
		return lease.Record{}, &os.PathError{Op: "read", Path: "lost", Err: syscall.EIO}
	}
	return s.Store.Read()
}

// A process that stepped down so (errors in bursts found it) and is told
// to stop before it reads again releases that record, its own renewal,
// after its release of its last known write meets it as a conflict: its
// successors do not wait out its lease. (By its term's epoch: the file
// store's records carry no nonce.)
func TestRunReleasesOwnRenewalAfterSteppingDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 100 * time.Millisecond, WatchInterval: 10 * time.Second}
	cb, leading := started()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stepped := make(chan struct{})
	cb.OnStoppedLeading = func() { cancel(); close(stepped) } // told to stop as it steps down
	cfg.Callbacks = cb
	s := &lostRenewalStore{Store: lease.NewFileStore(path)}
	var log lockedBuffer
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log})
	waitCtx(t, leading, "a lone process")
	s.lose.Store(true)
	waitRun(t, done, &log)
	select {
	case <-stepped:
	default:
		t.Fatalf("it never stepped down:\n%s", log.String())
	}
	if got := log.String(); !strings.Contains(got, "replaced by another write") || !strings.Contains(got, "Lease released") {
		t.Errorf("log:\n%s\nwant the step-down, then its own renewal released", got)
	}
	wantReleased(t, path)
}

// Not told to stop, it takes that record back at once as its own, and
// leads again, instead of waiting out its 30 s lease as another's.
func TestRunTakesBackOwnRenewalAfterSteppingDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.lease")
	cfg := lease.Config{LeaseDuration: 30 * time.Second, RenewInterval: 100 * time.Millisecond, WatchInterval: 100 * time.Millisecond}
	cb, leading := started()
	cfg.Callbacks = cb
	s := &lostRenewalStore{Store: lease.NewFileStore(path)}
	var log lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := runAsync(ctx, s, cfg, lease.RunOptions{Log: &log})
	waitCtx(t, leading, "a lone process")
	s.lose.Store(true)
	waitCtx(t, leading, "the process, again") // (waitCtx's limit is far below the lease)
	cancel()
	waitRun(t, done, &log)
	// (Read once Run has returned: the real runtime writes its log lines
	// from a goroutine of its own, and Run flushes them as it returns; read
	// right after the second term began, the step-down's line was not yet
	// there in 3 of 20 runs on one core, a review, helper-106.)
	if got := log.String(); !strings.Contains(got, "replaced by another write") {
		t.Errorf("log:\n%s\nwant the step-down before it leads again", got)
	}
}

// wantReleased fails t unless the lease file at path reads as released:
// none (ENOENT).
func wantReleased(t *testing.T, path string) {
	t.Helper()
	if rec, err := lease.NewFileStore(path).Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Run: record %+v, %v; want it released (read as none)", rec, err)
	}
}
