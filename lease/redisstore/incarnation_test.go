package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
)

// Every record a store reads or writes names the incarnation of the
// server's data (storetest.Incarnation); an expiry keeps it, and the
// first write after a loss of the data (FLUSHALL, as a restart without
// persistence leaves it) makes another.
func TestIncarnation(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "life", time.Second, nil)
	life := storetest.Incarnation(t, s, time.Minute, func(t *testing.T) {
		if err := s.c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	})
	// An expiry keeps it.
	rec, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(rec, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if rec, err = s.Create(5, time.Minute); err != nil || rec.Incarnation != life {
		t.Errorf("create after an expiry: %+v, %v; want incarnation %d", rec, err, life)
	}
	// A life key of another type (an operator's) names no life: 0, and
	// the writes go on.
	if err := s.c.Del(context.Background(), s.life).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HSet(context.Background(), s.life, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if rec, err = s.Renew(rec, time.Minute); err != nil || rec.Incarnation != 0 {
		t.Errorf("renewal over a life key of another type: %+v, %v; want incarnation 0", rec, err)
	}
	if rec, err = s.Read(); err != nil || rec.Incarnation != 0 {
		t.Errorf("read of a life key of another type: %+v, %v; want incarnation 0", rec, err)
	}
}

// The versions counting again from 1 (the counter and the marks gone, the
// life key left: an eviction under an allkeys-* policy that took some of
// the lease's keys and not others, an operator's DEL of all but one)
// begin another incarnation: a version made then, once the counter has
// climbed past one read before, is of another life than that one, as
// after a FLUSHALL. (With the life key kept, the record above the
// version seen looked like one written after it: the hole the
// incarnation closes, open again.)
func TestIncarnationNewWhenVersionsStartAgain(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "life-partial", time.Second, nil)
	const ttl = 2 * time.Second
	seen, err := s.Create(1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if seen, err = s.Renew(seen, ttl); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{s.key, s.counter, s.released, s.leaseKey} {
		if err := s.c.Del(context.Background(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var after lease.Record
	for {
		if after, err = s.Create(2, ttl); err != nil {
			t.Fatal(err)
		}
		if after.Version > seen.Version {
			break
		}
		if err := s.Release(after); err != nil {
			t.Fatal(err)
		}
	}
	if after.Incarnation == 0 || after.Incarnation == seen.Incarnation {
		t.Errorf("create of version %d after the versions started again from 1: incarnation %d, %d before (version %d): want another, not 0", after.Version, after.Incarnation, seen.Incarnation, seen.Version)
	}
	if got, err := s.Read(); err != nil || got.Incarnation != after.Incarnation {
		t.Errorf("read after: %+v, %v; want incarnation %d", got, err, after.Incarnation)
	}
}
