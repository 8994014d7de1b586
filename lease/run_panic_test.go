package lease_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A callback that panics on Run's goroutine while it leads (OnError, at a
// renewal that failed) ends Run with that panic; a service that recovers
// it (to log it, or to run the election again) must still find its
// leader's context done, at once, and a context derived from it too.
// Before, the panic unwound past every step-down and the deferred stop of
// the deadline's timer: Err said DeadlineExceeded once the deadline had
// passed, but Done never closed, and work waiting on it, or on a derived
// context (an HTTP request's), went on for good (a probe).
func TestRunCallbackPanicEndsLeaderContext(t *testing.T) {
	s := &spyStore{Store: lease.NewFileStore(filepath.Join(t.TempDir(), "job.lease"))}
	cfg := lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: 100 * time.Millisecond, WatchInterval: time.Second, RenewDeadline: 600 * time.Millisecond}
	cb, leading := started()
	cb.OnError = func(op string, err error) {
		if op == "renew" {
			panic("OnError: " + err.Error())
		}
	}
	cfg.Callbacks = cb
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = lease.Run(ctx, s, cfg, lease.RunOptions{})
	}()
	lctx := waitCtx(t, leading, "a lone process")
	derived, stop := context.WithCancel(lctx)
	defer stop()
	s.mu.Lock()
	s.failRenew = true
	s.mu.Unlock()
	var p any
	select {
	case p = <-panicked:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not panic within 10 s of its renewals failing")
	}
	if p == nil {
		t.Fatal("Run returned without the callback's panic")
	}
	select {
	case <-derived.Done():
	case <-time.After(2 * time.Second): // the deadline is 600 ms after a renewal
		t.Fatalf("after OnError's panic (%v) ended Run, a context derived from the leader's was still live 2 s later; the leader's Err: %v", p, lctx.Err())
	}
	if term, _ := lease.TermOf(lctx); term.Valid() {
		t.Error("the term is still valid after Run panicked out of it")
	}
}
