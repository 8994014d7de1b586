package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/leaselab/leaselab/lease"
)

// feed is a Store's change notices (lease.ChangeFeed).
type feed struct {
	notices lease.Notices
	once    sync.Once
	mu      sync.Mutex
	stop    func() // ends the listener (nil: none started)
	closed  bool
}

var (
	_ lease.ChangeFeed  = (*Store)(nil)
	_ lease.ReleaseHint = (*Store)(nil)
)

// releasePayload is the payload of the notice a release sends on
// PostgreSQL; every other write's is empty.
const releasePayload = "release"

// Released implements lease.ReleaseHint: on PostgreSQL, the latest notice
// is one a release sent, and came after token. SQLite's notices (writes to
// the database's files) do not say what changed: never.
func (s *Store) Released(token uint64) bool { return s.feed.notices.Released(token) }

// Changes implements lease.ChangeFeed. On PostgreSQL the first call
// LISTENs, on a connection of its own, to the channel every write of the
// row notifies in its own statement (pg_notify in the statement that
// writes: sent when, and only if, it commits); a notice sent while that
// connection is down is lost (PostgreSQL keeps none for an absent
// listener), so the listener, listening again, counts one notice for what
// it may have missed. The listener holds one of the pool's connections
// for as long as the store is open: a pool of one (SetMaxOpenConns(1) on
// a caller's *sql.DB given to New) leaves none for the lease's calls. On SQLite, which has no server to tell anyone, the first
// call watches the database's directory (inotify, on Linux) for writes to
// the database or its write-ahead log: any write to the database, not
// only the row's, is a notice, given again 1, 3, 10 and 50 ms later since the
// write comes before its commit is visible; reads are none. A listener that cannot
// start is reported once through OnError, and the watchers poll: on
// PostgreSQL (a server away, a role without the right to LISTEN) while
// the listener tries again in the background (a notice once it listens);
// on SQLite (a directory inotify cannot watch, another system) for good.
// A PostgreSQL listener whose connection leaves the lease's calls none is
// stopped for good (dropListener), and the watchers poll.
func (s *Store) Changes() (uint64, <-chan struct{}) {
	s.feed.once.Do(s.listen)
	return s.feed.notices.Changes()
}

// channel is the row's NOTIFY channel: a plain identifier, whatever the
// table and lease are called.
func (s *Store) channel() string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", s.table, s.name)
	return fmt.Sprintf("leaselab_%016x", h.Sum64())
}

func (s *Store) listen() {
	var stop func()
	var err error
	switch s.dialect {
	case Postgres:
		stop, err = s.listenPostgres()
	case SQLite:
		if s.path == "" {
			err = fmt.Errorf("the database's file is not known (New on a caller's *sql.DB)")
		} else {
			var d *lease.DirFeed
			base := filepath.Base(s.path)
			d, err = lease.WatchFiles(filepath.Dir(s.path), s.sqliteWrote, base, base+"-wal", filepath.Base(s.bellPath()))
			if err == nil {
				stop = func() { d.Close() }
			}
		}
	}
	if err != nil {
		retry := ""
		if stop != nil {
			retry = "; trying again in the background"
		}
		s.fail("listen", fmt.Errorf("%w (its watchers poll%s)", err, retry))
	}
	if stop == nil {
		return
	}
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	if s.feed.closed {
		stop()
		return
	}
	s.feed.stop = stop
}

// bellPath is the file beside a SQLite database to which every write of
// a leaselab store writes a byte once it has committed: a notice that
// the change is visible, which the database's own files cannot give
// (their writes come before the commit is visible). A writer that dies
// between its commit and the bell leaves the database files' notices,
// and the poll, to tell.
func (s *Store) bellPath() string { return s.path + "-changes" }

