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
// file it found at the path (nil otherwise) and its write-ahead log and
// the log's index (the -wal and -shm files; nil if there were none).
type conn struct {
	db   *sql.DB
	file os.FileInfo
	logs [2]os.FileInfo
	// pin is a connection held, unused, for the database's life: SQLite
	// removes the log and its index when the last connection closes, and
	// the pool drops a connection whose call a timeout interrupted (a
	// review: one such call emptied it), so without it the store's own
	// log could go and come back, a change that is not one.
	pin *sql.Conn
	// broken is set when the log or its index was replaced under the
	// database: every call fails with it (see follow).
	broken error
}

// logSuffixes name the write-ahead log and its index beside the database.
var logSuffixes = [2]string{"-wal", "-shm"}

// sqliteConn is the conn of db, open at path, with the files found there
// once a connection is pinned (nil if the file is not there; without the
// log's files if no connection could be pinned).
func sqliteConn(ctx context.Context, db *sql.DB, path string) *conn {
	c := &conn{db: db}
	if pin, err := db.Conn(ctx); err == nil {
		if err := pin.PingContext(ctx); err == nil {
			c.pin = pin
		} else {
			pin.Close()
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		if c.pin != nil {
			c.pin.Close()
		}
		return nil
	}
	c.file = fi
	if c.pin != nil {
		for i, suffix := range logSuffixes {
			c.logs[i], _ = os.Stat(path + suffix)
		}
	}
	return c
}

// current reports whether path still names the files c found: the
// database and, when it found them, its log and the log's index. (While
// any connection has the database open, SQLite keeps both; c.pin is one.)
func (c *conn) current(path string) bool {
	if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, c.file) {
		return false
	}
	for i, suffix := range logSuffixes {
		if c.logs[i] == nil {
			continue
		}
		if fi, err := os.Stat(path + suffix); err != nil || !os.SameFile(fi, c.logs[i]) {
			return false
		}
	}
	return true
}

// db is the database the store's calls use now.
func (s *Store) db() *sql.DB { return s.cur.Load().db }

// follow is called before each call, and the call fails with its error:
// for a SQLite database Open opened by its path, it checks that the path
// still names the file it opened, and its log and the log's index.
//
// When the database file was removed or replaced (deleted with its log, a
// backup restored over it) it opens the path again, reporting it to
// OnError: the processes that had it open went on with the unlinked file,
// one leading there, while a process started afterwards made a new
// database at the path and led there too, for good (a probe, 2026-12-05).
// Following the path, a leader's next renewal meets the new file's record
// (or none): a conflict, and it steps down. The old database is left open,
// not closed: SQLite's last close checkpoints the log into the database
// and removes the log by its name, which is now the new database's.
//
// When the database is the same file and its log or index was removed or
// replaced (a probe, the next day: a newcomer then read the database
// without the log's writes, led, and locked through an index of its own),
// this process cannot open it again: SQLite keeps one index per database
// file in a process, and the new connections read the old index over the
// new log (a review: "disk I/O error (522)", and the leader renewed on
// the old log for good). Closing the old connections first would
// checkpoint the old log into the shared database and remove the new log.
// So the store stops: every call from then on fails with an error saying
// so (a leader steps down by its deadline; a watcher never leads here
// again), reported to OnError, and the process must be restarted. The
// database is left open, for the same reason.
func (s *Store) follow() error {
	c := s.cur.Load()
	if c.broken != nil {
		return c.broken
	}
	if c.file == nil || c.current(s.path) {
		return nil
	}
	s.reopen.Lock()
	defer s.reopen.Unlock()
	if s.closed {
		return nil // (the call fails on the closed database)
	}
	c = s.cur.Load()
	if c.broken != nil {
		return c.broken
	}
	if c.current(s.path) {
		return nil // another call opened it again
	}
	if fi, err := os.Stat(s.path); err == nil && os.SameFile(fi, c.file) {
		broken := fmt.Errorf("sqlstore: %q: the write-ahead log or its index beside %s was removed or replaced under this process, which can no longer use the database safely: restart it", s.name, s.path)
		n := *c
		n.broken = broken
		s.cur.Store(&n)
		if s.onError != nil {
			s.onError("follow", broken)
		}
		return broken
	}
	ctx, cancel := s.ctx()
	defer cancel()
	n, err := Open(ctx, SQLite, s.dsn, s.opts)
	if err != nil {
		return s.fail("reopen", fmt.Errorf("the database file %s was removed or replaced, and opening it again failed: %w", s.path, err))
	}
	s.cur.Store(n.cur.Load())
	if s.onError != nil {
		s.onError("reopen", fmt.Errorf("sqlstore: %q: the database file %s was removed or replaced: opened it again", s.name, s.path))
	}
	return nil
}

// SQLitePath is the database file a SQLite dsn names (a path, or a
// modernc "file:" URI), or "" for a database that is one process's own:
// in memory (":memory:", mode=memory, vfs=memdb) or SQLite's private
// temporary one (an empty file name).
func SQLitePath(dsn string) string {
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if path == ":memory:" || strings.Contains(query, "mode=memory") || strings.Contains(query, "vfs=memdb") {
		return "" // in memory: no file, no directory to watch or ring a bell in
	}
	return path
}

// sqliteDir checks that the directory of an SQLite database file exists
// and that the file is not a directory, which SQLite reports only as
// "unable to open database file (14)".
func sqliteDir(dsn string) error {
	path := SQLitePath(dsn)
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
	// SQLite says only "unable to open database file (14)" of a directory
	// too (a probe's -dsn /tmp/somedir).
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory, not a database file", path)
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
