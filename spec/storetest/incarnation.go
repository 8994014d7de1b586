package storetest

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Incarnation checks a store that keeps an incarnation of its server's
// data (lease.Record.Incarnation): every record it reads or writes names
// the first create's, through a renewal, a release, a create after it and
// a takeover; after lose (the server's data lost: a data directory wiped,
// FLUSHALL, a table emptied), a create, repeated until its version passes
// the last one before the loss (versions count again from 1), names
// another, not 0, and a read names that one, which it returns. Every
// write states a lease of ttl, which must outlast the test.
func Incarnation(t *testing.T, s lease.Store, ttl time.Duration, lose func(t *testing.T)) uint64 {
	t.Helper()
	rec, err := s.Create(1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	life := rec.Incarnation
	if life == 0 {
		t.Fatalf("create returned %+v: no incarnation", rec)
	}
	same := SameIncarnation(t, &life)
	r, err := s.Read()
	same("read", r, err)
	r, err = s.Renew(rec, ttl)
	rec = same("renew", r, err)
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	r, err = s.Create(2, ttl)
	rec = same("create after a release", r, err)
	r, err = s.Takeover(rec, 3, ttl)
	seen := same("takeover", r, err)

	lose(t)
	var after lease.Record
	for {
		if after, err = s.Create(4, ttl); err != nil {
			t.Fatalf("create after the loss: %v", err)
		}
		if after.Version > seen.Version {
			break
		}
		if err := s.Release(after); err != nil {
			t.Fatal(err)
		}
	}
	if after.Incarnation == 0 || after.Incarnation == life {
		t.Errorf("create after the loss: %+v, incarnation %d before it: want another, not 0", after, life)
	}
	life = after.Incarnation
	r, err = s.Read()
	same("read after the loss", r, err)
	return life
}

// SameIncarnation returns a check of a store call's answer: no error, and
// the incarnation *life as it is then (the caller may change it after a
// loss); it returns the record.
func SameIncarnation(t *testing.T, life *uint64) func(what string, r lease.Record, err error) lease.Record {
	return func(what string, r lease.Record, err error) lease.Record {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Incarnation != *life {
			t.Errorf("%s: incarnation %d, want %d", what, r.Incarnation, *life)
		}
		return r
	}
}
