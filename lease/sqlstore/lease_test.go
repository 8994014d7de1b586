package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
)

// oldSchema is the table an earlier leaselab made, before rows kept their
// writer's lease.
const oldSchema = `CREATE TABLE %s (
	name TEXT PRIMARY KEY,
	holder BIGINT NOT NULL,
	epoch BIGINT NOT NULL,
	version BIGINT NOT NULL,
	expires_ms BIGINT NOT NULL)`

// An earlier leaselab's statements: its create, and its renewal (which
// leaves the columns it does not know as they were).
const (
	oldCreate = `INSERT INTO %s (name, holder, epoch, version, expires_ms) VALUES ($1, $2, 1, 1, %s + $3)`
	oldRenew  = `UPDATE %s SET version = version + 1, expires_ms = %s + $5
WHERE name = $1 AND holder = $2 AND epoch = $3 AND version = $4 AND holder <> 0 AND expires_ms > %s`
)

// dialects runs f on SQLite (a file in a temporary directory) and on one
// PostgreSQL server, each subtest with a table of its own.
func dialects(t *testing.T, f func(t *testing.T, d Dialect, dsn, table string)) {
	var seq int
	table := func() string { seq++; return fmt.Sprintf("leases_%d", seq) }
	t.Run("sqlite", func(t *testing.T) {
		f(t, SQLite, filepath.Join(t.TempDir(), "leases.db"), table())
	})
	t.Run("postgres", func(t *testing.T) {
		f(t, Postgres, servertest.Postgres(t).DSN(), table())
	})
}

func openTable(t *testing.T, d Dialect, dsn, table, name string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, d, dsn, Options{Name: name, Table: table, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB opens the database as an earlier leaselab (or an operator) would.
func rawDB(t *testing.T, d Dialect, dsn string) *sql.DB {
	t.Helper()
	if d == SQLite {
		dsn += "?_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(d.driver(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// The row keeps the writer's lease in whole ms, rounded up (lease_ms, with
// lease_version the version it was written with); another client reads it
// back, and the record each write returns is the one stored.
func TestRowStatesLease(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		a, b := openTable(t, d, dsn, table, "jobs"), openTable(t, d, dsn, table, "jobs")
		columns := func() (ms, version int64, nonce uint64) {
			t.Helper()
			if err := a.db().QueryRow(`SELECT lease_ms, lease_version, nonce FROM `+table+` WHERE name = 'jobs'`).Scan(&ms, &version, &nonce); err != nil {
				t.Fatal(err)
			}
			return
		}
		r1, err := a.Create(7, 27*time.Second)
		if err != nil || r1 != (lease.Record{Holder: 7, Epoch: 1, Version: 1, TTL: 27 * time.Second, Nonce: r1.Nonce, Incarnation: r1.Incarnation}) || r1.Nonce == 0 || r1.Incarnation == 0 {
			t.Fatalf("Create with a 27 s lease = %+v, %v", r1, err)
		}
		if ms, v, n := columns(); ms != 27000 || v != 1 || n != r1.Nonce {
			t.Errorf("lease_ms %d, lease_version %d, nonce %d; want 27000 1 %d", ms, v, n, r1.Nonce)
		}
		if got, err := b.Read(); err != nil || got != r1 {
			t.Errorf("another client reads %+v, %v; want %+v", got, err, r1)
		}
		r2, err := a.Renew(r1, 9*time.Second)
		if err != nil || r2 != (lease.Record{Holder: 7, Epoch: 1, Version: 2, TTL: 9 * time.Second, Nonce: r2.Nonce, Incarnation: r1.Incarnation}) || r2.Nonce == 0 || r2.Nonce == r1.Nonce {
			t.Fatalf("Renew with a 9 s lease = %+v, %v (after %+v: every write has a nonce of its own)", r2, err, r1)
		}
		if got, err := b.Read(); err != nil || got != r2 {
			t.Errorf("after the renewal another client reads %+v, %v; want %+v", got, err, r2)
		}
		r3, err := b.Takeover(r2, 8, 2700*time.Millisecond+time.Microsecond)
		if err != nil || r3 != (lease.Record{Holder: 8, Epoch: 3, Version: 3, TTL: 2701 * time.Millisecond, Nonce: r3.Nonce, Incarnation: r1.Incarnation}) || r3.Nonce == 0 || r3.Nonce == r2.Nonce {
			t.Fatalf("Takeover with a 2.700001 s lease = %+v, %v; want it rounded up to 2.701 s, with a nonce of its own", r3, err)
		}
		if ms, v, n := columns(); ms != 2701 || v != 3 || n != r3.Nonce {
			t.Errorf("lease_ms %d, lease_version %d, nonce %d; want 2701 3 %d", ms, v, n, r3.Nonce)
		}
		// The nonce is compared: the record with another nonce is another.
		other := r3
		other.Nonce++
		if _, err := a.Renew(other, time.Second); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("Renew of the record with another nonce: %v, want a conflict", err)
		}
		if err := a.Release(other); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("Release of the record with another nonce: %v, want a conflict", err)
		}
		if got, err := a.Read(); err != nil || got != r3 {
			t.Errorf("after the takeover another client reads %+v, %v; want %+v", got, err, r3)
		}
	})
}

