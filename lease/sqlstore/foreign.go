package sqlstore

import (
	"fmt"
	"sync"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A row at the lease's name that no leaselab writes (an operator's or
// another program's UPDATE: a negative lease_ms, a holder below 0, an
// epoch above its version) with an expiry in the future is, as a value
// leaselab did not write is on Redis and etcd, a record held by no one
// known (lease.Unknown) at the row's version, told to Options.OnError
// with why. The reference waits it out (its own lease, or the longest it
// has seen stated) and takes it over by compare-and-set on that very row,
// every column of it. Until 2026-12-07 it was a read error until it
// expired, read again and again, and nobody led over one that never did.

// foreignRow is a row's columns as read: holder, epoch, version,
// expires_ms, lease_ms, lease_version, nonce. Each is the value the
// driver gave, an int64 or (SQLite) whatever the column was given: a
// takeover compares each with the value itself.
type foreignRow [7]any

// readColumns are qRead's columns, as the driver gives them.
type readColumns [8]any

// qRead's columns, in order.
const (
	colHolder = iota
	colEpoch
	colVersion
	colLive
	colLeaseMS
	colLeaseVersion
	colNonce
	colExpires
)

// readNames names qRead's columns for an error.
var readNames = [len(readColumns{})]string{"holder", "epoch", "version", "expires_ms", "lease_ms", "lease_version", "nonce", "expires_ms"}

// ints returns the columns as integers (0 for one that is not) and the
// first that is not an integer, or -1.
func (r *readColumns) ints() ([len(readColumns{})]int64, int) {
	var v [len(readColumns{})]int64
	bad := -1
	for i, x := range r {
		n, ok := x.(int64)
		if !ok && bad < 0 {
			bad = i
		}
		v[i] = n
	}
	return v, bad
}

// describe says what a column that is not an integer holds.
func describe(x any) string {
	switch x := x.(type) {
	case nil:
		return "NULL"
	case string:
		return fmt.Sprintf("the text %q", x)
	case []byte:
		return fmt.Sprintf("a blob of %d bytes", len(x))
	case float64:
		return fmt.Sprintf("the real %v", x)
	}
	return fmt.Sprintf("%T %v", x, x)
}

// foreign is the last row read that is not a lease record.
type foreign struct {
	mu  sync.Mutex
	row foreignRow
	has bool
	// qTakeover replaces the row read, if it is still every column as it
	// was, with a record for a holder (prepareForeign).
	qTakeover string
}

// foreignRecord tells OnError why row is not a lease record, keeps it for
// a takeover, and returns the record that stands for it.
func (s *Store) foreignRecord(row foreignRow, life uint64, why error) lease.Record {
	if s.onError != nil {
		s.onError("read", fmt.Errorf("sqlstore: read %s: row holder %v, epoch %v, version %v is %w: %v", s.name, row[0], row[1], row[2], errNotRecord, why))
	}
	s.foreign.mu.Lock()
	s.foreign.row, s.foreign.has = row, true
	s.foreign.mu.Unlock()
	v, _ := row[2].(int64) // (0 if not an integer)
	return lease.Record{Holder: lease.Unknown, Version: max(v, 0), Incarnation: life}
}

// prepareForeign writes the statement that takes a foreign row over. Its
// new version follows the row's (1 after a negative one), and so does the
// epoch, as any takeover's.
func (s *Store) prepareForeign(table string) {
	// (CAST: a version SQLite was given as text or a real counts as the
	// integer it casts to, 0 for text, and the row's next is an integer.)
	next := `CASE WHEN version < 0 THEN 1 ELSE CAST(version AS BIGINT) + 1 END`
	q := `UPDATE ` + table + ` SET holder = $10, epoch = ` + next + `, version = ` + next + `, expires_ms = ` + s.dialect.now() + ` + $9,
	lease_ms = $11, lease_version = ` + next + `, nonce = $12, incarnation = ` + keepLife(`CAST(incarnation AS BIGINT)`, "$13") + `
WHERE name = $1 AND holder = $2 AND epoch = $3 AND version = $4 AND expires_ms = $5 AND lease_ms = $6 AND lease_version = $7 AND nonce = $8 AND ` + belowMax(table) + `
RETURNING epoch, version, incarnation`
	if s.dialect == Postgres {
		q = `WITH w AS (` + q + `) SELECT epoch, version, incarnation, pg_notify('` + s.channel() + `', '') FROM w`
	}
	s.foreign.qTakeover = q
}

// takeoverForeign replaces the foreign row last read, if it is still
// that row, with a record for holder; a conflict if none was read or it
// changed since.
func (s *Store) takeoverForeign(holder int64, ttl time.Duration) (lease.Record, error) {
	s.foreign.mu.Lock()
	row, ok := s.foreign.row, s.foreign.has
	s.foreign.mu.Unlock()
	if !ok {
		return lease.Record{}, s.outcome("takeover", lease.ErrConflict)
	}
	return s.update("takeover", s.foreign.qTakeover, holder, ttl, s.name, row[0], row[1], row[2], row[3], row[4], row[5], row[6], s.ttlMS(ttl), holder, lease.TTLMillis(ttl))
}
