package storetest

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// NoticeTimeout is how long testNotices waits for a notice: far more than
// one takes on loopback (a millisecond or two), for a loaded machine.
const NoticeTimeout = 5 * time.Second

// testNotices checks a store that is a lease.ChangeFeed: a client that
// has asked for its changes is told of every change another client makes
// (create, renew, takeover, release), and of none while nothing changes.
func testNotices(t *testing.T, open Open, _ Options) {
	watcher := open(2)
	feed, ok := watcher.(lease.ChangeFeed)
	if !ok {
		t.Skip("the store sends no change notices: its watchers poll")
	}
	writer := open(1)
	n0, _ := feed.Changes() // subscribes
	// wait returns once a notice after n has come, and the time it took.
	wait := func(step string, n uint64, since time.Time) uint64 {
		t.Helper()
		deadline := time.After(NoticeTimeout)
		for {
			m, next := feed.Changes()
			if m > n {
				t.Logf("%s: notice after %v", step, time.Since(since).Round(time.Microsecond))
				return m
			}
			select {
			case <-next:
			case <-deadline:
				t.Fatalf("%s: no notice within %v", step, NoticeTimeout)
			}
		}
	}
	start := time.Now()
	rec, err := writer.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := wait("create", n0, start)
	start = time.Now()
	if rec, err = writer.Renew(rec, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	n = wait("renew", n, start)
	start = time.Now()
	if rec, err = writer.Takeover(rec, 1, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	n = wait("takeover", n, start)
	start = time.Now()
	if err := writer.Release(rec); err != nil {
		t.Fatal(err)
	}
	wait("release", n, start)
	// Reads change nothing: no notice. (A store may notify again shortly
	// after a write, as SQLite's does: that settles first.)
	time.Sleep(100 * time.Millisecond)
	n, _ = feed.Changes()
	for range 3 {
		if _, err := writer.Read(); err == nil {
			t.Fatal("a read after the release found a record")
		}
	}
	time.Sleep(200 * time.Millisecond)
	if m, _ := feed.Changes(); m != n {
		t.Errorf("%d notices while nothing changed (reads only)", m-n)
	}
}
