package sqlstore

import (
	"testing"
	"time"
)

// Review: a create over an expired (or released) row that no leaselab
// wrote, of a negative version, makes a record of a negative epoch and
// version (version + 1), which every reader then takes for a foreign row
// held by lease.Unknown; its holder renews it as its own.
func TestReviewCreateOverNegativeVersion(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		s := openTable(t, d, dsn, table, "jobs")
		db := rawDB(t, d, dsn)
		for _, holder := range []int64{-3, 0} {
			exec(t, db, `DELETE FROM `+table)
			exec(t, db, `INSERT INTO `+table+` (name, holder, epoch, version, expires_ms) VALUES ('jobs', $1, -5, -5, 1000)`, holder)
			_, rerr := s.Read()
			rec, err := s.Create(7, 9*time.Second)
			t.Logf("holder %d: read %v; create %+v, %v", holder, rerr, rec, err)
			if err == nil && (rec.Epoch <= 0 || rec.Version <= 0) {
				t.Errorf("holder %d: create returned epoch %d version %d", holder, rec.Epoch, rec.Version)
			}
			got, err := s.Read()
			t.Logf("holder %d: read back %+v, %v", holder, got, err)
			if err == nil && got.Holder != 7 {
				t.Errorf("holder %d: the creator's own record reads as %+v", holder, got)
			}
		}
	})
}
