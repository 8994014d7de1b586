package storetest

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// NoticeTimeout is how long testNotices waits for a notice: far more than
// one takes on loopback (a millisecond or two), for a loaded machine.
const NoticeTimeout = 5 * time.Second

// WaitNotice waits until feed's count of notices passes n and returns it,
// or fails t, naming what it waited for, once timeout has passed.
func WaitNotice(t testing.TB, feed lease.ChangeFeed, what string, n uint64, timeout time.Duration) uint64 {
	t.Helper()
	deadline := time.After(timeout)
	for {
		m, next := feed.Changes()
		if m > n {
			return m
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("%s: no notice within %v", what, timeout)
		}
	}
}

// testNotices checks a store that is a lease.ChangeFeed: a client that
// has asked for its changes is told of every change another client makes
// (create, renew, takeover, release), and of none while nothing changes.
// A feed that is a lease.ReleaseHint says the release's notice is one,
// and no other's (unless Options.NoReleaseHint: then none).
func testNotices(t *testing.T, open Open, o Options) {
	watcher := open(2)
	feed, ok := watcher.(lease.ChangeFeed)
	if !ok {
		t.Skip("the store sends no change notices: its watchers poll")
	}
	writer := open(1)
	n0, _ := feed.Changes() // subscribes
	hint, _ := watcher.(lease.ReleaseHint)
	// hinted checks what the feed's hint says of the notices after n.
	hinted := func(step string, n uint64, want bool) {
		t.Helper()
		if hint == nil {
			return
		}
		if o.NoReleaseHint {
			want = false
		}
		if got := hint.Released(n); got != want {
			t.Errorf("%s: Released says %v, want %v", step, got, want)
		}
	}
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
	hinted("create", n0, false)
	start = time.Now()
	if rec, err = writer.Renew(rec, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	m := wait("renew", n, start)
	hinted("renew", n, false)
	n = m
	start = time.Now()
	if rec, err = writer.Takeover(rec, 1, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	m = wait("takeover", n, start)
	hinted("takeover", n, false)
	n = m
	start = time.Now()
	if err := writer.Release(rec); err != nil {
		t.Fatal(err)
	}
	m = wait("release", n, start)
	hinted("release", n, true)
	hinted("release, asked with a token taken after it", m, false)
	if rec, err = writer.Create(1, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	c := wait("create after the release", m, time.Now())
	hinted("create after the release", n, false)
	if err := writer.Release(rec); err != nil {
		t.Fatal(err)
	}
	wait("second release", c, time.Now())
	hinted("second release", c, true)
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

// LateFeed checks a change feed whose first Changes comes while its
// server is away: the failure is reported once through the store's
// OnError, and the feed keeps trying in the background, so that once the
// server is back a notice comes (what changed meanwhile was not watched)
// and every change after it is noticed as usual. A feed that gave up at
// its first failure would leave its watchers polling for the life of the
// process.
type LateFeed struct {
	// Feed is the store whose feed is started late; Writer another client
	// of the same lease, whose writes it must notice.
	Feed, Writer lease.Store
	// Down takes the server away; Up brings it back (and returns once it
	// serves).
	Down, Up func()
	// Errors returns the errors Feed reported (its OnError hook).
	Errors func() []error
}

// Run runs the check.
func (c LateFeed) Run(t *testing.T) {
	t.Helper()
	feed, ok := c.Feed.(lease.ChangeFeed)
	if !ok {
		t.Fatal("the store is no ChangeFeed")
	}
	c.Down()
	n0, _ := feed.Changes() // fails: the server is away
	feed.Changes()          // asked again: no second report
	if errs := c.Errors(); len(errs) != 1 {
		t.Fatalf("the feed started with its server away reported %d errors, want 1: %v", len(errs), errs)
	}
	c.Up()
	// (Three times the usual wait: the retries back off.)
	wait := func(step string, n uint64) uint64 {
		t.Helper()
		return WaitNotice(t, feed, step+", after the server's return", n, 3*NoticeTimeout)
	}
	n := wait("back", n0)
	// The writer may have lost its connection meanwhile: its first
	// calls after the return can fail.
	var rec lease.Record
	var err error
	for end := time.Now().Add(NoticeTimeout); ; time.Sleep(50 * time.Millisecond) {
		if rec, err = c.Writer.Create(1, 9*time.Second); err == nil || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatalf("create after the server's return: %v", err)
	}
	n = wait("create", n)
	if err := c.Writer.Release(rec); err != nil {
		t.Fatal(err)
	}
	wait("release", n)
	if errs := c.Errors(); len(errs) != 1 {
		t.Errorf("the feed reported %d errors by the end, want the one: %v", len(errs), errs)
	}
}
