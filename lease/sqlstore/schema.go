package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaselab/leaselab/lease"
	"modernc.org/sqlite"
)

// createTable makes the lease table if it does not exist.
func (s *Store) createTable(ctx context.Context) error {
	_, err := s.db().ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (
	name TEXT PRIMARY KEY,
	holder BIGINT NOT NULL,
	epoch BIGINT NOT NULL,
	version BIGINT NOT NULL,
	expires_ms BIGINT NOT NULL,
	lease_ms BIGINT NOT NULL DEFAULT 0,
	lease_version BIGINT NOT NULL DEFAULT 0,
	nonce BIGINT NOT NULL DEFAULT 0,
	dropped_version BIGINT NOT NULL DEFAULT 0,
	dropped_lease_ms BIGINT NOT NULL DEFAULT 0,
	dropped_nonce BIGINT NOT NULL DEFAULT 0,
	incarnation BIGINT NOT NULL DEFAULT 0)`)
	return err
}

// noTable reports whether err is the database saying the table does not
// exist: PostgreSQL's undefined_table (SQLSTATE 42P01), SQLite's "no such
// table" (a plain SQLITE_ERROR, told apart by its message).
func noTable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "42P01"
	}
	var lite *sqlite.Error
	return errors.As(err, &lite) && strings.Contains(lite.Error(), "no such table")
}

// leaseColumns are the columns a table made before leaselab kept the
// writer's lease (and, since 2026-12-05, its nonce; since 2026-12-07, the
// version an expired row's create replaced, its lease and nonce; and the
// incarnation) lacks; leaseColumnType is
// their definition.
var leaseColumns = []string{"lease_ms", "lease_version", "nonce", "dropped_version", "dropped_lease_ms", "dropped_nonce", "incarnation"}

const leaseColumnType = "BIGINT NOT NULL DEFAULT 0"

// errNoTable is missingColumns's error for a table that does not exist.
var errNoTable = errors.New("no such table")

// missingColumns returns which of leaseColumns table lacks.
func (s *Store) missingColumns(ctx context.Context, table string) ([]string, error) {
	// The table's columns, resolved as the statements resolve its name:
	// SQLite's pragma_table_info, PostgreSQL's catalog for the relation the
	// search path finds. (table is a plain identifier: see New.)
	q := `SELECT name FROM pragma_table_info('` + table + `')`
	if s.dialect == Postgres {
		q = `SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`
	}
	var args []any
	if s.dialect == Postgres {
		args = append(args, table)
	}
	rows, err := s.db().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		have[strings.ToLower(c)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("%s: %w", table, errNoTable)
	}
	var missing []string
	for _, c := range leaseColumns {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	return missing, nil
}

// addColumns adds columns (of leaseColumns) to table: rows written before
// then read with lease_ms 0 and lease_version 0, a record that states no
// lease, and nonce 0, none. Processes opening the table at once may each add them:
// PostgreSQL's ADD COLUMN IF NOT EXISTS lets all succeed; SQLite has no IF
// NOT EXISTS there, and a failed ALTER is forgiven only if the column is
// there now (another client added it: "duplicate column name").
func (s *Store) addColumns(ctx context.Context, table string, columns []string) error {
	for _, c := range columns {
		q := `ALTER TABLE ` + table + ` ADD COLUMN ` + c + ` ` + leaseColumnType
		if s.dialect == Postgres {
			q = `ALTER TABLE ` + table + ` ADD COLUMN IF NOT EXISTS ` + c + ` ` + leaseColumnType
		}
		_, aerr := s.db().ExecContext(ctx, q)
		if aerr == nil {
			continue
		}
		missing, err := s.missingColumns(ctx, table)
		if err != nil {
			return fmt.Errorf("adding column %s to table %s: %w (then: %v)", c, table, aerr, err)
		}
		if slices.Contains(missing, c) {
			return fmt.Errorf("adding column %s to table %s, made by an earlier leaselab: %w", c, table, aerr)
		}
	}
	return nil
}

// rowNonce is the nonce of a row of version: its nonce column, when
// written with the version (lease_version = version, as lease_ms); none
// (0) when an earlier leaselab wrote the version; an error for a negative
// one, which no writer writes.
func rowNonce(version, leaseVersion, nonce int64) (uint64, error) {
	switch {
	case nonce < 0:
		return 0, fmt.Errorf("nonce %d", nonce)
	case leaseVersion != version:
		return 0, nil
	}
	return uint64(nonce), nil
}

// newNonce is a write's nonce: what lease.NewNonce draws, as the column
// keeps it.
func newNonce() int64 { return int64(lease.NewNonce()) }

// rowTTL is the lease a row of version states: lease_ms, when it was
// written with the version (lease_version = version); none (0) when an
// earlier leaselab wrote the version, which leaves both columns as they
// were (or at their defaults, 0); an error for what no writer writes.
func rowTTL(version, leaseMS, leaseVersion int64) (time.Duration, error) {
	switch {
	case leaseVersion < 0 || leaseVersion > version:
		return 0, fmt.Errorf("lease_version %d is not a version up to %d", leaseVersion, version)
	case leaseVersion != version:
		return 0, nil
	case leaseMS == 0:
		return 0, nil // written with no lease (ttl <= 0)
	}
	ttl, err := lease.TTLFromMillis(leaseMS)
	if err != nil {
		return 0, fmt.Errorf("lease_ms: %w", err)
	}
	return ttl, nil
}

// The incarnation of the row (lease.Record.Incarnation) is a random
// number the INSERT that makes it draws, which every write keeps and
// none deletes (a release keeps the row): a new one says the row was
// made again, the table dropped or emptied, a database made anew, which
// the versions, counting again from 1, cannot always show (a scripted
// run: a newcomer after the loss led and released, and a watcher paused
// across the loss created above the version it had seen, and led beside
// that version's holder). A write over a row of none (an earlier
// leaselab's, an operator's 0 or text) gives it one: keepLife.

// keepLife is a write's new incarnation: cur, the row's as an integer,
// if it names one, else fresh (a parameter, newLife).
func keepLife(cur, fresh string) string {
	return `CASE WHEN ` + cur + ` > 0 THEN ` + cur + ` ELSE ` + fresh + ` END`
}

// newLife is a fresh incarnation: random, above 0 as a BIGINT.
func newLife() int64 { return int64(lease.NewNonce()>>2) + 1 }

// lifeIn is the incarnation a read found: 0 (not known) for none, and
// for what no leaselab writes.
func lifeIn(v any) uint64 {
	n, ok := v.(int64)
	if !ok || n <= 0 {
		return 0
	}
	return uint64(n)
}
