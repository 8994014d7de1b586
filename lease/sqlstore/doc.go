// Package sqlstore is a lease.Store on a SQL database: one row per lease,
// written only by single statements that compare the row's version, so
// that each operation is atomic in the database. Two dialects share the
// statements: SQLite (modernc.org/sqlite, pure Go, no cgo), the embedded
// default, and PostgreSQL (github.com/jackc/pgx/v5) for real deployments.
//
// Table. Options.Table (default leaselab_leases), created if missing:
//
//	name          TEXT PRIMARY KEY            -- the lease's name
//	holder        BIGINT NOT NULL             -- 0: released
//	epoch         BIGINT NOT NULL             -- the version at which holder acquired
//	version       BIGINT NOT NULL             -- +1 at every write
//	expires_ms    BIGINT NOT NULL             -- the server's clock, ms since 1970
//	lease_ms      BIGINT NOT NULL DEFAULT 0   -- the writer's lease, whole ms
//	lease_version BIGINT NOT NULL DEFAULT 0   -- the version lease_ms was written with
//	nonce         BIGINT NOT NULL DEFAULT 0   -- the write's random nonce (lease.Record.Nonce)
//	dropped_version  BIGINT NOT NULL DEFAULT 0  -- the expired row's version a create replaced (lease.Record.Vanished)
//	dropped_lease_ms BIGINT NOT NULL DEFAULT 0  -- its lease_ms, where written with it (Record.VanishedTTL)
//	dropped_nonce    BIGINT NOT NULL DEFAULT 0  -- its nonce, likewise (Record.VanishedNonce)
//
// The writer's lease. Every write stores the lease its writer held it for
// (its LeaseDuration, in whole milliseconds rounded up, 1 to 86,400,000)
// in lease_ms, and the new version in lease_version: Record.TTL, how long
// a watcher waits for the record to change before it takes over, whatever
// its own lease (processes of one lock may run with different leases
// during a rolling change of -lease). A row whose lease_version is not its
// version was written by an earlier leaselab, which leaves both columns as
// they were (or at their defaults): it reads with TTL 0, and a watcher
// waits its own lease, not the lease of some write before it; it is
// renewed, taken over and released as any other. A live row whose columns
// no writer writes (a lease_ms out of range, a lease_version after the
// version, a negative holder or nonce, an epoch above its version) reads
// as a record held by lease.Unknown, told to Options.OnError with why, and
// is taken over by compare-and-set on every column (foreign.go). The nonce is written, and read, as lease_ms
// is: a row whose lease_version is not its version has none (0), and
// every compare-and-set compares it as read (a leaselab from before the
// nonce, which writes lease_version, leaves the nonce of the write before
// its own, read as its). Open adds the columns it lacks to a table an
// earlier leaselab made (PostgreSQL: ALTER TABLE ... ADD COLUMN IF NOT
// EXISTS; SQLite, which has no IF NOT EXISTS there, when
// pragma_table_info lacks them, and a concurrent Open's "duplicate column"
// is forgiven once the column is there); that needs the right to alter
// the table (its owner, in PostgreSQL), and Open fails, naming the column,
// without it.
//
// Versions and epochs. The row is never deleted: a release sets holder 0
// and bumps the version, so versions strictly increase for the life of the
// table, and an acquisition's epoch (the new version) is never one used
// before, not after a release and not after an expiry. (Deleting the row
// would start versions again at 1 and reuse epochs.) Until is 0.
//
// Operations. Create is one statement, INSERT ... ON CONFLICT (name) DO
// UPDATE ... WHERE the row is released or expired, RETURNING the new epoch
// and version and, over an expired row, the dropped_* columns it set
// (lease.Record.Vanished: that record went without a release, and its
// holder may still lead): it inserts the first row, or takes over a dead
// one, or (no row returned) fails with fs.ErrExist. Renew, Takeover and Release are
// UPDATEs whose WHERE names the expected holder, epoch and version and
// requires a live row; no row updated is lease.ErrConflict. Read returns
// fs.ErrNotExist for a missing, released or expired row. Concurrent
// statements on the row are serialized by the database (PostgreSQL's row
// lock, which re-checks the WHERE after waiting; SQLite's database lock).
//
// Expiry. Every write stamps expires_ms with the database server's clock
// (PostgreSQL clock_timestamp(), SQLite julianday('now')) plus the lease
// duration and Options.ExpiryMargin, and an expired row counts as absent:
// Read does not return it, Renew, Takeover and Release of it fail with
// lease.ErrConflict (the caller re-reads and creates), Create takes it
// over. That expiry is a safety net for abandoned leases, not what elects:
// lease.Reference takes over only after the record has not changed for a
// lease on the observer's own monotonic clock, and its leader stops at a
// local deadline shorter than the lease. The stamp is the server's wall
// clock, so a step of that clock moves it and may drop a live row: Read
// tells that from a release (a released row has holder 0:
// lease.ErrReleased; an expired one a *lease.VanishedError; Store is
// lease.Vanishing), and lease.Reference waits a dropped record out as if
// it were there. A margin absorbs small steps.
//
// Timeouts. Every statement has its own deadline (Options.Timeout, default
// 1 s; keep it well under the renew interval); SQLite also waits at most
// that long for a lock held by another connection (busy_timeout). Errors
// other than the contract's outcomes (timeouts, a dead server, refused
// credentials, SQLITE_BUSY) are returned as they are: the outcome is
// unknown, and lease.Reference retries, stepping down at its local
// deadline.
package sqlstore
