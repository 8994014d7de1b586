package sqlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/spec/storetest"
)

// Processes that open a fresh SQLite database at the same instant all
// open it, and it is in WAL mode. (Setting WAL mode by a pragma on every
// connection failed with SQLITE_BUSY in about one trial in 20: one of
// three `leaselab run -store sqlite` processes started together exited.)
func TestConcurrentOpenSQLite(t *testing.T) {
	// A setup deadline, not one call's timeout: the bug this catches is
	// SQLITE_BUSY at once, not slowness.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for trial := range 70 {
		// The last 20 with 3 ms calls, and so a 3 ms busy timeout, as
		// leaselab run gives a 10 ms renew interval: the table's setup
		// met SQLITE_BUSY and one of two runners exited (a probe).
		timeout := storetest.ContractTimeout
		if trial >= 50 {
			timeout = 3 * time.Millisecond
		}
		path := filepath.Join(t.TempDir(), "lease.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(ctx, SQLite, path, Options{Name: fmt.Sprint("n", i), Timeout: timeout})
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				var mode string
				if err := s.db().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
					errs <- fmt.Errorf("journal_mode %q, %v; want wal", mode, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("trial %d: %v", trial, err)
		}
	}
}

// A DSN that sets its own journal mode keeps it: Open switched every
// database to WAL, which each new connection's journal_mode(delete)
// switched back, and a lone `leaselab run` read "database is locked" at
// every poll and never led (a probe, 2026-12-06).
func TestSQLiteJournalModeOfTheDSN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, pragma := range []string{"journal_mode(delete)", "JOURNAL_MODE(truncate)"} {
		path := filepath.Join(t.TempDir(), "lease.db")
		s, err := Open(ctx, SQLite, "file:"+path+"?_pragma="+pragma, Options{Name: "j", Timeout: storetest.ContractTimeout})
		if err != nil {
			t.Fatalf("%s: %v", pragma, err)
		}
		defer s.Close()
		rec, err := s.Create(1001, 9*time.Second)
		if err != nil {
			t.Fatalf("%s: create: %v", pragma, err)
		}
		for i := range 20 {
			if _, err := s.Read(); err != nil {
				t.Fatalf("%s: read %d: %v", pragma, i, err)
			}
			if rec, err = s.Renew(rec, 9*time.Second); err != nil {
				t.Fatalf("%s: renewal %d: %v", pragma, i, err)
			}
		}
		var mode string
		if err := s.db().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if want := pragma[len("journal_mode(") : len(pragma)-1]; mode != want {
			t.Errorf("%s: journal_mode %q, want %q", pragma, mode, want)
		}
	}
}
