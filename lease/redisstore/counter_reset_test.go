package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
)

// A leader of epoch > 1 whose counter an operator set to -5 renews: the
// counter starts again from 0, the record's version (1) is below its
// epoch, and every reader reads a foreign value.
func TestCounterResetUnderLeaderOfLaterEpoch(t *testing.T) {
	srv := servertest.Redis(t, "")
	ctx := context.Background()
	s := open(t, srv, "r94", time.Second, nil)
	s.c.Set(ctx, s.counter, "10", 0)
	r1, err := s.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created %+v", r1)
	s.c.Set(ctx, s.counter, "-5", 0)
	r2, err := s.Renew(r1, 9*time.Second)
	t.Logf("renewed %+v %v", r2, err)
	got, err := s.Read()
	t.Logf("read %+v %v", got, err)
	if got != r2 {
		t.Errorf("Read = %+v, want the renewal's %+v", got, r2)
	}
}

// A stale released mark after the counter starts again: a record dropped
// without a release reads as released.
func TestCounterResetStaleReleasedMark(t *testing.T) {
	srv := servertest.Redis(t, "")
	ctx := context.Background()
	s := open(t, srv, "r94b", time.Second, nil)
	r1, _ := s.Create(1, 9*time.Second)
	if err := s.Release(r1); err != nil { // released mark "1"
		t.Fatal(err)
	}
	s.c.Set(ctx, s.counter, "x", 0) // an operator's counter
	r2, err := s.Create(2, 9*time.Second)
	t.Logf("created %+v %v", r2, err)
	s.c.Del(ctx, s.key) // the server drops it (an eviction, a clock step)
	_, err = s.Read()
	t.Logf("read after the drop: %v", err)
	r3, err := s.Create(3, 9*time.Second)
	t.Logf("create over it: %+v %v", r3, err)
	if r3.Vanished == 0 {
		t.Errorf("a record dropped without a release (version %d, holder 2 may lead) is not named: %+v", r2.Version, r3)
	}
}
