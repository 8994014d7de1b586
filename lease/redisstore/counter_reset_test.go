package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
)

// A leader of epoch > 1 whose counter an operator set to -5 renews: the
// counter starts again from 0, the record's version (1) is below its
// epoch, and every reader reads a foreign value.
func TestCounterResetUnderLeaderOfLaterEpoch(t *testing.T) {
	ctx := context.Background()
	s := counterStore(t, "r94", "10")
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
	ctx := context.Background()
	s := counterStore(t, "r94b", "")
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

// A counter an operator set near the top of what the scripts count: the
// versions stop at 999999999999999 with ErrNoVersionLeft, and never start
// again below the leader's epoch (a deployment probe: the renewal after
// 10^15 wrote version 1 under epoch 999999999999998, no record to any
// reader, and the next leader's epoch was 1).
func TestCounterStopsAtMaxVersion15(t *testing.T) {
	ctx := context.Background()
	s := counterStore(t, "r97", "999999999999997")
	r, err := s.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		next, err := s.Renew(r, 9*time.Second)
		t.Logf("renewal %d: %+v %v", i, next, err)
		if err != nil {
			if !errors.Is(err, ErrNoVersionLeft) {
				t.Fatalf("renewal past the highest version: %v, want ErrNoVersionLeft", err)
			}
			break
		}
		if next.Version < next.Epoch || next.Version > 999999999999999 {
			t.Fatalf("renewal wrote %+v: version below its epoch or past 15 digits", next)
		}
		r = next
	}
	got, err := s.Read()
	if err != nil || got != r {
		t.Fatalf("Read = %+v, %v; want the last renewal %+v", got, err, r)
	}
	if r.Version != 999999999999999 {
		t.Errorf("last version %d, want 999999999999999", r.Version)
	}
	s.c.Del(ctx, s.key) // expired: a create over it is refused too
	if _, err := s.Create(2, 9*time.Second); !errors.Is(err, ErrNoVersionLeft) {
		t.Errorf("create at the highest version: %v, want ErrNoVersionLeft", err)
	}
	if _, err := s.Takeover(r, 2, 9*time.Second); err == nil {
		t.Errorf("takeover over a dropped record succeeded")
	}
}

// The counter deleted under a leader of a later epoch (an operator's DEL):
// its next renewal follows its own version, not 1, so that every reader
// still reads it and epochs never go back (a deployment probe: version 1
// under epoch 31, unreadable, and the next leader's epoch 18).
func TestCounterDeletedUnderLeader(t *testing.T) {
	ctx := context.Background()
	s := counterStore(t, "r97b", "30")
	s.c.Set(ctx, s.released, "30", 0)
	r1, err := s.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Renew(r1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.c.Del(ctx, s.counter)
	r3, err := s.Renew(r2, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Version <= r2.Version {
		t.Errorf("renewal after the counter's DEL: version %d after %d (epoch %d)", r3.Version, r2.Version, r3.Epoch)
	}
	if got, err := s.Read(); err != nil || got != r3 {
		t.Errorf("Read = %+v, %v; want the renewal %+v", got, err, r3)
	}
}

// The counter deleted after a release, with no leader (an operator's
// DEL): the next create follows the marks, not 1, so that no epoch is
// taken twice (a deployment probe: epoch 1, released at version 10, then
// epoch 1 again). With no mark either, the store lost its data: version 1,
// as before.
func TestCounterDeletedAfterRelease(t *testing.T) {
	ctx := context.Background()
	s := counterStore(t, "r97c", "")
	r1, err := s.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Renew(r1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(r2); err != nil {
		t.Fatal(err)
	}
	s.c.Del(ctx, s.counter)
	r3, err := s.Create(2, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Epoch <= r1.Epoch || r3.Version <= r2.Version || r3.Vanished != 0 {
		t.Errorf("create after the counter's DEL: %+v after epoch %d, version %d released", r3, r1.Epoch, r2.Version)
	}
	s.c.FlushAll(ctx) // a loss: no counter, no marks
	r4, err := s.Create(3, 9*time.Second)
	if err != nil || r4.Version != 1 {
		t.Errorf("create after a loss: %+v, %v; want version 1", r4, err)
	}
}

// A counter an operator set to a lower whole number (not deleted, not
// malformed) is started again above the versions the keys name, as a
// deleted one is: under a leader of epoch 31 its renewal made version 4,
// which every reader read as a foreign value (epoch above version), and a
// takeover of that made epoch 5; with no record, a create made epoch 4
// after the takeover's version 5 (a review).
func TestCounterSetLower(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := counterStore(t, "lower", "30")
	r1, err := s.Create(1, 9*time.Second)
	if err != nil || r1.Epoch != 31 {
		t.Fatalf("create: %+v, %v; want epoch 31", r1, err)
	}
	s.c.Set(ctx, s.counter, "3", 0)
	r2, err := s.Renew(r1, 9*time.Second)
	if err != nil || r2.Version <= r1.Version {
		t.Fatalf("renewal under a counter set to 3: %+v, %v; want a version above %d", r2, err, r1.Version)
	}
	if got, err := s.Read(); err != nil || got != r2 {
		t.Fatalf("read: %+v, %v; want the renewal %+v", got, err, r2)
	}
	s.c.Set(ctx, s.counter, "3", 0)
	r3, err := s.Takeover(r2, 2, 9*time.Second)
	if err != nil || r3.Epoch <= r2.Version {
		t.Fatalf("takeover under a counter set to 3: %+v, %v; want an epoch above %d", r3, err, r2.Version)
	}
	if err := s.Release(r3); err != nil {
		t.Fatal(err)
	}
	s.c.Set(ctx, s.counter, "3", 0)
	r4, err := s.Create(3, 9*time.Second)
	if err != nil || r4.Epoch <= r3.Version {
		t.Fatalf("create under a counter set to 3: %+v, %v; want an epoch above %d", r4, err, r3.Version)
	}
}

// counterStore opens a store of the lease name on a server of its own,
// its version counter set to counter as an operator would ("": left
// absent).
func counterStore(t *testing.T, name, counter string) *Store {
	t.Helper()
	s := open(t, servertest.Redis(t, ""), name, time.Second, nil)
	if counter != "" {
		if err := s.c.Set(context.Background(), s.counter, counter, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
