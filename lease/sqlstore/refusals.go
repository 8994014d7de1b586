package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite" // database/sql driver "sqlite", and its errors
	sqlite3 "modernc.org/sqlite/lib"
)

// ReadOnly reports whether err is PostgreSQL refusing a write because the
// transaction is read-only (SQLSTATE 25006): a hot standby, or
// default_transaction_read_only set for the server, the database or the
// role. Such a server refuses every write of the lease, whoever asks.
func ReadOnly(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "25006"
}

// Starting reports whether err is PostgreSQL refusing a connection
// because it is not ready yet (SQLSTATE 57P03, cannot_connect_now: the
// database system is starting up, shutting down or in recovery): a
// passing state, which a caller connecting at its start may wait out.
func Starting(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "57P03"
}

// tooManyConnections reports whether err is PostgreSQL refusing a
// connection because there are too many (SQLSTATE 53300: the role's
// CONNECTION LIMIT, or the server's max_connections, reached).
func tooManyConnections(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "53300"
}

// denied reports whether err is the database refusing this user: for
// which the store's errors say errors.Is(err, fs.ErrPermission), as a
// file's EACCES. PostgreSQL's insufficient_privilege (SQLSTATE 42501);
// SQLite's read-only database, access permission denied or authorization
// denied (result codes 8, 3 and 23, and their extended codes).
func denied(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "42501"
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
			return true
		}
	}
	return false
}

// notOutcome is an error of the driver or the connection that wraps what
// errors.Is takes for one of the contract's outcomes: PostgreSQL's Unix
// socket missing (its server down, or another directory than the DSN's
// host=) is a dial's ENOENT, which is fs.ErrNotExist, a missing record.
// Open then said the server answered, with no lease, and every read of
// the elector said no lease, unreported (a probe, 2026-12-07). It is
// every error its error is, and has every type, but for those two.
type notOutcome struct{ err error }

func (e notOutcome) Error() string { return e.err.Error() }

func (e notOutcome) Is(target error) bool {
	return target != fs.ErrNotExist && target != fs.ErrExist && errors.Is(e.err, target)
}

func (e notOutcome) As(target any) bool { return errors.As(e.err, target) }

// driverError returns err, an error of the driver or the connection, as
// one that is none of the contract's outcomes (notOutcome).
func driverError(err error) error {
	if err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) {
		return notOutcome{err}
	}
	return err
}

// fail reports and wraps an error that is none of the contract's outcomes.
// A PostgreSQL server that refuses the call a connection while the change
// listener holds one stops the listener (dropListener).
// An error that says the table is gone (dropped, or a database restored
// without it) makes the table again, as Open does, for the next call:
// until then every call failed and nobody led until a process started
// afresh (a probe: 28 s with PostgreSQL). Its versions start again, as
// after any loss of the server's data.
func (s *Store) fail(op string, err error) error {
	if denied(err) {
		err = fmt.Errorf("%w (%w)", err, fs.ErrPermission)
	}
	if s.dialect == Postgres && tooManyConnections(err) && s.dropListener() {
		err = fmt.Errorf("%w (the change listener held a connection: stopped for good, the watchers poll)", err)
	}
	if noTable(err) {
		ctx, cancel := s.ctx()
		if cerr := s.createTable(ctx); cerr != nil {
			err = fmt.Errorf("%w (making the table again failed: %v)", err, cerr)
		} else {
			err = fmt.Errorf("%w (the table was made again)", err)
		}
		cancel()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// (The bare "context deadline exceeded" said nothing of why: a
		// probe's SQLite, locked by another client's BEGIN EXCLUSIVE.)
		err = fmt.Errorf("%w (no answer within the %v timeout: the database is locked by another client's transaction, or does not answer)", err, s.timeout)
	}
	err = fmt.Errorf("sqlstore: %s %q: %w", op, s.name, err)
	if s.onError != nil {
		s.onError(op, err)
	}
	return err
}

// MaxNameBytes bounds Options.Name: PostgreSQL's index on the name takes
// keys of at most about 2.7 KB (a third of a page), and a longer one that
// does not compress failed every create, "index row size exceeds btree
// maximum", nobody leading for good (a deployment probe).
const MaxNameBytes = 1024

// checkName refuses a lease name the table cannot key: empty, longer than
// MaxNameBytes, or not text PostgreSQL takes (invalid UTF-8, a NUL).
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("sqlstore: Options.Name is required")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("sqlstore: Options.Name is %d bytes: at most %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return fmt.Errorf("sqlstore: Options.Name %q is not UTF-8 text without NUL", name)
	}
	return nil
}
