package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaselab/leaselab/lease"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Dialect is a SQL database the store speaks to.
type Dialect int

// The dialects.
const (
	// SQLite is the embedded default (driver "sqlite", modernc.org/sqlite).
	SQLite Dialect = iota + 1
	// Postgres is PostgreSQL (driver "pgx", github.com/jackc/pgx/v5/stdlib).
	Postgres
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// driver is the database/sql driver name.
func (d Dialect) driver() string {
	if d == Postgres {
		return "pgx"
	}
	return "sqlite"
}

// now is the database server's clock in ms since 1970.
func (d Dialect) now() string {
	if d == Postgres {
		return "CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)"
	}
	return "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
}

// DefaultTimeout bounds each statement when Options.Timeout is zero.
const DefaultTimeout = time.Second

// DefaultTable is the table when Options.Table is empty.
const DefaultTable = "leaselab_leases"

// Options configure a Store.
type Options struct {
	// Name names the lease: the row's key.
	Name string
	// Table is the table's name (DefaultTable if empty): letters, digits
	// and underscores, not starting with a digit.
	Table string
	// Timeout bounds each statement, connection included (0:
	// DefaultTimeout). Keep it well under the elector's renew interval: a
	// statement under way when the leader's local deadline passes delays
	// its step-down by up to this much.
	Timeout time.Duration
	// ExpiryMargin is added to the lease duration for the row's expiry
	// stamp. 0: the stamp is the write's time plus the lease duration.
	ExpiryMargin time.Duration
	// OnError, if set, is called with every error a call returns that is
	// none of the contract's outcomes (no record, a record exists, a
	// conflict): an unreachable or hung server, refused credentials, a
	// lock not granted in time. It must not block.
	OnError func(op string, err error)
}

// Store is a lease.Store on one row of a SQL table. Its methods may be
// called concurrently.
type Store struct {
	ownDB   bool
	dialect Dialect
	name    string
	timeout time.Duration
	margin  time.Duration
	onError func(string, error)
	table   string
	path    string // SQLite: the database file, when Open was given it
	// A SQLite database Open opened by its path: the dsn it was given and
	// the options, to open it again (follow); the current database and
	// the file it found at the path, swapped together; closed, under
	// reopen, once Close has run.
	dsn      string
	opts     Options
	cur      atomic.Pointer[conn]
	reopen   sync.Mutex
	closed   bool
	feed     feed
	bellOnce sync.Once // a bell that cannot be rung is reported once (notify.go: ring)

	qRead, qCreate, qRenew, qTakeover, qRelease string

	foreign foreign // the last row read that is not a lease record (foreign.go)
}

var _ lease.Store = (*Store)(nil)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Open opens the database and the lease's table (creating it if missing),
// checking within ctx and the statement timeout that the database answers:
// an unreachable server or refused credentials are errors here, not at the
// first lease operation. For SQLite, dsn is a file path (or a modernc
// "file:" URI) to which Open adds a busy timeout and WAL mode, unless it
// sets them itself (a DSN's journal_mode pragma is kept: switching a
// database to WAL that every new connection switches back kept even a
// lone process at SQLITE_BUSY); for PostgreSQL a postgres:// URL or
// key=value string, as pgx takes.
func Open(ctx context.Context, d Dialect, dsn string, o Options) (*Store, error) {
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("sqlstore: unknown dialect %v", d)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	given := dsn // (follow opens it again, pragmas and WAL mode included)
	if d == SQLite {
		if err := sqliteDir(dsn); err != nil {
			return nil, fmt.Errorf("sqlstore: %v: %w", d, err)
		}
	}
	wal := false
	if lower := strings.ToLower(dsn); d == SQLite && !strings.Contains(lower, "_pragma=busy_timeout") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "_pragma=busy_timeout(" + strconv.FormatInt(timeout.Milliseconds(), 10) + ")"
		wal = !strings.Contains(lower, "_pragma=journal_mode")
	}
	db, err := sql.Open(d.driver(), dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %v: %w", d, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if wal {
		if err := setWAL(ctx, db, timeout); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlstore: %v: %w", d, err)
		}
	}
	s, err := New(ctx, db, d, o)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.ownDB = true
	if d == SQLite {
		if path := SQLitePath(dsn); path != "" {
			s.path, _ = filepath.Abs(path)
			if c := sqliteConn(ctx, db, s.path); c != nil {
				s.dsn, s.opts = given, o
				s.cur.Store(c)
			}
		}
	}
	return s, nil
}