// A table an earlier leaselab made, with a row it wrote: Open adds the
// columns (concurrent Opens all succeed), the row reads with TTL 0 and is
// taken over by compare-and-set; a renewal by an earlier leaselab after
// that (which leaves lease_ms as it was) reads with TTL 0 too, not with
// the lease of the write before it; so does its create.
func TestOldTable(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		db := rawDB(t, d, dsn)
		now := d.now()
		exec(t, db, fmt.Sprintf(oldSchema, table))
		exec(t, db, fmt.Sprintf(oldCreate, table, now), "jobs", 5, 9000)
		// Processes of the new version start at once, each its own client.
		const n = 6
		stores := make([]*Store, n)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				stores[i], errs[i] = Open(ctx, d, dsn, Options{Name: "jobs", Table: table, Timeout: 5 * time.Second})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Open %d of a table made by an earlier leaselab: %v", i, err)
			}
			t.Cleanup(func() { stores[i].Close() })
		}
		a, b := stores[0], stores[1]
		rec, err := b.Read()
		if want := (lease.Record{Holder: 5, Epoch: 1, Version: 1}); err != nil || rec != want {
			t.Fatalf("Read of the earlier leaselab's row = %+v, %v; want %+v (TTL 0)", rec, err, want)
		}
		r, err := b.Takeover(rec, 8, 9*time.Second)
		// (The earlier leaselab's row has no incarnation: the takeover
		// gives it one.)
		if want := (lease.Record{Holder: 8, Epoch: 2, Version: 2, TTL: 9 * time.Second, Nonce: r.Nonce, Incarnation: r.Incarnation}); err != nil || r != want || r.Nonce == 0 || r.Incarnation == 0 {
			t.Fatalf("Takeover of the earlier leaselab's row = %+v, %v; want %+v", r, err, want)
		}
		if got, err := a.Read(); err != nil || got != r {
			t.Errorf("after the takeover: Read = %+v, %v; want %+v", got, err, r)
		}
		// An earlier leaselab renews the row (as if it held it): the
		// version is its, and states no lease and no nonce.
		exec(t, db, fmt.Sprintf(oldRenew, table, now, now), "jobs", 8, 2, 2, 27000)
		rec, err = a.Read()
		if want := (lease.Record{Holder: 8, Epoch: 2, Version: 3, Incarnation: r.Incarnation}); err != nil || rec != want {
			t.Fatalf("Read after an earlier leaselab's renewal = %+v, %v; want %+v (TTL 0, not the 9 s before it)", rec, err, want)
		}
		if r, err = b.Takeover(rec, 9, 27*time.Second); err != nil || r.TTL != 27*time.Second || r.Version != 4 {
			t.Fatalf("Takeover after an earlier leaselab's renewal = %+v, %v", r, err)
		}
		if err := b.Release(r); err != nil {
			t.Fatal(err)
		}
		// An earlier leaselab's create, on a fresh name: its row states no
		// lease (the columns' defaults).
		exec(t, db, fmt.Sprintf(oldCreate, table, now), "other", 5, 9000)
		o := openTable(t, d, dsn, table, "other")
		if rec, err := o.Read(); err != nil || rec != (lease.Record{Holder: 5, Epoch: 1, Version: 1}) {
			t.Errorf("Read of an earlier leaselab's new row = %+v, %v; want TTL 0", rec, err)
		}
	})
}

// prevSchema is the table the leaselab before the nonce made: the
// writer's lease, no nonce; prevRenew its renewal, which writes lease_ms
// and lease_version and leaves the nonce as it was.
const (
	prevSchema = `CREATE TABLE %s (
	name TEXT PRIMARY KEY,
	holder BIGINT NOT NULL,
	epoch BIGINT NOT NULL,
	version BIGINT NOT NULL,
	expires_ms BIGINT NOT NULL,
	lease_ms BIGINT NOT NULL DEFAULT 0,
	lease_version BIGINT NOT NULL DEFAULT 0)`
	prevCreate = `INSERT INTO %s (name, holder, epoch, version, expires_ms, lease_ms, lease_version) VALUES ($1, $2, 1, 1, %s + $3, $4, 1)`
	prevRenew  = `UPDATE %s SET version = version + 1, expires_ms = %s + $5, lease_ms = $6, lease_version = version + 1
WHERE name = $1 AND holder = $2 AND epoch = $3 AND version = $4 AND holder <> 0 AND expires_ms > %s`
)