// ring writes a byte to the bell after a write that committed (SQLite,
// with a known file). It opens the bell each time, so that a bell removed
// or replaced meanwhile is made again, not rung unseen. A bell that
// cannot be written is reported once through OnError and leaves the
// watchers the database files' notices.
func (s *Store) ring() {
	if s.dialect != SQLite || s.path == "" {
		return
	}
	f, err := os.OpenFile(s.bellPath(), os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteAt([]byte{'.'}, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.bellOnce.Do(func() { s.fail("ring", fmt.Errorf("%w (its watchers wait for the database's own writes)", err)) })
	}
}

// sqliteSettle are the delays after a write to the database files at
// which a SQLite feed notifies again: a transaction's frames are written to
// the write-ahead log before it commits (after the log's fsync, when
// synchronous is FULL, then in the shared-memory index, which inotify
// does not see), so a watcher woken by the write itself can read the row
// as it was and wait again. (Found by TestReleaseHandedOverByNotice: a
// release handed over at the next poll, 300 ms, not at its notice.)
var sqliteSettle = []time.Duration{time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond}

// sqliteWrote is a SQLite feed's notice of a write: now, and again once
// the transaction has likely committed.
func (s *Store) sqliteWrote() {
	s.feed.notices.Notify()
	for _, d := range sqliteSettle {
		time.AfterFunc(d, s.feed.notices.Notify)
	}
}

// listenPostgres LISTENs on a connection of its own until stopped, and
// returns the first LISTEN's outcome. After a failure (of the first
// LISTEN too: a server away, a role without the right) it LISTENs again,
// 100 ms doubling to 5 s between tries, and, once listening again, counts
// one notice for what it may have missed meanwhile.
func (s *Store) listenPostgres() (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan error, 1)
	go func() {
		first := true
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := s.listenOnce(ctx, func(err error) {
				switch {
				case first:
					ready <- err
					first = false
				case err == nil:
					s.feed.notices.Notify() // back: what the broken connection missed
				}
				if err == nil {
					backoff = 100 * time.Millisecond
				}
			})
			if errors.Is(err, errForeignDriver) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}()
	err := <-ready
	if errors.Is(err, errForeignDriver) {
		cancel() // (no other try can do better)
		return nil, err
	}
	return cancel, err
}

// errForeignDriver is a database/sql connection that is not pgx's: there
// is no LISTEN through it.
var errForeignDriver = errors.New("not pgx's driver: no LISTEN")

// listenOnce takes a connection, LISTENs, calls started once with the
// outcome, and counts notifications until the connection fails or ctx
// ends.
func (s *Store) listenOnce(ctx context.Context, started func(error)) error {
	called := false
	start := func(err error) {
		called = true
		started(err)
	}
	sctx, scancel := s.ctx()
	conn, err := s.db().Conn(sctx)
	scancel()
	if err != nil {
		start(err)
		return err
	}
	defer conn.Close()
	// The connection never goes back to the pool once it has LISTENed
	// (or tried): Raw's ErrBadConn discards it.
	var out error
	rerr := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			out = fmt.Errorf("%w: the database's driver connection is a %T", errForeignDriver, dc)
			start(out)
			return nil
		}
		pc := sc.Conn()
		lctx, lcancel := s.ctx()
		_, err := pc.Exec(lctx, "LISTEN "+s.channel())
		lcancel()
		start(err)
		if err != nil {
			out = err
			return driver.ErrBadConn
		}
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				out = err
				return driver.ErrBadConn
			}
			if n.Payload == releasePayload {
				s.feed.notices.NotifyRelease()
			} else {
				s.feed.notices.Notify()
			}
		}
	})
	if !called {
		if rerr == nil {
			rerr = errors.New("no connection to LISTEN on")
		}
		start(rerr)
		return rerr
	}
	return out
}

// dropListener stops a PostgreSQL listener for good, if one runs, and
// reports whether one did: the server refused the lease's calls a
// connection (SQLSTATE 53300: the role's CONNECTION LIMIT, or the
// server's max_connections, reached) while the listener held one. The
// lease's calls come first; the watchers poll from then on. (A probe: a
// role limited to one connection gave it to the listener, and every read
// failed for as long as the process ran.)
func (s *Store) dropListener() bool {
	s.feed.mu.Lock()
	stop := s.feed.stop
	s.feed.stop = nil // (and once done: none starts again)
	s.feed.mu.Unlock()
	if stop == nil {
		return false
	}
	stop()
	return true
}

// closeFeed ends the listener, if one started.
func (s *Store) closeFeed() {
	s.feed.mu.Lock()
	s.feed.closed = true
	stop := s.feed.stop
	s.feed.mu.Unlock()
	if stop != nil {
		stop()
	}
}