// New is Open on a database the caller opened with the dialect's driver
// ("sqlite" or "pgx"); Close leaves it open.
func New(ctx context.Context, db *sql.DB, d Dialect, o Options) (*Store, error) {
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("sqlstore: unknown dialect %v", d)
	}
	if err := checkName(o.Name); err != nil {
		return nil, err
	}
	table := o.Table
	if table == "" {
		table = DefaultTable
	}
	if !identifier.MatchString(table) {
		return nil, fmt.Errorf("sqlstore: table name %q is not a plain identifier", table)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	s := &Store{dialect: d, name: o.Name, timeout: timeout, margin: o.ExpiryMargin, onError: o.OnError, table: table}
	s.cur.Store(&conn{db: db})
	s.prepare(table)
	// Connecting and setting up may take longer than one call: a deadline
	// the caller set on ctx bounds them instead of the call timeout.
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	var cerr, err error
	// SQLite answers SQLITE_BUSY when processes set up one database at
	// once and its busy timeout (the call timeout) is short: a probe's two
	// runners started together with 3 ms calls, one of which exited. The
	// setup is tried again until ctx's deadline.
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		cerr = s.createTable(ctx)
		// Concurrent CREATE TABLE IF NOT EXISTS can fail in PostgreSQL (a
		// unique violation in its catalog) when another client made the
		// table meanwhile, and it fails too where the user may not create
		// tables in the schema though another user made this one: what
		// matters is that the table can be read.
		var missing []string
		missing, err = s.missingColumns(ctx, table)
		err = driverError(err)
		if err == nil && len(missing) > 0 {
			// A table an earlier leaselab made, readable: the columns it
			// lacks must be added, and when they cannot be, that is the
			// error.
			if err = s.addColumns(ctx, table, missing); err != nil && !busy(err) {
				return nil, fmt.Errorf("sqlstore: %v: %w", d, err)
			}
		}
		if err == nil {
			_, err = s.read(ctx)
		}
		if !busy(err) && !(err != nil && busy(cerr)) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
			continue
		}
		break
	}
	// (A row that is not a lease record, or at the highest version, is an
	// error of each call that reads it, not of opening the table.)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errNotRecord) && !errors.Is(err, ErrNoVersionLeft) {
		if cerr != nil {
			err = cerr
		}
		return nil, fmt.Errorf("sqlstore: %v: %w", d, driverError(err))
	}
	return s, nil
}

