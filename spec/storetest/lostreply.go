package storetest

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// LostReply checks what a renewal whose reply never comes returns (the
// lease.Store contract): a renewal sent to a server that hangs fails when
// the store's timeout ends, with an error none of the contract's
// outcomes, and returns the record it sent: its holder, its nonce, epoch
// and version 0. Once the server is back, a record the renewal made (a
// version past the renewed one) carries that nonce: its writer can know
// it for its own. A nonce of 0 is allowed only where the renewal took no
// effect (nothing was sent: etcd's lease grant comes first).
type LostReply struct {
	// Store is a client of the server Pause hangs.
	Store lease.Store
	// Pause hangs the server (SIGSTOP); Resume lets it go on.
	Pause, Resume func()
}

// Run runs the check and returns the record the renewal sent and whether
// it took effect.
func (c LostReply) Run(t *testing.T) (lease.Record, bool) {
	t.Helper()
	const holder, ttl = 7, 30 * time.Second
	rec, err := c.Store.Create(holder, ttl)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// One renewal first, as a leader's: a store's first may differ (Redis
	// loads its script: a hung server's NOSCRIPT would never apply).
	if rec, err = c.Store.Renew(rec, ttl); err != nil {
		t.Fatalf("renew: %v", err)
	}
	c.Pause()
	resumed := false
	defer func() {
		if !resumed {
			c.Resume()
		}
	}()
	sent, err := c.Store.Renew(rec, ttl)
	c.Resume()
	resumed = true
	// A request the server had taken in before it hung is done once it
	// runs again, perhaps after a read on another connection: a moment.
	time.Sleep(300 * time.Millisecond)
	switch {
	case err == nil:
		t.Fatalf("renew on a hung server succeeded: %+v", sent)
	case errors.Is(err, lease.ErrConflict) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist):
		t.Fatalf("renew on a hung server: %v, an outcome: its writer would take it as known", err)
	case sent.Epoch != 0 || sent.Version != 0:
		t.Errorf("renew failed (%v) but returned %+v: epoch and version are the store's, not known", err, sent)
	case sent.Nonce != 0 && (sent.Holder != holder || sent.TTL != lease.StatedTTL(ttl)):
		t.Errorf("renew failed (%v) and returned %+v: not the record it sent (holder %d, lease %v)", err, sent, holder, ttl)
	}
	var cur lease.Record
	for deadline := time.Now().Add(20 * time.Second); ; {
		var rerr error
		if cur, rerr = c.Store.Read(); rerr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read worked for 20 s after the server was resumed: %v", rerr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	applied := cur.Version > rec.Version
	switch {
	case !applied && cur != rec:
		t.Errorf("after the lost renewal the record is %+v: neither %+v nor a later version", cur, rec)
	case applied && (cur.Holder != holder || cur.Epoch != rec.Epoch):
		t.Errorf("the lost renewal of %+v made %+v: another holder or epoch", rec, cur)
	case applied && (sent.Nonce == 0 || cur.Nonce != sent.Nonce):
		t.Errorf("the lost renewal made %+v, but it returned nonce %d: its writer cannot know it for its own", cur, sent.Nonce)
	}
	t.Logf("renewal on a hung server: %v; it sent %s; it took effect: %v", err, describe(sent), applied)
	return sent, applied
}

func describe(r lease.Record) string {
	return fmt.Sprintf("{holder %d, lease %v, nonce %d}", r.Holder, r.TTL, r.Nonce)
}
