package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
)

// Every record a store reads or writes names the incarnation of the
// server's data; a release and an expiry keep it, and the first write
// after a loss of the data (FLUSHALL, as a restart without persistence
// leaves it) makes another, whatever the versions (which count again from
// 1, and here climb past the one read before the loss).
func TestIncarnation(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "life", time.Second, nil)
	const ttl = 2 * time.Second
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
	seen := same("takeover")(s.Takeover(rec, 3, 50*time.Millisecond))
	time.Sleep(300 * time.Millisecond) // (expired)
	rec = same("create after an expiry")(s.Create(4, ttl))
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}

	if err := s.c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	var after lease.Record
	for {
		if after, err = s.Create(5, ttl); err != nil {
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

	// A life key of another type (an operator's) names no life: 0, and
	// the writes go on.
	if err := s.c.Del(context.Background(), s.life).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.c.HSet(context.Background(), s.life, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	life = 0
	rec = same("renew over a life key of another type")(s.Renew(after, ttl))
	same("read of a life key of another type")(s.Read())
}
