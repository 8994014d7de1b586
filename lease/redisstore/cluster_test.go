package redisstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
)

// A Redis Cluster node is refused at New (a probe, 2026-12-07: a node
// without the lease's slot answers CLUSTERDOWN or MOVED to every call, for
// good, and a slot migrated under a leader ends all leadership); one
// Redis is not.
func TestNewRefusesClusterNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := servertest.Redis(t, "", "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Addr: srv.Addr, Name: "x", Timeout: time.Second})
	if err == nil {
		s.Close()
		t.Fatal("New over a cluster node succeeded")
	}
	if !errors.Is(err, ErrCluster) {
		t.Fatalf("New over a cluster node: %v, want ErrCluster", err)
	}
	t.Logf("refused: %v", err)
	plain := servertest.Redis(t, "")
	s, err = New(ctx, Options{Addr: plain.Addr, Name: "x", Timeout: time.Second})
	if err != nil {
		t.Fatalf("New over one Redis: %v", err)
	}
	s.Close()
}

// The marks a create reads (the released version, the lease key) are read
// with pcall: a key of another type at either (an operator's) makes the
// record that went a dropped one of no known lease, not an error of every
// create for ever (a review: a plain GET answered WRONGTYPE).
func TestCreateOverMarksOfAnotherType(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "marks", time.Second, nil)
	r1, err := s.Create(1, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{s.released, s.leaseKey} {
		if err := s.c.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
		if err := s.c.HSet(ctx, k, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // (r1 expires)
	r2, err := s.Create(2, time.Second)
	if err != nil || r2.Vanished != r1.Version || r2.VanishedTTL != 0 {
		t.Fatalf("Create over marks of another type = %+v, %v; want a record naming version %d gone, its lease not known", r2, err, r1.Version)
	}
}