// prepare writes the statements for table. $N are positional parameters
// in both dialects (modernc's SQLite binds $N by position).
func (s *Store) prepare(table string) {
	now := s.dialect.now()
	live := `holder <> 0 AND expires_ms > ` + now
	s.qRead = `SELECT holder, epoch, version, CASE WHEN expires_ms > ` + now + ` THEN 1 ELSE 0 END, lease_ms, lease_version, nonce, expires_ms, incarnation FROM ` + table + ` WHERE name = $1`
	// A create over an expired row (not a released one: holder 0) keeps
	// that row's version in dropped_version, and the lease it stated in
	// dropped_lease_ms and its nonce in dropped_nonce, which it returns:
	// the record it replaced went without a release (lease.Record.Vanished,
	// VanishedTTL, VanishedNonce).
	// (The next version: 1 after a negative one, which only a row no
	// leaselab wrote has, as a foreign row's takeover: foreign.go.)
	// (Each of the expired row's columns is CAST: SQLite keeps a text or
	// real value given to it, and a new row made from one, or one of its
	// columns returned, must be an integer: read.)
	col := func(c string) string { return `CAST(` + table + `.` + c + ` AS BIGINT)` }
	next := `CASE WHEN ` + table + `.version < 0 THEN 1 ELSE ` + col("version") + ` + 1 END`
	// The new row states the longer of its writer's lease and the one the
	// expired row stated, and lives that much longer (lease.RaisedTTL).
	raise := `(CASE WHEN ` + table + `.holder <> 0 AND ` + table + `.lease_version = ` + table + `.version AND excluded.lease_ms > 0 AND ` + col("lease_ms") + ` > excluded.lease_ms AND ` + col("lease_ms") + ` <= ` + strconv.Itoa(lease.MaxTTLMillis) + ` THEN ` + col("lease_ms") + ` - excluded.lease_ms ELSE 0 END)`
	s.qCreate = `INSERT INTO ` + table + ` (name, holder, epoch, version, expires_ms, lease_ms, lease_version, nonce, dropped_version, dropped_lease_ms, dropped_nonce, incarnation) VALUES ($1, $2, 1, 1, ` + now + ` + $3, $4, 1, $5, 0, 0, 0, $6)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, epoch = ` + next + `, incarnation = ` + keepLife(col("incarnation"), "excluded.incarnation") + `,
	version = ` + next + `, expires_ms = excluded.expires_ms + ` + raise + `,
	lease_ms = excluded.lease_ms + ` + raise + `, lease_version = ` + next + `, nonce = excluded.nonce,
	dropped_version = CASE WHEN ` + table + `.holder <> 0 THEN ` + col("version") + ` ELSE 0 END,
	dropped_lease_ms = CASE WHEN ` + table + `.holder <> 0 AND ` + table + `.lease_version = ` + table + `.version THEN ` + col("lease_ms") + ` ELSE 0 END,
	dropped_nonce = CASE WHEN ` + table + `.holder <> 0 AND ` + table + `.lease_version = ` + table + `.version THEN ` + col("nonce") + ` ELSE 0 END
WHERE (` + table + `.holder = 0 OR ` + table + `.expires_ms <= ` + now + `) AND ` + belowMax(table) + `
RETURNING epoch, version, dropped_version, dropped_lease_ms, dropped_nonce, incarnation`
	// (The right-hand sides of an UPDATE's SET see the row as it was:
	// lease_version is the new version.) The record compared is the one
	// read: its nonce only when written with its version (rowNonce).
	where := func(nonce string) string {
		return ` WHERE name = $1 AND holder = $2 AND epoch = $3 AND version = $4 AND (CASE WHEN lease_version = version THEN nonce ELSE 0 END) = ` + nonce + ` AND ` + live + ` AND ` + belowMax(table)
	}
	life := keepLife(`CAST(incarnation AS BIGINT)`, "$%d")
	s.qRenew = `UPDATE ` + table + ` SET version = version + 1, expires_ms = ` + now + ` + $5, lease_ms = $6, lease_version = version + 1, nonce = $8, incarnation = ` + fmt.Sprintf(life, 9) +
		where("$7") + ` RETURNING epoch, version, incarnation`
	s.qTakeover = `UPDATE ` + table + ` SET holder = $6, epoch = version + 1, version = version + 1, expires_ms = ` + now + ` + $5, lease_ms = $7, lease_version = version + 1, nonce = $9, incarnation = ` + fmt.Sprintf(life, 10) +
		where("$8") + ` RETURNING epoch, version, incarnation`
	s.qRelease = `UPDATE ` + table + ` SET holder = 0, version = version + 1` + where("$5")
	if s.dialect == Postgres {
		// Each write notifies the row's listeners in its own statement:
		// the notice is sent when, and only if, the write commits (once
		// per row the write returns: none for a conflict). The notice's
		// column is scanned into a dummy (scanDest).
		// A release's says so (releasePayload: lease.ReleaseHint).
		notify := func(q, cols, payload string) string {
			return `WITH w AS (` + q + `) SELECT ` + cols + `, pg_notify('` + s.channel() + `', '` + payload + `') FROM w`
		}
		s.qCreate = notify(s.qCreate, "epoch, version, dropped_version, dropped_lease_ms, dropped_nonce, incarnation", "")
		s.qRenew = notify(s.qRenew, "epoch, version, incarnation", "")
		s.qTakeover = notify(s.qTakeover, "epoch, version, incarnation", "")
		s.qRelease = notify(s.qRelease+` RETURNING 1`, "1", releasePayload)
	}
	s.prepareForeign(table)
}

// Close closes the database if Open opened it.
func (s *Store) Close() error {
	s.closeFeed()
	s.reopen.Lock()
	s.closed = true
	s.reopen.Unlock()
	c := s.cur.Load()
	if c.pin != nil && c.broken == nil {
		c.pin.Close()
	}
	if s.ownDB && c.broken == nil {
		return c.db.Close()
	}
	// (A database whose log was replaced is left open: its last close
	// would checkpoint the old log into the database and remove the new
	// one. Its connections end with the process.)
	return nil
}

// DB returns the store's database (for a SQLite file that was replaced,
// the one at its path when the store last looked: see follow).
func (s *Store) DB() *sql.DB { return s.db() }

