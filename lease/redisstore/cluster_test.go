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
