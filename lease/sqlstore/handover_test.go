package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
)

// A released lease is handed over on the store's notice, not at the
// watcher's next poll: lease.Run over two clients of one row, the leader's
// context ended, the watcher leading well within its 300 ms watch interval.
func TestReleaseHandedOverByNotice(t *testing.T) {
	for _, c := range []struct {
		name string
		d    Dialect
		dsn  func(t *testing.T) string
	}{
		{"sqlite", SQLite, func(t *testing.T) string { return filepath.Join(t.TempDir(), "lease.db") }},
		{"postgres", Postgres, func(t *testing.T) string { return servertest.Postgres(t).DSN() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, name := c.dsn(t), leaseName(t)
			var errs []string
			onError := func(op string, err error) { errs = append(errs, op+": "+err.Error()) }
			a, b := open(t, c.d, dsn, name, 200*time.Millisecond, onError), open(t, c.d, dsn, name, 200*time.Millisecond, onError)
			cfg := lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}
			led := make(chan time.Time, 2)
			run := func(ctx context.Context, s *Store, id int) {
				c := cfg
				c.Callbacks.OnStartedLeading = func(context.Context) { led <- time.Now() }
				lease.Run(ctx, s, c, lease.RunOptions{ID: id})
			}
			ctxA, stopA := context.WithCancel(context.Background())
			doneA := make(chan struct{})
			go func() { run(ctxA, a, 1); close(doneA) }()
			<-led
			ctxB, stopB := context.WithCancel(context.Background())
			defer stopB()
			go run(ctxB, b, 2)
			time.Sleep(700 * time.Millisecond) // b watches; a renews
			stopA()
			<-doneA // a has stepped down and released
			released := time.Now()
			select {
			case at := <-led:
				gap := at.Sub(released)
				t.Logf("hand-over %v after the release returned", gap)
				if gap > 100*time.Millisecond {
					t.Errorf("hand-over took %v: the watcher waited for its poll, not the notice (errors: %v)", gap, errs)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("no hand-over within 3 s (errors: %v)", errs)
			}
		})
	}
}
