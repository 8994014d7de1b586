package sqlstore

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/leaselab/leaselab/lease"
)

// A row whose version an operator set near the top of a BIGINT: every
// write adds one to it. Until 2026-12-07, at 9223372036854775807,
// PostgreSQL refused every write with "bigint out of range (SQLSTATE
// 22003)", and SQLite turned the sum into a REAL, 9.22337203685478e+18,
// that every read failed to scan, for good, the row's version corrupted (a
// deployment probe). The store now writes no version past lease.MaxVersion,
// as the file store does not: a read of a row at it or past it, and a
// write over one, fail with ErrNoVersionLeft, which says what to do.

// ErrNoVersionLeft is the error of a read of a row whose version is at
// or past lease.MaxVersion, and of every write over one.
var ErrNoVersionLeft = errors.New("the row's version is at lease.MaxVersion, the highest the store writes: delete the row (its epochs start again at 1)")

// belowMax is the condition a write's row meets: its version has a next
// one.
func belowMax(table string) string {
	return table + `.version < ` + strconv.FormatInt(lease.MaxVersion, 10)
}

// noVersionLeft is op's error for a record of version v at or past
// lease.MaxVersion, or nil.
func (s *Store) noVersionLeft(op string, v int64) error {
	if v < lease.MaxVersion {
		return nil
	}
	return s.fail(op, fmt.Errorf("version %d: %w", v, ErrNoVersionLeft))
}

// realAtMax reports whether a version SQLite keeps as a real is at or
// past lease.MaxVersion: a row no write can take over (belowMax), which
// as a foreign row was waited out and then refused every takeover.
func realAtMax(v any) bool {
	f, ok := v.(float64)
	return ok && f >= float64(lease.MaxVersion)
}
