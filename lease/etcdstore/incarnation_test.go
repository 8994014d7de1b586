package etcdstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
)

// Every record a store reads or writes names the incarnation of the
// server's data (storetest.Incarnation), and an etcd restarted without
// its data has another, which the first write after the loss makes,
// whatever the revisions (which count again from 1).
func TestIncarnation(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	s := open(t, srv, "life", 2*time.Second, nil)
	storetest.Incarnation(t, s, time.Minute, func(t *testing.T) {
		// The server restarted without its data.
		srv.Kill()
		if err := os.RemoveAll(filepath.Join(srv.Dir, "data")); err != nil {
			t.Fatal(err)
		}
		srv.MustRestart(t)
		var err error
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err = s.Read(); errors.Is(err, fs.ErrNotExist) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no read found the store empty within 20 s of the restart without data: %v", err)
			}
		}
	})
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