// A table the leaselab before the nonce made: Open adds the nonce column;
// its row reads with its lease and nonce 0 and is taken over by
// compare-and-set; its renewal after that leaves the nonce of the write
// before, which reads as the renewal's, and a compare-and-set on what was
// read matches.
func TestPrevTable(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		db := rawDB(t, d, dsn)
		now := d.now()
		exec(t, db, fmt.Sprintf(prevSchema, table))
		exec(t, db, fmt.Sprintf(prevCreate, table, now), "jobs", 5, 9000, 9000)
		a, b := openTable(t, d, dsn, table, "jobs"), openTable(t, d, dsn, table, "jobs")
		rec, err := b.Read()
		if want := (lease.Record{Holder: 5, Epoch: 1, Version: 1, TTL: 9 * time.Second}); err != nil || rec != want {
			t.Fatalf("Read of the earlier leaselab's row = %+v, %v; want %+v (no nonce)", rec, err, want)
		}
		r, err := b.Takeover(rec, 8, 9*time.Second)
		if err != nil || r.Nonce == 0 || r.Version != 2 {
			t.Fatalf("Takeover of the earlier leaselab's row = %+v, %v", r, err)
		}
		exec(t, db, fmt.Sprintf(prevRenew, table, now, now), "jobs", 8, 2, 2, 27000, 27000)
		rec, err = a.Read()
		if want := (lease.Record{Holder: 8, Epoch: 2, Version: 3, TTL: 27 * time.Second, Nonce: r.Nonce, Incarnation: r.Incarnation}); err != nil || rec != want {
			t.Fatalf("Read after the earlier leaselab's renewal = %+v, %v; want %+v (the nonce of the write before)", rec, err, want)
		}
		if r, err = a.Renew(rec, 9*time.Second); err != nil || r.Version != 4 || r.Nonce == rec.Nonce {
			t.Fatalf("Renew after the earlier leaselab's renewal = %+v, %v", r, err)
		}
		if err := a.Release(r); err != nil {
			t.Fatal(err)
		}
	})
}

// A row whose columns no writer writes, with an expiry in the future, is
// a record held by no one known (lease.Unknown) at the row's version, told
// to OnError saying why, and not an error of opening the table; a takeover
// of it is a compare-and-set on the whole row (until 2026-12-07 it was a
// read error until it expired, and nobody led over one that never did). A
// lease_ms of 0 written with the version is a write that stated none (TTL
// 0).
func TestMalformedRow(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		var told errorLog
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := Open(ctx, d, dsn, Options{Name: "jobs", Table: table, Timeout: 5 * time.Second, OnError: told.add})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r, err := s.Create(7, 9*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			set, why string
		}{
			{"lease_ms = -9000", "a lease of -9000 ms"},
			{"lease_ms = 86400001", "a lease of 86400001 ms"},
			{"lease_version = 2", "lease_version 2 is not a version up to 1"},
			{"lease_version = -1", "lease_version -1"},
			{"nonce = -1", "nonce -1"},
			{"holder = -1", "holder -1"},
			{"epoch = 2", "epoch 2 of version 1"},
			{"expires_ms = expires_ms + 1000000000000", ""}, // (never expires: still a record)
		} {
			exec(t, s.db(), `UPDATE `+table+` SET `+c.set)
			told.take()
			rec, err := s.Read()
			got := told.take()
			if c.why == "" {
				if err != nil || rec.Holder != 7 || len(got) != 0 {
					t.Errorf("Read after %s = %+v, %v (told %v); want holder 7's record", c.set, rec, err, got)
				}
			} else if err != nil || rec.Holder != lease.Unknown || rec.Version != 1 || len(got) != 1 || !strings.Contains(got[0], "not a lease record") || !strings.Contains(got[0], c.why) {
				t.Errorf("Read after %s = %+v, %v, told %v; want a record of lease.Unknown at version 1 and OnError saying %q", c.set, rec, err, got, c.why)
			}
			// Opening the table is not reading the row.
			openTable(t, d, dsn, table, "jobs")
			exec(t, s.db(), `UPDATE `+table+` SET holder = 7, epoch = 1, version = 1, lease_ms = 9000, lease_version = 1, nonce = $1`, int64(r.Nonce))
		}
		// A foreign row that never expires is taken over, on the row as read.
		exec(t, s.db(), `UPDATE `+table+` SET lease_ms = -5`)
		rec, err := s.Read()
		if err != nil || rec.Holder != lease.Unknown {
			t.Fatalf("Read of a foreign row = %+v, %v", rec, err)
		}
		exec(t, s.db(), `UPDATE `+table+` SET lease_ms = -6`)
		if _, err := s.Takeover(rec, 42, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("takeover of a row changed since the read: %v, want a conflict", err)
		}
		if rec, err = s.Read(); err != nil {
			t.Fatal(err)
		}
		nrec, err := s.Takeover(rec, 42, 9*time.Second)
		if err != nil || nrec.Holder != 42 || nrec.Epoch != 2 || nrec.Version != 2 {
			t.Fatalf("takeover of the row read: %+v, %v; want a record of 42, epoch and version 2", nrec, err)
		}
		if got, err := s.Read(); err != nil || got != nrec {
			t.Errorf("after the takeover Read = %+v, %v; want %+v", got, err, nrec)
		}
		exec(t, s.db(), `UPDATE `+table+` SET lease_ms = 0, lease_version = 2`)
		if rec, err := s.Read(); err != nil || rec != (lease.Record{Holder: 42, Epoch: 2, Version: 2, Nonce: nrec.Nonce, Incarnation: nrec.Incarnation}) {
			t.Errorf("Read with lease_ms 0 = %+v, %v; want TTL 0", rec, err)
		}
	})
}

