package sqlstore

import (
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A PostgreSQL whose Unix socket is not there (its server down, or the
// DSN's host= another directory) is unreachable: an error of Open, and of
// every Read, that is not a missing record. The dial's ENOENT is
// fs.ErrNotExist to errors.Is: until 2026-12-07 Open succeeded, and every
// read said no lease, unreported (a probe). Needs no server.
func TestMissingSocketIsNoMissingRecord(t *testing.T) {
	t.Parallel()
	dsn := "host=" + t.TempDir() + " user=leaselab dbname=leaselab sslmode=disable connect_timeout=2"
	s, err := Open(t.Context(), Postgres, dsn, Options{Name: "socket", Timeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("Open over a missing Unix socket succeeded: want its dial error")
	}
	if errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Open: %v: want the dial's ENOENT, and not fs.ErrNotExist (a missing record)", err)
	}

	// A store whose database goes: its reads fail, reported, and say no
	// missing record. (A store on SQLite whose connection is then one to
	// the missing socket: the dial fails before any statement is parsed.)
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "lease.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var reported []string
	s, err = New(t.Context(), db, SQLite, Options{Name: "socket", OnError: func(op string, err error) { reported = append(reported, op) }})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gone.Close() })
	s.cur.Store(&conn{db: gone})
	_, err = s.Read()
	if err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Read over a missing socket: %v; want the dial's ENOENT, and not fs.ErrNotExist (a missing record)", err)
	}
	if len(reported) != 1 || reported[0] != "read" {
		t.Errorf("OnError was told of %q; want one read", reported)
	}
}
