package sqlstore

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A row an operator set to the highest versions a BIGINT holds: every
// write and read fails with ErrNoVersionLeft, and the row is left as it
// was. (PostgreSQL refused the writes with "bigint out of range"; SQLite
// stored the sum 9223372036854775807 + 1 as a REAL that no read could
// scan again: a deployment probe.)
func TestNoVersionPastMax(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		s := openTable(t, d, dsn, table, "jobs")
		db := rawDB(t, d, dsn)
		for _, v := range []int64{lease.MaxVersion, math.MaxInt64 - 1, math.MaxInt64} {
			exec(t, db, `DELETE FROM `+table)
			// An expired row (a create over it), then a live one of
			// holder 7 (a renewal, a takeover, a release of it).
			exec(t, db, `INSERT INTO `+table+` (name, holder, epoch, version, expires_ms) VALUES ('jobs', 7, $1, $1, 1000)`, v)
			if _, err := s.Read(); !errors.Is(err, ErrNoVersionLeft) {
				t.Errorf("version %d: Read: %v, want ErrNoVersionLeft", v, err)
			}
			rec, err := s.Create(8, 9*time.Second)
			if err == nil {
				t.Errorf("version %d: Create over the expired row = %+v", v, rec)
			}
			exec(t, db, `UPDATE `+table+` SET expires_ms = 9000000000000`)
			cur := lease.Record{Holder: 7, Epoch: v, Version: v}
			if rec, err := s.Renew(cur, 9*time.Second); !errors.Is(err, ErrNoVersionLeft) {
				t.Errorf("version %d: Renew = %+v, %v; want ErrNoVersionLeft", v, rec, err)
			}
			if rec, err := s.Takeover(cur, 8, 9*time.Second); !errors.Is(err, ErrNoVersionLeft) {
				t.Errorf("version %d: Takeover = %+v, %v; want ErrNoVersionLeft", v, rec, err)
			}
			var version int64
			if err := db.QueryRow(`SELECT version FROM ` + table).Scan(&version); err != nil || version != v {
				t.Errorf("version %d: the row's version is now %d, %v", v, version, err)
			}
		}
		// One below: the last version is written, then none.
		exec(t, db, `DELETE FROM `+table)
		exec(t, db, `INSERT INTO `+table+` (name, holder, epoch, version, expires_ms) VALUES ('jobs', 0, $1, $1, 1000)`, lease.MaxVersion-1)
		rec, err := s.Create(8, 9*time.Second)
		if err != nil || rec.Version != lease.MaxVersion {
			t.Fatalf("Create at MaxVersion-1 = %+v, %v; want version MaxVersion", rec, err)
		}
		if _, err := s.Renew(rec, 9*time.Second); !errors.Is(err, ErrNoVersionLeft) {
			t.Errorf("Renew at MaxVersion: %v, want ErrNoVersionLeft", err)
		}
	})
}
