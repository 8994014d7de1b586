package redisstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
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

// A version counter no leaselab wrote is started again from 0, by a
// create and by a renewal alike, and the records made after it read back
// as written: a counter an operator set to -5 made records of versions
// -4, -3, ..., which no reader could parse, one unchanging record of no
// known holder to its watchers while its leader renewed it, taken over
// beside it (a probe, 2026-12-07: two singleton commands at once, 5 of 5
// runs); one past 2^53 stopped counting in Lua's doubles.
func TestForeignVersionCounter(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	ctx := context.Background()
	for _, bad := range []string{"-5", "9223372036854775800", "1000000000000000000", "1.5", "05", "x", "hash"} {
		s := open(t, srv, "counter-"+bad, time.Second, nil)
		set := func() {
			t.Helper()
			s.c.Del(ctx, s.counter)
			var err error
			if bad == "hash" {
				err = s.c.HSet(ctx, s.counter, "f", "v").Err()
			} else {
				err = s.c.Set(ctx, s.counter, bad, 0).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		set()
		r1, err := s.Create(1, 9*time.Second)
		if err != nil || r1.Version != 1 || r1.Epoch != 1 {
			t.Fatalf("counter %q: Create = %+v, %v; want version and epoch 1", bad, r1, err)
		}
		mustRead(t, s, r1, "counter "+bad+": after the create")
		set() // under a live leader
		r2, err := s.Renew(r1, 9*time.Second)
		if err != nil || r2.Version != 2 || r2.Epoch != 1 {
			t.Fatalf("counter %q: Renew = %+v, %v; want version 2 (the counter started again from the record's version), epoch 1", bad, r2, err)
		}
		mustRead(t, s, r2, "counter "+bad+": after the renewal")
		r3, err := s.Renew(r2, 9*time.Second)
		if err != nil || r3.Version != 3 {
			t.Fatalf("counter %q: the next Renew = %+v, %v; want version 3", bad, r3, err)
		}
	}
}

// mustRead fails the test unless s reads want.
func mustRead(t *testing.T, s *Store, want lease.Record, what string) {
	t.Helper()
	if got, err := s.Read(); err != nil || got != want {
		t.Fatalf("%s: Read = %+v, %v; want %+v", what, got, err, want)
	}
}
