package redisstore

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
	"github.com/redis/go-redis/v9"
)

var leaseSeq atomic.Int64

// go-redis logs failed dials through its own global logger; the tests
// that kill servers make many.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// newLease returns a fresh lease name on srv for each subtest, and clients
// of it, each with its own connections.
func newLease(srv *servertest.Server, timeout time.Duration) storetest.NewLease {
	return func(t *testing.T) storetest.Open {
		name := strings.ReplaceAll(t.Name(), "/", "-") + "-" + string(rune('a'+leaseSeq.Add(1)%26))
		return func(int64) lease.Store { return open(t, srv, name, timeout, nil) }
	}
}

func open(t *testing.T, srv *servertest.Server, name string, timeout time.Duration, onError func(string, error)) *Store {
	t.Helper()
	// Connecting (a SCRAM handshake, creating the table) is bounded by
	// this setup deadline, not by one operation's timeout: on a loaded
	// machine a handshake alone can take longer than that.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Addr: srv.Addr, Password: srv.Password, Name: name, Timeout: timeout, OnError: onError})
	if err != nil {
		t.Fatalf("New: %v\nserver log:\n%s", err, srv.Log())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The contract suite against a real redis-server.
func TestRedisContract(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	storetest.Run(t, newLease(srv, storetest.ContractTimeout), storetest.Options{Expiry: time.Second, ExpirySlack: 500 * time.Millisecond})
}

// The same with a password.
func TestRedisContractWithPassword(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "pa ss:word")
	storetest.Run(t, newLease(srv, storetest.ContractTimeout), storetest.Options{Expiry: time.Second, ExpirySlack: 500 * time.Millisecond})
}

// The record's keys, value and TTL on the server, as the package comment
// describes them.
func TestKeysAndTTL(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "jobs", time.Second, nil)
	before := time.Now()
	rec, err := s.Create(7, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := s.c.Get(ctx, "leaselab:{jobs}").Result(); err != nil || v != "7 1 1" {
		t.Errorf("record value %q, %v; want \"7 1 1\"", v, err)
	}
	if ttl, err := s.c.PTTL(ctx, "leaselab:{jobs}").Result(); err != nil || ttl < 9*time.Second-time.Since(before)-2*time.Millisecond || ttl > 9*time.Second { // PTTL is in whole ms
		t.Errorf("record TTL %v, %v; want 9 s less the %v since the Create started", ttl, err, time.Since(before))
	}
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	if v, err := s.c.Get(ctx, "leaselab:{jobs}:version").Result(); err != nil || v != "1" {
		t.Errorf("counter %q, %v; want it to outlive the release", v, err)
	}
	if ttl, err := s.c.PTTL(ctx, "leaselab:{jobs}:version").Result(); err != nil || ttl != -1 {
		t.Errorf("counter TTL %v, %v; want none (-1)", ttl, err)
	}
	// ExpiryMargin lengthens the server's TTL.
	m, err := New(ctx, Options{Addr: srv.Addr, Name: "margin", ExpiryMargin: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before = time.Now()
	if _, err := m.Create(7, 9*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl, err := m.c.PTTL(ctx, "leaselab:{margin}").Result(); err != nil || ttl < 14*time.Second-time.Since(before)-2*time.Millisecond || ttl > 14*time.Second {
		t.Errorf("record TTL with a 5 s margin %v, %v; want 14 s less the %v since the Create started", ttl, err, time.Since(before))
	}
	// A value that is not a record is an error, not a record.
	s.c.Set(ctx, "leaselab:{jobs}", "garbage", 0)
	if rec, err := s.Read(); err == nil || !strings.Contains(err.Error(), "not a lease record") {
		t.Errorf("Read of garbage = %+v, %v", rec, err)
	}
}

func TestDecode(t *testing.T) {
	for v, ok := range map[string]bool{
		"1 2 3": true, "0 5 9": true, "1 2 2": true,
		"": false, "1 2": false, "1 2 3 4": false, "1 0 3": false, "1 3 2": false, "-1 2 3": false,
		"01 2 3": false, "1  2 3": false, "1 2 3\n": false, "+1 2 3": false, "a b c": false,
	} {
		if _, got := decode(v); got != ok {
			t.Errorf("decode(%q) ok = %v, want %v", v, got, ok)
		}
	}
}

// Nothing listens: New fails within its timeout, naming the address.
func TestUnreachable(t *testing.T) {
	addr := servertest.Unreachable(t)
	start := time.Now()
	s, err := New(context.Background(), Options{Addr: addr, Name: "x", Timeout: 200 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("New succeeded with nothing listening")
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error %q does not say what failed", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("New took %v to fail", d)
	}
	t.Logf("unreachable: %v", err)
}

// A wrong password (or none, where one is required) fails New.
func TestWrongPassword(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "right")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, pw := range []string{"wrong", ""} {
		s, err := New(ctx, Options{Addr: srv.Addr, Password: pw, Name: "x", Timeout: time.Second})
		if err == nil {
			s.Close()
			t.Fatalf("New with password %q succeeded", pw)
		}
		if !strings.Contains(err.Error(), "WRONGPASS") && !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("password %q: error %q does not say so", pw, err)
		}
		t.Logf("password %q: %v", pw, err)
	}
}

// The leader's redis-server is SIGKILLed while it holds the lease: it
// stops acting at its local deadline and steps down then, and the store
// reports the refused connections.
func TestLeaderLosesServer(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	var log storetest.ErrorLog
	const timeout = 100 * time.Millisecond
	storetest.ServerLoss{
		Store:     open(t, srv, "leader", timeout, log.Add),
		Kill:      srv.Kill,
		OpTimeout: timeout,
		Errors:    log.Errors,
	}.Run(t)
}

// The leader's redis-server hangs (SIGSTOP): every call times out, and
// the leader still steps down by its deadline.
func TestLeaderServerHangs(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	var log storetest.ErrorLog
	const timeout = 100 * time.Millisecond
	m := storetest.ServerLoss{
		Store:     open(t, srv, "leader", timeout, log.Add),
		Kill:      srv.Pause,
		OpTimeout: timeout,
		Errors:    log.Errors,
	}.Run(t)
	srv.Resume()
	if !strings.Contains(m.FirstError, "timeout") && !strings.Contains(m.FirstError, "deadline") {
		t.Errorf("first error %q is not a timeout", m.FirstError)
	}
}
