package redisstore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
	"github.com/redis/go-redis/v9"
)

// A client whose user may not SUBSCRIBE (an ACL) says so once through
// OnError and gets no notices, and its writes, which publish, still work;
// a client that may subscribe is told of them.
func TestSubscribeRefused(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.Do(ctx, "ACL", "SETUSER", "nosub", "on", ">pw", "~*", "&*", "+@all", "-subscribe", "-psubscribe").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	var mu sync.Mutex
	var errs []string
	refused, err := New(ctx, Options{Addr: srv.Addr, Username: "nosub", Password: "pw", Name: "acl", Timeout: time.Second,
		OnError: func(op string, err error) { mu.Lock(); errs = append(errs, op+": "+err.Error()); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer refused.Close()
	allowed, err := New(ctx, Options{Addr: srv.Addr, Name: "acl", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	n0, _ := refused.Changes()
	refused.Changes() // asked again: no second warning
	a0, next := allowed.Changes()
	rec, err := refused.Create(1, 9*time.Second) // it publishes, as every writer does
	if err != nil {
		t.Fatalf("a writer that may not subscribe cannot write: %v", err)
	}
	select {
	case <-next:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscribed client had no notice of the refused client's write")
	}
	if n, _ := allowed.Changes(); n <= a0 {
		t.Fatal("no notice counted")
	}
	if err := refused.Release(rec); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n, _ := refused.Changes(); n != n0 {
		t.Errorf("the refused client counted %d notices", n-n0)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 1 || !strings.Contains(errs[0], "subscribe") || !strings.Contains(errs[0], "poll") {
		t.Errorf("OnError: %q, want one report of the refused subscription, saying the watchers poll", errs)
	}
}

// A subscription started while Redis is down is reported once and made
// in the background when Redis is back: a notice, then every change.
func TestLateFeed(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	var log storetest.ErrorLog
	storetest.LateFeed{
		Feed:   open(t, srv, "late", time.Second, log.Add),
		Writer: open(t, srv, "late", time.Second, nil),
		Down:   srv.Kill,
		Up:     func() { srv.MustRestart(t) },
		Errors: log.Errors,
	}.Run(t)
}

// A subscription whose connection is lost is made again by go-redis on
// its own: that counts as a notice (messages sent meanwhile were lost),
// with no write to announce.
func TestResubscribeNotices(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	s := open(t, srv, "resub", time.Second, nil)
	n0, _ := s.Changes()
	srv.Kill()
	srv.MustRestart(t)
	storetest.WaitNotice(t, s, "the resubscription after the server's restart", n0, 3*storetest.NoticeTimeout)
}
