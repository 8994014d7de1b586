package sqlstore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
)

// A PostgreSQL role limited to one connection: the change listener took
// it, and every call of the lease then failed with SQLSTATE 53300 for as
// long as the process ran (a probe, 2026-12-06). The first refused call
// now stops the listener for good, says so through OnError, and the calls
// after it work; the watchers poll.
func TestRoleOfOneConnection(t *testing.T) {
	t.Parallel()
	srv := servertest.Postgres(t)
	db := rawDB(t, Postgres, srv.DSN())
	exec(t, db, `CREATE ROLE onecon LOGIN PASSWORD 'onecon' CONNECTION LIMIT 1`)
	openTable(t, Postgres, srv.DSN(), "leaselab_leases", "jobs") // the table, made by its owner
	exec(t, db, `GRANT SELECT, INSERT, UPDATE ON leaselab_leases TO onecon`)
	userDSN := strings.Replace(srv.DSN(), servertest.PostgresUser+":"+servertest.PostgresPassword+"@", "onecon:onecon@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var reported []string
	s, err := Open(ctx, Postgres, userDSN, Options{Name: "jobs", Timeout: 2 * time.Second, OnError: func(op string, err error) {
		mu.Lock()
		reported = append(reported, op+": "+err.Error())
		mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	s.Changes() // the listener starts, and takes the role's one connection
	rec, err := s.Create(7, 9*time.Second)
	for try := 0; err != nil && try < 20; try++ {
		if !tooManyConnections(err) {
			t.Fatalf("Create: %v; want SQLSTATE 53300 or none", err)
		}
		time.Sleep(50 * time.Millisecond)
		rec, err = s.Create(7, 9*time.Second)
	}
	if err != nil {
		t.Fatalf("Create still fails after the listener was stopped: %v", err)
	}
	for i := range 10 {
		if _, err := s.Read(); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if rec, err = s.Renew(rec, 9*time.Second); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	said := false
	for _, r := range reported {
		said = said || strings.Contains(r, "the change listener held a connection: stopped for good")
	}
	if !said {
		t.Errorf("OnError was not told that the listener stopped: %q", reported)
	}
	t.Logf("OnError: %q", reported)
}
