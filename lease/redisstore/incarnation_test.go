package redisstore

import (
	"context"
	"testing"
	"time"

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
