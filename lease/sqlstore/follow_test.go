package sqlstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
)

// errorLog collects what a store tells OnError.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) add(op string, err error) {
	l.mu.Lock()
	l.errs = append(l.errs, op+": "+err.Error())
	l.mu.Unlock()
}

// take returns what was told since the last take.
func (l *errorLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.errs
	l.errs = nil
	return got
}

func (l *errorLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.errs {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// A SQLite database file removed (with its log) while processes have it
// open: a process started afterwards makes a new database at the path and
// leads there. The processes that had the old file follow the path: the
// old leader's renewal meets the new file's record (a conflict: it steps
// down), and the old watcher reads the new leader. Before, both went on
// with the unlinked file, the old leader renewing there for good.
func TestFollowsReplacedDatabaseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.db")
	var leaderLog errorLog
	leader := open(t, SQLite, path, "job", storetest.ContractTimeout, leaderLog.add)
	watcher := open(t, SQLite, path, "job", storetest.ContractTimeout, nil)
	rec, err := leader.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	late := open(t, SQLite, path, "job", storetest.ContractTimeout, nil)
	lrec, err := late.Create(3, 9*time.Second)
	if err != nil {
		t.Fatalf("a process started after the removal: Create: %v", err)
	}
	if _, err := leader.Renew(rec, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("the old leader's renewal: %v, want a conflict with the new file's record", err)
	}
	if !leaderLog.has("removed or replaced") {
		t.Errorf("the reopening was not reported to OnError: %q", leaderLog.errs)
	}
	if got, err := watcher.Read(); err != nil || got.Holder != 3 || got.Version != lrec.Version {
		t.Errorf("the old watcher reads %+v, %v; want the new file's record of holder 3", got, err)
	}
}

// A database the store makes by opening its path again is as Open makes
// it: in WAL mode (a review: the dsn kept was the one with Open's pragma
// added, whose presence skips the switch, and the new file stayed in
// rollback-journal mode).
func TestReopenedDatabaseInWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.db")
	s := open(t, SQLite, path, "job", storetest.ContractTimeout, nil)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read that makes the database again: %v, want no record", err)
	}
	var mode string
	if err := s.DB().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("the database made again: journal_mode %q, %v; want wal", mode, err)
	}
}

// Calls from many goroutines while the file is replaced: each ends with
// a record, a conflict or an error, and none races (go test -race).
func TestFollowConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease.db")
	s := open(t, SQLite, path, "job", storetest.ContractTimeout, nil)
	if _, err := s.Create(1, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s.Read()
			}
		}()
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	wg.Wait()
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read of the new, empty database: %v, want no record", err)
	}
}

// A table dropped while processes use it is made again at the first call
// that finds it missing: that call fails, the next ones work (versions
// start again, as after any loss of the server's data). Before, every
// call failed until a process started afresh.
func TestTableMadeAgain(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "lease.db")
			if d == Postgres {
				dsn = servertest.Postgres(t).DSN()
			}
			table := "dropped_" + strings.ToLower(d.String())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, d, dsn, Options{Name: "job", Table: table, Timeout: storetest.ContractTimeout})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rec, err := s.Create(1, 9*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().ExecContext(ctx, "DROP TABLE "+table); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Renew(rec, 9*time.Second); err == nil || !strings.Contains(err.Error(), "made again") {
				t.Errorf("the renewal that found the table gone: %v, want an error saying the table was made again", err)
			}
			if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a read after the table was made again: %v, want no record", err)
			}
			if _, err := s.Create(2, 9*time.Second); err != nil {
				t.Errorf("a create after the table was made again: %v", err)
			}
		})
	}
}

// childEnv names the database a child process of TestFollowsRemovedLog
// creates its lease in.
const childEnv = "LEASELAB_SQLSTORE_CHILD_DB"

// TestChildCreate is TestFollowsRemovedLog's other process: it opens the
// database and creates holder 3's lease (skipped unless run as that).
func TestChildCreate(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("the other process of TestFollowsRemovedLog")
	}
	s := open(t, SQLite, path, "job", storetest.ContractTimeout, nil)
	if _, err := s.Create(3, 9*time.Second); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

// The database file kept and its write-ahead log and index (-wal, -shm)
// deleted under a leader: a process started afterwards, in a process of
// its own (SQLite shares one index among a process's connections), reads
// the database without the log's writes, finds no lease and creates one,
// locking through an index of its own. Before, the old leader renewed in
// the unlinked log for good: two leaders (a probe, 2026-12-06). It cannot
// open the database again (its process's index is the old one: a review
// saw "disk I/O error (522)" and the renewals go on), so its store stops:
// every call fails from the first after the removal, whether the
// newcomer came first or the leader's call did, after one renewal or
// twenty, and it says so to OnError once.
func TestFollowsRemovedLog(t *testing.T) {
	for _, c := range []struct {
		renewals   int
		childFirst bool
	}{{0, true}, {20, true}, {5, false}} {
		path := filepath.Join(t.TempDir(), "lease.db")
		var leaderLog errorLog
		leader := open(t, SQLite, path, "job", storetest.ContractTimeout, leaderLog.add)
		rec, err := leader.Create(1, 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for range c.renewals {
			if rec, err = leader.Renew(rec, 9*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		for _, suffix := range logSuffixes {
			if err := os.Remove(path + suffix); err != nil {
				t.Fatalf("the log is not where SQLite keeps it: %v", err)
			}
		}
		newcomer := func() {
			child := osexec.Command(os.Args[0], "-test.run=^TestChildCreate$", "-test.count=1")
			child.Env = append(os.Environ(), childEnv+"="+path)
			if out, err := child.CombinedOutput(); err != nil {
				t.Fatalf("%+v: the process started after the removal could not create its lease (the case is not shown): %v\n%s", c, err, out)
			}
		}
		if c.childFirst {
			newcomer()
		} else if _, err := leader.Read(); err == nil {
			t.Errorf("%+v: the leader's first read after the removal worked", c)
		}
		if !c.childFirst {
			newcomer()
		}
		for i := range 3 {
			if got, err := leader.Renew(rec, 9*time.Second); err == nil {
				t.Errorf("%+v: the old leader's renewal %d after the removal worked (%+v): two leaders", c, i, got)
			}
		}
		if got, err := leader.Read(); err == nil {
			t.Errorf("%+v: the old leader reads %+v after the removal", c, got)
		}
		n := 0
		for _, e := range leaderLog.errs {
			if strings.Contains(e, "removed or replaced under this process") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%+v: told OnError %d times that the log was replaced, want once: %q", c, n, leaderLog.errs)
		}
	}
}
