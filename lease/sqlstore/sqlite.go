package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// conn is a store's database and, for a SQLite file Open opened, the
// file it found at the path (nil otherwise).
type conn struct {
	db   *sql.DB
	file os.FileInfo
}

// db is the database the store's calls use now.
func (s *Store) db() *sql.DB { return s.cur.Load().db }

// follow is called before each call: for a SQLite database Open opened by
// its path, it checks that the path still names the file it opened, and
// when that file was removed or replaced (deleted with its log, a backup
// restored over it) opens the path again, reporting it to OnError. The
// processes that had it open went on with the unlinked file, one leading
// there, while a process started afterwards made a new database at the
// path and led there too, for good (a probe, 2026-12-05). Following the
// path, a leader's next renewal meets the new file's record (or none): a
// conflict, and it steps down.
func (s *Store) follow() {
	c := s.cur.Load()
	if c.file == nil {
		return
	}
	fi, err := os.Stat(s.path)
	if err == nil && os.SameFile(fi, c.file) {
		return
	}
	s.reopen.Lock()
	defer s.reopen.Unlock()
	if s.closed {
		return
	}
	c = s.cur.Load()
	if fi, err := os.Stat(s.path); err == nil && os.SameFile(fi, c.file) {
		return // another call opened it again
	}
	ctx, cancel := s.ctx()
	defer cancel()
	n, err := Open(ctx, SQLite, s.dsn, s.opts)
	if err != nil {
		s.fail("reopen", fmt.Errorf("the database file %s was removed or replaced, and opening it again failed: %w", s.path, err))
		return
	}
	s.cur.Store(n.cur.Load())
	// Calls that took the old database before the swap finish on it
	// (within their timeout) before it is closed.
	time.AfterFunc(2*s.timeout, func() { c.db.Close() })
	if s.onError != nil {
		s.onError("reopen", fmt.Errorf("sqlstore: %q: the database file %s was removed or replaced: opened it again", s.name, s.path))
	}
}

// sqliteDir checks that the directory of an SQLite database file exists,
// which SQLite reports only as "unable to open database file (14)".
// sqlitePath is the database file a SQLite dsn names ("" for an
// in-memory database).
func sqlitePath(dsn string) string {
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if path == ":memory:" || strings.Contains(query, "mode=memory") || strings.Contains(query, "vfs=memdb") {
		return "" // in memory: no file, no directory to watch or ring a bell in
	}
	return path
}

func sqliteDir(dsn string) error {
	path := sqlitePath(dsn)
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: the directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	return nil
}

// setWAL switches the database to write-ahead logging, which lasts in the
// file once set. The switch needs the database to itself, and SQLite
// answers SQLITE_BUSY at once, without waiting out the busy timeout, when
// other processes open it at the same instant (as a DSN pragma on every
// connection it failed about one trial in 20 of 8 concurrent Opens, and
// one of three `leaselab run` processes started together exited): retry
// for up to timeout, or ctx's deadline if it has one.
func setWAL(ctx context.Context, db *sql.DB, timeout time.Duration) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			return nil // mode is "wal", or what a file system without shared memory allows
		}
		if !busy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// busy reports whether err is SQLite's SQLITE_BUSY (or SQLITE_LOCKED):
// another connection holds the database for longer than the busy
// timeout.
func busy(err error) bool {
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return err != nil && strings.Contains(err.Error(), "SQLITE_BUSY")
}