// ttlMS is the expiry stamp's offset for a lease of ttl, in whole
// milliseconds, rounded up.
func (s *Store) ttlMS(ttl time.Duration) int64 {
	d := ttl + s.margin
	return max(1, int64((d+time.Millisecond-1)/time.Millisecond))
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

func (s *Store) outcome(op string, err error) error {
	return fmt.Errorf("sqlstore: %s %q: %w", op, s.name, err)
}

// Vanishes implements lease.Vanishing: a row expires by a wall clock
// (the database's clock_timestamp(), or SQLite's), which a step moves.
func (s *Store) Vanishes() bool { return true }

// Read returns the record; a missing, released or expired row is an error
// for which errors.Is(err, fs.ErrNotExist); a released one also
// errors.Is(err, lease.ErrReleased), an expired one lease.ErrVanished.
func (s *Store) Read() (lease.Record, error) {
	if err := s.follow(); err != nil {
		return lease.Record{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	rec, err := s.read(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return lease.Record{}, s.fail("read", err)
	}
	return rec, err
}

// errNotRecord is read's error for a row that is not a lease record.
var errNotRecord = lease.ErrForeign

func (s *Store) read(ctx context.Context) (lease.Record, error) {
	// Scanned as they are: SQLite keeps what a column is given, and a
	// value no leaselab writes there (an operator's holder = 'abc', a
	// lease of 1.5 ms) failed the whole read with a scan error and made
	// leaselab run exit (a probe), where an out-of-range integer is a
	// foreign row, waited out and taken over.
	var raw readColumns
	var life any // (not the record's: what it holds judges no row foreign)
	dest := make([]any, len(raw), len(raw)+1)
	for i := range raw {
		dest[i] = &raw[i]
	}
	err := s.db().QueryRowContext(ctx, s.qRead, s.name).Scan(append(dest, &life)...)
	if errors.Is(err, sql.ErrNoRows) {
		return lease.Record{}, s.outcome("read", fs.ErrNotExist)
	}
	if err != nil {
		return lease.Record{}, driverError(err)
	}
	c, bad := raw.ints()
	var rec lease.Record
	rec.Holder, rec.Epoch, rec.Version = c[colHolder], c[colEpoch], c[colVersion]
	leaseMS, leaseVersion, nonce := c[colLeaseMS], c[colLeaseVersion], c[colNonce]
	switch {
	case rec.Version >= lease.MaxVersion || realAtMax(raw[colVersion]):
		return lease.Record{}, fmt.Errorf("version %d: %w", rec.Version, ErrNoVersionLeft)
	case bad != colHolder && rec.Holder == 0:
		return lease.Record{}, s.outcome("read", lease.ErrReleased) // (also fs.ErrNotExist)
	case c[colLive] == 0:
		// (Its lease, as the row states it: 0 if not, or if no writer
		// writes what it says.)
		ttl, _ := rowTTL(rec.Version, leaseMS, leaseVersion)
		n, _ := rowNonce(rec.Version, leaseVersion, nonce)
		return lease.Record{}, s.outcome("read", &lease.VanishedError{Version: rec.Version, TTL: ttl, Nonce: n}) // (also fs.ErrNotExist)
	}
	row := foreignRow{raw[colHolder], raw[colEpoch], raw[colVersion], raw[colExpires], raw[colLeaseMS], raw[colLeaseVersion], raw[colNonce]}
	if bad >= 0 {
		return s.foreignRecord(row, lifeIn(life), fmt.Errorf("%s is %s", readNames[bad], describe(raw[bad]))), nil
	}
	if rec.Holder < 0 || rec.Epoch <= 0 || rec.Version < rec.Epoch {
		return s.foreignRecord(row, lifeIn(life), fmt.Errorf("holder %d, epoch %d of version %d", rec.Holder, rec.Epoch, rec.Version)), nil
	}
	ttl, err := rowTTL(rec.Version, leaseMS, leaseVersion)
	if err != nil {
		return s.foreignRecord(row, lifeIn(life), err), nil
	}
	rec.TTL = ttl
	if rec.Nonce, err = rowNonce(rec.Version, leaseVersion, nonce); err != nil {
		return s.foreignRecord(row, lifeIn(life), err), nil
	}
	rec.Incarnation = lifeIn(life)
	return rec, nil
}

// scanDest is a write's scan destinations: dest, and on PostgreSQL a
// dummy for the notice's (void) column.
func (s *Store) scanDest(dest ...any) []any {
	if s.dialect == Postgres {
		return append(dest, new(any))
	}
	return dest
}

// Create inserts the row for holder, or takes over a released or expired
// one (epoch and version: the row's version plus one); if the row is live
// it fails with an error for which errors.Is(err, fs.ErrExist). Over an
// expired row, the record returned names the version that went
// (lease.Record.Vanished): its holder may still lead.
func (s *Store) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	if err := s.follow(); err != nil {
		return lease.Record{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	nonce := newNonce()
	rec := lease.Record{Holder: holder, TTL: lease.StatedTTL(ttl), Nonce: uint64(nonce)}
	var goneMS, goneNonce, life int64
	err := s.write(ctx, s.qCreate, []any{s.name, holder, s.ttlMS(ttl), lease.TTLMillis(ttl), nonce, newLife()}, s.scanDest(&rec.Epoch, &rec.Version, &rec.Vanished, &goneMS, &goneNonce, &life)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return lease.Record{}, s.outcome("create", fs.ErrExist)
	case err != nil:
		rec.Epoch, rec.Version, rec.Vanished = 0, 0, 0 // what it sent: lease.Store
		return rec, s.fail("create", err)
	}
	rec.VanishedTTL, _ = lease.TTLFromMillis(goneMS) // (0: not stated, or what no writer writes)
	rec.VanishedNonce = uint64(max(goneNonce, 0))
	rec.Incarnation = uint64(max(life, 0))
	rec.TTL = lease.RaisedTTL(ttl, rec.VanishedTTL)
	s.ring()
	return rec, nil
}

// write runs a statement that changes the table and returns at most one
// row (INSERT or UPDATE ... RETURNING), scanning the row into dest:
// sql.ErrNoRows if there is none. Unlike QueryRow it reads the rows to
// their end, so that SQLite steps the statement to completion: it
// checkpoints its write-ahead log only there, and a store that left every
// write one step short grew the log by 4 KB a write without end (a probe:
// 37 MB in two minutes of 10 ms renewals; 119 MB a day at the post's 3 s).
func (s *Store) write(ctx context.Context, q string, args []any, dest ...any) error {
	rows, err := s.db().QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	found := rows.Next()
	if found {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for rows.Next() {
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if !found {
		return sql.ErrNoRows
	}
	return nil
}

// update runs a compare-and-set UPDATE ... RETURNING epoch, version,
// incarnation that writes holder with a lease of ttl and a new nonce and a
// fresh incarnation, its last parameters (keepLife).
func (s *Store) update(op, q string, holder int64, ttl time.Duration, args ...any) (lease.Record, error) {
	if err := s.follow(); err != nil {
		return lease.Record{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	nonce := newNonce()
	rec := lease.Record{Holder: holder, TTL: lease.StatedTTL(ttl), Nonce: uint64(nonce)}
	var life int64
	err := s.write(ctx, q, append(args, nonce, newLife()), s.scanDest(&rec.Epoch, &rec.Version, &life)...)
	rec.Incarnation = uint64(max(life, 0))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return lease.Record{}, s.outcome(op, lease.ErrConflict)
	case err != nil:
		rec.Epoch, rec.Version, rec.Incarnation = 0, 0, 0 // what it sent: lease.Store
		return rec, s.fail(op, err)
	}
	s.ring()
	return rec, nil
}

// Renew bumps the version and the expiry of cur's row if cur is still the
// live record, else fails with lease.ErrConflict.
func (s *Store) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if err := s.noVersionLeft("renew", cur.Version); err != nil {
		return lease.Record{}, err
	}
	return s.update("renew", s.qRenew, cur.Holder, ttl, s.name, cur.Holder, cur.Epoch, cur.Version, s.ttlMS(ttl), lease.TTLMillis(ttl), int64(cur.Nonce))
}

// Takeover writes holder, with the next version as its epoch, if stale is
// still the live record, else fails with lease.ErrConflict (also when the
// row has expired: re-read, then Create).
func (s *Store) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	if stale.Holder == lease.Unknown {
		return s.takeoverForeign(holder, ttl)
	}
	if err := s.noVersionLeft("takeover", stale.Version); err != nil {
		return lease.Record{}, err
	}
	return s.update("takeover", s.qTakeover, holder, ttl, s.name, stale.Holder, stale.Epoch, stale.Version, s.ttlMS(ttl), holder, lease.TTLMillis(ttl), int64(stale.Nonce))
}

// Release sets the holder to 0 and bumps the version if cur is still the
// live record, else fails with lease.ErrConflict. The row stays, and with
// it the version the next epoch follows.
func (s *Store) Release(cur lease.Record) error {
	if err := s.follow(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var n int64
	if s.dialect == Postgres { // a query: the statement notifies
		var one int
		switch err := s.write(ctx, s.qRelease, []any{s.name, cur.Holder, cur.Epoch, cur.Version, int64(cur.Nonce)}, s.scanDest(&one)...); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return s.fail("release", err)
		default:
			n = 1
		}
	} else {
		res, err := s.db().ExecContext(ctx, s.qRelease, s.name, cur.Holder, cur.Epoch, cur.Version, int64(cur.Nonce))
		if err != nil {
			return s.fail("release", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return s.fail("release", err)
		}
	}
	if n == 0 {
		return s.outcome("release", lease.ErrConflict)
	}
	s.ring()
	return nil
}
