package etcdstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
)

// Every record a store reads or writes names the incarnation of the
// server's data; a release, an expiry and a restart with the data keep
// it, and an etcd restarted without its data has another, which the
// first write after the loss makes, whatever the revisions (which count
// again from 1, and here climb past the one read before the loss).
func TestIncarnation(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	s := open(t, srv, "life", 2*time.Second, nil)
	const ttl = 3 * time.Second
	rec, err := s.Create(1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	life := rec.Incarnation
	if life == 0 {
		t.Fatalf("create returned %+v: no incarnation", rec)
	}
	same := func(what string) func(lease.Record, error) lease.Record {
		return func(r lease.Record, err error) lease.Record {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if r.Incarnation != life {
				t.Errorf("%s: incarnation %d, want %d (the create's)", what, r.Incarnation, life)
			}
			return r
		}
	}
	same("read")(s.Read())
	rec = same("renew")(s.Renew(rec, ttl))
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	rec = same("create after a release")(s.Create(2, ttl))
	seen := same("takeover")(s.Takeover(rec, 3, ttl))

	// The server restarted without its data.
	srv.Kill()
	if err := os.RemoveAll(filepath.Join(srv.Dir, "data")); err != nil {
		t.Fatal(err)
	}
	srv.MustRestart(t)
	var err2 error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err2 = s.Read(); errors.Is(err2, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read found the store empty within 20 s of the restart without data: %v", err2)
		}
	}
	var after lease.Record
	for {
		if after, err = s.Create(4, ttl); err != nil {
			t.Fatal(err)
		}
		if after.Version > seen.Version {
			break
		}
		if err := s.Release(after); err != nil {
			t.Fatal(err)
		}
	}
	if after.Incarnation == 0 || after.Incarnation == life {
		t.Errorf("create after the loss: %+v, incarnation %d before the loss: want another, not 0", after, life)
	}
	life = after.Incarnation
	same("read after the loss")(s.Read())
}

// A record an earlier leaselab wrote, with no incarnation beside it,
// reads with none (0: not known), and the next write makes one.
func TestIncarnationOfAnOldRecord(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	s := open(t, srv, "old-life", 2*time.Second, nil)
	ctx := context.Background()
	if _, err := s.c.Put(ctx, s.key, "7 0 3000"); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Read()
	if err != nil || rec.Incarnation != 0 || rec.Holder != 7 {
		t.Fatalf("read of an old record: %+v, %v: want holder 7, no incarnation", rec, err)
	}
	rec, err = s.Renew(rec, 3*time.Second)
	if err != nil || rec.Incarnation == 0 {
		t.Fatalf("renewal of an old record: %+v, %v: want an incarnation", rec, err)
	}
	if got, err := s.Read(); err != nil || got.Incarnation != rec.Incarnation {
		t.Errorf("read after the renewal: %+v, %v: want incarnation %d", got, err, rec.Incarnation)
	}
}