// A user who may read and write an earlier leaselab's table but not alter
// it (it is not the table's owner) cannot open it before its owner has:
// the error says which column could not be added, and why. Once the owner
// has opened it (and so added the columns), the user can.
func TestOldTableNotOwner(t *testing.T) {
	t.Parallel()
	srv := servertest.Postgres(t)
	db := rawDB(t, Postgres, srv.DSN())
	exec(t, db, fmt.Sprintf(oldSchema, "old_leases"))
	exec(t, db, `CREATE ROLE leaser LOGIN PASSWORD 'leaser'`)
	exec(t, db, `GRANT SELECT, INSERT, UPDATE ON old_leases TO leaser`)
	userDSN := strings.Replace(srv.DSN(), servertest.PostgresUser+":"+servertest.PostgresPassword+"@", "leaser:leaser@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, Postgres, userDSN, Options{Name: "jobs", Table: "old_leases", Timeout: 5 * time.Second})
	if err == nil {
		s.Close()
		t.Fatal("a user who may not alter the table opened it without its lease columns")
	}
	if !strings.Contains(err.Error(), "adding column lease_ms to table old_leases") || !strings.Contains(err.Error(), "must be owner") {
		t.Errorf("error %q does not say which column could not be added and why", err)
	}
	t.Logf("not the owner: %v", err)
	openTable(t, Postgres, srv.DSN(), "old_leases", "jobs")
	u := openTable(t, Postgres, userDSN, "old_leases", "jobs")
	if r, err := u.Create(7, 9*time.Second); err != nil || r.TTL != 9*time.Second {
		t.Errorf("Create by the user after the owner's Open = %+v, %v", r, err)
	}
}

// A row an earlier leaselab renewed, which states no nonce, is compared by
// its version: a record of the same holder and epoch read before that
// renewal conflicts (a probe's mutant, 2026-12-07: a compare-and-set on
// the holder, epoch and nonce alone, which a nonce makes unique, passed
// every other test, and replaced such a row's renewal made after the read:
// a takeover beside the earlier leaselab's leader in a rolling upgrade).
func TestStaleRowWithoutNonce(t *testing.T) {
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		s := openTable(t, d, dsn, table, "old")
		db := rawDB(t, d, dsn)
		if _, err := s.Create(7, 9*time.Second); err != nil {
			t.Fatal(err)
		}
		// (What an earlier leaselab's renewal leaves: a lease and a nonce
		// of another version, which the row no longer states.)
		exec(t, db, fmt.Sprintf(oldRenew, table, d.now(), d.now()), "old", 7, 1, 1, 9000)
		stale, err := s.Read()
		if err != nil || stale.Nonce != 0 || stale.Version != 2 {
			t.Fatalf("Read of a row an earlier leaselab renewed = %+v, %v; want version 2, no nonce", stale, err)
		}
		exec(t, db, fmt.Sprintf(oldRenew, table, d.now(), d.now()), "old", 7, 1, 2, 9000)
		if rec, err := s.Takeover(stale, 8, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("Takeover of version 2 after a renewal to 3 = %+v, %v; want lease.ErrConflict", rec, err)
		}
		if rec, err := s.Renew(stale, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("Renew of version 2 after a renewal to 3 = %+v, %v; want lease.ErrConflict", rec, err)
		}
		if err := s.Release(stale); !errors.Is(err, lease.ErrConflict) {
			t.Errorf("Release of version 2 after a renewal to 3 = %v; want lease.ErrConflict", err)
		}
	})
}
