package sqlstore

import (
	"testing"
	"time"
)

// A create over an expired (or released) row that no leaselab wrote, of a
// negative version, starts again at version 1, as a foreign row's
// takeover does: version + 1 made a record of a negative epoch and
// version, which every reader, its creator included, then took for a
// foreign row held by lease.Unknown (a review, 2026-12-07).
func TestCreateOverANegativeVersion(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		s := openTable(t, d, dsn, table, "jobs")
		db := rawDB(t, d, dsn)
		for _, holder := range []int64{-3, 0} {
			exec(t, db, `DELETE FROM `+table)
			exec(t, db, `INSERT INTO `+table+` (name, holder, epoch, version, expires_ms) VALUES ('jobs', $1, -5, -5, 1000)`, holder)
			rec, err := s.Create(7, 9*time.Second)
			if err != nil || rec.Epoch != 1 || rec.Version != 1 {
				t.Fatalf("holder %d: Create over a row of version -5 = %+v, %v; want epoch and version 1", holder, rec, err)
			}
			rec.Vanished, rec.VanishedTTL, rec.VanishedNonce = 0, 0, 0 // (the create's answer)
			if got, err := s.Read(); err != nil || got != rec {
				t.Errorf("holder %d: the creator's record reads as %+v, %v; want %+v", holder, got, err, rec)
			}
		}
	})
}
