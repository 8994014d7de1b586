package etcdstore

import (
	"context"
	"time"

	"github.com/leaselab/leaselab/lease"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// prepareSpare readies a spare lease in the background when a read found
// the key held (a watcher's read, mostly: this client may create next)
// and the spare this client has, if any, is past the first half of its
// use: a keepalive renews it (no Raft proposal), or, if there is none or
// it is gone, a grant makes one. The TTL it plans for is that of this
// client's own latest write, else the lease the record states.
func (s *Store) prepareSpare(rec lease.Record) {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	need := s.lastTTL
	if need == 0 {
		need = s.ttlSeconds(rec.TTL)
	}
	sp := s.spare
	if s.granting || s.noSpare || sp.id != clientv3.NoLease && sp.ttl == 2*need &&
		time.Since(sp.sent) <= time.Duration(sp.ttl-need)*time.Second/2 {
		return
	}
	s.granting = true
	go s.refreshSpare(sp, need)
}

// refreshSpare renews old, if it is a spare of 2*need seconds, else grants
// a new one, and keeps the result as the spare unless a create took old
// meanwhile (it may be the record's now). A spare it replaces is revoked.
func (s *Store) refreshSpare(old spareLease, need int64) {
	ctx, cancel := s.ctx()
	defer cancel()
	l := spareLease{ttl: 2 * need, sent: time.Now()}
	if old.id != clientv3.NoLease && old.ttl == l.ttl {
		if r, err := s.c.KeepAliveOnce(ctx, old.id); err == nil && r.TTL >= l.ttl {
			l.id = old.id
		}
	}
	if l.id == clientv3.NoLease {
		if g, err := s.c.Grant(ctx, l.ttl); err == nil {
			l.id = g.ID
		}
	}
	s.spareMu.Lock()
	s.granting = false
	drop := clientv3.NoLease // a lease no one may use, to revoke
	switch {
	case l.id == clientv3.NoLease: // the next create grants its own
	case s.noSpare || s.spare.id != old.id:
		if l.id != old.id {
			drop = l.id // closed, or a create took old: l is nobody's
		}
	default:
		if s.spare.id != l.id {
			drop = s.spare.id // replaced, and nobody's
		}
		s.spare = l
	}
	s.spareMu.Unlock()
	s.revoke(ctx, drop)
}

// takeSpare returns the spare lease if a record that needs need seconds
// may be put with it now, and clears it.
func (s *Store) takeSpare(need int64) (spareLease, bool) {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	s.lastTTL = need
	l := s.spare
	if !l.usable(need, time.Now()) {
		return spareLease{}, false
	}
	s.spare = spareLease{}
	return l, true
}

// keepSpare gives back a spare lease a create did not attach; if another
// has been readied meanwhile, or the store is closed, it revokes it.
func (s *Store) keepSpare(ctx context.Context, l spareLease) {
	s.spareMu.Lock()
	keep := s.spare.id == clientv3.NoLease && !s.noSpare
	if keep {
		s.spare = l
	}
	s.spareMu.Unlock()
	if !keep {
		s.revoke(ctx, l.id)
	}
}
