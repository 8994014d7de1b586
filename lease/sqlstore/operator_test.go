package sqlstore

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec/storetest"
)

// SQLite keeps what a column is given, whatever its declared type: a row
// with text, a real or a blob where leaselab writes integers (an
// operator's UPDATE) is a foreign row, read as a record of lease.Unknown
// with OnError naming the column, and taken over by compare-and-set on
// the values as stored; an expired one is taken over by a create, and the
// record made is all integers again. (Until 2026-12-07 the read failed
// with a scan error and leaselab run exited with status 2: a probe.)
func TestRowOfOtherTypes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var told errorLog
	dsn := filepath.Join(t.TempDir(), "leases.db")
	s, err := Open(ctx, SQLite, dsn, Options{Name: "jobs", Table: "leases", Timeout: 5 * time.Second, OnError: told.add})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toldNow := told.take
	for _, c := range []struct{ set, why string }{
		{"holder = 'abc'", `holder is the text "abc"`},
		{"epoch = 'one'", `epoch is the text "one"`},
		{"version = 2.5", "version is the real 2.5"},
		{"expires_ms = 'never'", `expires_ms is the text "never"`},
		{"lease_ms = 9000.5", "lease_ms is the real 9000.5"},
		{"lease_version = x'01'", "lease_version is a blob of 1 bytes"},
		{"nonce = 'n'", `nonce is the text "n"`},
	} {
		if _, err := s.Create(7, 9*time.Second); err != nil {
			t.Fatalf("%s: Create: %v", c.set, err)
		}
		exec(t, s.db(), `UPDATE leases SET `+c.set)
		toldNow()
		rec, err := s.Read()
		got := toldNow()
		if err != nil || rec.Holder != lease.Unknown || len(got) != 1 || !strings.Contains(got[0], "not a lease record") || !strings.Contains(got[0], c.why) {
			t.Errorf("Read after %s = %+v, %v, told %v; want a record of lease.Unknown and OnError saying %q", c.set, rec, err, got, c.why)
			continue
		}
		nrec, err := s.Takeover(rec, 42, 9*time.Second)
		if err != nil || nrec.Holder != 42 || nrec.Epoch < 1 || nrec.Version < nrec.Epoch {
			t.Errorf("takeover of the row after %s: %+v, %v; want a record of 42", c.set, nrec, err)
			continue
		}
		if back, err := s.Read(); err != nil || back != nrec || len(toldNow()) != 0 {
			t.Errorf("after the takeover of the row after %s: Read = %+v, %v; want %+v", c.set, back, err, nrec)
		}
		if err := s.Release(nrec); err != nil {
			t.Fatal(err)
		}
	}

	// A real version past lease.MaxVersion is one no write follows, as an
	// integer's is, not a foreign row whose every takeover fails.
	if _, err := s.Create(7, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	exec(t, s.db(), `UPDATE leases SET version = 1e30`)
	if _, err := s.Read(); !errors.Is(err, ErrNoVersionLeft) {
		t.Errorf("Read of a row of version 1e30: %v, want ErrNoVersionLeft", err)
	}
	exec(t, s.db(), `DELETE FROM leases`)
	toldNow()

	// An expired row with a column of another type: read as gone, and
	// taken over by a create whose record, and row, are integers.
	for _, set := range []string{"nonce = 'n'", "version = 2.5", "lease_ms = 'long'", "lease_ms = 27000.5"} {
		if _, err := s.Create(7, 9*time.Second); err != nil {
			t.Fatalf("%s: Create: %v", set, err)
		}
		exec(t, s.db(), `UPDATE leases SET expires_ms = 0, `+set)
		if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read of an expired row with %s: %v, want it gone", set, err)
		}
		nrec, err := s.Create(8, 9*time.Second)
		if err != nil || nrec.Holder != 8 || nrec.Vanished == 0 {
			t.Errorf("Create over an expired row with %s: %+v, %v; want a record of 8 over a vanished one", set, nrec, err)
			continue
		}
		want := nrec
		want.Vanished, want.VanishedTTL, want.VanishedNonce = 0, 0, 0 // (what the create replaced: not the record's)
		if back, err := s.Read(); err != nil || back != want || len(toldNow()) != 0 {
			t.Errorf("after a create over an expired row with %s: Read = %+v, %v; want %+v", set, back, err, want)
		}
		if err := s.Release(nrec); err != nil {
			t.Fatal(err)
		}
	}
}

// A SQLite database another client holds locked (BEGIN EXCLUSIVE) fails
// a write after the store's timeout with an error that says so, not a
// bare "context deadline exceeded" (a probe).
func TestLockedDatabaseSaysSo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := filepath.Join(t.TempDir(), "leases.db")
	s, err := Open(ctx, SQLite, dsn, Options{Name: "jobs", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := rawDB(t, SQLite, dsn)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "ROLLBACK")
	_, err = s.Create(7, 9*time.Second)
	if err == nil || !strings.Contains(err.Error(), "locked by another client's transaction") {
		t.Errorf("Create while another client holds the database locked: %v; want an error that names the lock", err)
	}
}

// Every record a store reads or writes names the incarnation of the row
// (storetest.Incarnation); an expiry keeps it, and a row made again (the
// table emptied, as a database made anew or a lost table leaves it) has
// another. A row an earlier leaselab wrote, with none, gets one at its
// next write.
func TestIncarnation(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s, err := Open(ctx, d, dsn, Options{Name: "jobs", Table: table, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		life := storetest.Incarnation(t, s, time.Minute, func(t *testing.T) {
			exec(t, s.db(), `DELETE FROM `+table)
		})
		same := storetest.SameIncarnation(t, &life)
		// An expiry keeps it.
		exec(t, s.db(), `UPDATE `+table+` SET expires_ms = 0`)
		after, err := s.Create(6, time.Minute)
		same("create after an expiry", after, err)

		// A row of none (an earlier leaselab's, an operator's 0 or -3)
		// reads with none, and the next write gives it one.
		for _, v := range []string{"0", "-3"} {
			exec(t, s.db(), `UPDATE `+table+` SET incarnation = `+v)
			life = 0
			r, err := s.Read()
			after = same("read of a row of incarnation "+v, r, err)
			if after, err = s.Renew(after, time.Minute); err != nil || after.Incarnation == 0 {
				t.Fatalf("renewal of a row of incarnation %s: %+v, %v: want one", v, after, err)
			}
			life = after.Incarnation
			r, err = s.Read()
			same("read after the renewal", r, err)
		}
	})
}

// A name the table cannot key is refused at Open, on both dialects, not
// a create that fails for good (a deployment probe: a 6 KB name on
// PostgreSQL, "index row size exceeds btree maximum", nobody leading).
func TestNameRefused(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, d Dialect, dsn, table string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range []string{"", strings.Repeat("x", MaxNameBytes+1), "bad\xffutf8", "nul\x00inside"} {
			if s, err := Open(ctx, d, dsn, Options{Name: name, Table: table}); err == nil {
				s.Close()
				t.Errorf("Open with a name of %d bytes (%.20q): no error", len(name), name)
			}
		}
		s, err := Open(ctx, d, dsn, Options{Name: strings.Repeat("y", MaxNameBytes), Table: table})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Create(1, time.Minute); err != nil {
			t.Errorf("create with a name of %d bytes: %v", MaxNameBytes, err)
		}
	})
}
