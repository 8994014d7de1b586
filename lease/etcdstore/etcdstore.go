package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaselab/leaselab/lease"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// DefaultTimeout bounds each call when Options.Timeout is zero.
const DefaultTimeout = time.Second

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "leaselab/"

// Options configure a Store.
type Options struct {
	// Endpoints are the cluster's client URLs, as http://host:port.
	Endpoints []string
	// Username and Password authenticate, when the cluster has auth
	// enabled.
	Username, Password string
	// TLS configures the connection (nil: plain).
	TLS *tls.Config
	// Prefix is the key's prefix (DefaultPrefix if empty); the key is
	// Prefix + Name.
	Prefix string
	// Name names the lease.
	Name string
	// Timeout bounds each call, connection included (0: DefaultTimeout).
	// Keep it well under the elector's renew interval: a call under way
	// when the leader's local deadline passes delays its step-down by up
	// to this much.
	Timeout time.Duration
	// ExpiryMargin is added to the lease duration for the etcd lease's
	// TTL. 0: the TTL is the lease duration, rounded up to whole seconds.
	ExpiryMargin time.Duration
	// OnError, if set, is called with every error a call returns that is
	// none of the contract's outcomes (no record, a record exists, a
	// conflict): an unreachable or hung server, refused credentials. It
	// must not block.
	OnError func(op string, err error)
}

// reconnect is how the client connects again after it lost its server:
// gRPC's default back-off (from 1 s, times 1.6 after every failed attempt,
// up to 120 s) left an elector over a server down for 90 s without a
// connection, failing every call, for 25 s after the server was back,
// eight of its 3 s leases (a probe, 2026-12-07). Here the attempts grow
// from 100 ms to ReconnectMax: one connection attempt a second, per
// endpoint, while a server is down. A connection still gets gRPC's
// default 20 s to complete.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: ReconnectMax},
	MinConnectTimeout: 20 * time.Second,
}

// ReconnectMax is the longest the client waits between two attempts to
// connect to an endpoint it cannot reach: a server back after an outage
// answers calls within about this much.
const ReconnectMax = time.Second

// Store is a lease.Store on one etcd key. Its methods may be called
// concurrently.
type Store struct {
	c       *clientv3.Client
	key     string
	timeout time.Duration
	margin  time.Duration
	onError func(string, error)

	notices lease.Notices
	subOnce sync.Once
	stop    context.CancelFunc // ends the watch (nil: none started)
	mu      sync.Mutex
	closed  bool

	spareMu  sync.Mutex
	spare    spareLease // a lease granted ahead for the next Create (id 0: none)
	granting bool       // a grant of a spare is under way
	noSpare  bool       // the store is closed: no more spares
	lastTTL  int64      // the etcd lease TTL, in seconds, of the latest write asked for
}

// spareLease is an etcd lease granted ahead of a Create, so that a create
// is one Raft proposal (its transaction) and not two (a grant, then the
// transaction): on a hand-over, the successor's create is the critical
// path. It is granted for twice the TTL a record needs and used only while
// what is left of it is at least that TTL, measured from before the grant
// was sent, so that a record created with it lives on the server at least
// as long as one created with a lease granted then.
type spareLease struct {
	id   clientv3.LeaseID
	ttl  int64     // seconds, as granted
	sent time.Time // before the grant was sent (its monotonic reading counts)
}

// usable reports whether a record that needs need seconds may be put
// with l now: at least need seconds are left of it, and at most twice
// need were granted (a spare readied for a longer lease is not used for a
// shorter one: the record would outlive its TTL by more than the doc
// says).
func (l spareLease) usable(need int64, now time.Time) bool {
	return l.id != clientv3.NoLease && l.ttl <= 2*need && now.Sub(l.sent) <= time.Duration(l.ttl-need)*time.Second
}

var _ lease.Store = (*Store)(nil)

// New connects to the cluster and reads the lease's key within ctx and
// the call timeout: an unreachable cluster, refused credentials or a key
// the user may not read are errors here, not at the first lease operation.
func New(ctx context.Context, o Options) (*Store, error) {
	if len(o.Endpoints) == 0 || o.Name == "" {
		return nil, errors.New("etcdstore: Options.Endpoints and Options.Name are required")
	}
	for _, e := range o.Endpoints {
		// (The client takes a malformed URL and waits out the timeout:
		// "no answer", for an address nothing could answer at. A plain
		// host:port it takes as it is.)
		if !strings.Contains(e, "://") {
			continue
		}
		if u, err := url.Parse(e); err != nil || (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" || u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix" && u.Scheme != "unixs" {
			why := "want http://host:port"
			if err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("etcdstore: endpoint %q: %s", e, why)
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	// Connecting and setting up may take longer than one call: a deadline
	// the caller set on ctx bounds them instead of the call timeout.
	start := time.Now()
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   o.Endpoints,
		Username:    o.Username,
		Password:    o.Password,
		TLS:         o.TLS,
		DialTimeout: timeout,
		Context:     context.Background(), // the client outlives New's ctx
		Logger:      zap.NewNop(),         // errors are returned (and OnError), not logged
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(reconnect)},
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: %s: %w", strings.Join(o.Endpoints, ","), err)
	}
	s := &Store{c: c, key: prefix + o.Name, timeout: timeout, margin: o.ExpiryMargin, onError: o.OnError}
	if _, err := c.Get(ctx, s.key); err != nil {
		c.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			// The client waits for a connection rather than failing: say
			// what it was waiting for.
			return nil, fmt.Errorf("etcdstore: %s: no answer within %v (%s): %w", strings.Join(o.Endpoints, ","), time.Since(start).Round(100*time.Millisecond), unreachable(o.Endpoints), err)
		}
		return nil, fmt.Errorf("etcdstore: %s: %w", strings.Join(o.Endpoints, ","), err)
	}
	return s, nil
}

// Close closes the client.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.spareMu.Lock()
	l := s.spare
	s.spare, s.noSpare = spareLease{}, true
	s.spareMu.Unlock()
	if l.id != clientv3.NoLease {
		ctx, cancel := s.ctx()
		s.revoke(ctx, l.id) // (else it expires on its own)
		cancel()
	}
	return s.c.Close()
}

var (
	_ lease.ChangeFeed  = (*Store)(nil)
	_ lease.ReleaseHint = (*Store)(nil)
)

// Released implements lease.ReleaseHint: the latest notice is the key's
// DELETE event (a release, or the expiry of the record's etcd lease), and
// came after token.
func (s *Store) Released(token uint64) bool { return s.notices.Released(token) }

// Changes implements lease.ChangeFeed. The first call starts a watch on
// the key from the revision after the one a read returns then, so that no
// change after the call is missed, and keeps it: after a broken stream
// (a server restart, a lost connection, a member that left) it watches
// again from the revision after the last event it had (etcd replays what
// it missed), or, if that revision was compacted away, from the current
// one, with a notice, since it cannot tell what it lost. An expiry of the
// record's etcd lease is a DELETE event: a notice too. A first read that
// fails (a server down, no read permission on the key) is reported once
// through OnError; the watchers poll, and the read is tried again in the
// background until it succeeds (a notice then: the watch starts late).
func (s *Store) Changes() (uint64, <-chan struct{}) {
	s.subOnce.Do(s.watch)
	return s.notices.Changes()
}

func (s *Store) watch() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	s.stop = stop
	s.mu.Unlock()
	// The first read is made before Changes returns: a change after the
	// call has a later revision, and is seen.
	next, err := s.startRevision(wctx)
	if err != nil {
		s.fail("watch", fmt.Errorf("%w (its watchers poll; trying again in the background)", err))
	}
	go s.follow(wctx, next)
}

// startRevision is the revision after the key's current one.
func (s *Store) startRevision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := s.c.Get(ctx, s.key)
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision + 1, nil
}

// follow watches the key from revision next (0: from the revision after
// a read it retries, 100 ms doubling to 5 s apart, then notices once:
// what happened meanwhile was not watched) until ctx ends.
func (s *Store) follow(ctx context.Context, next int64) {
	for backoff := 100 * time.Millisecond; next == 0; backoff = min(2*backoff, 5*time.Second) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if n, err := s.startRevision(ctx); err == nil {
			next = n
			s.notices.Notify()
		}
	}
	warned := false
	for ctx.Err() == nil {
		for wr := range s.c.Watch(ctx, s.key, clientv3.WithRev(next)) {
			if wr.CompactRevision > 0 {
				next = wr.CompactRevision // what happened before it is gone
				s.notices.Notify()
			}
			if err := wr.Err(); err != nil {
				if !warned && ctx.Err() == nil {
					warned = true
					s.fail("watch", fmt.Errorf("%w (watching again; meanwhile its watchers poll)", err))
				}
				break
			}
			for _, ev := range wr.Events {
				next = ev.Kv.ModRevision + 1
				if ev.Type == clientv3.EventTypeDelete {
					s.notices.NotifyRelease() // a release, or the lease's expiry: no record
				} else {
					s.notices.Notify()
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // a broken stream: again, from next
		}
	}
}

// Key returns the record's key.
func (s *Store) Key() string { return s.key }

// value is the key's value for r: "HOLDER 0 LEASE_MS NONCE" for the
// write that acquired (its epoch is its revision), "HOLDER EPOCH LEASE_MS
// NONCE" for a renewal; without " NONCE" for a record with no nonce, and
// without " LEASE_MS NONCE" for one that states no lease (records earlier
// leaselabs wrote).
func value(r lease.Record) string {
	e := r.Epoch
	if e == r.Version {
		e = 0
	}
	return format(r.Holder, e, r.TTL, r.Nonce)
}

// format is the value for holder, epoch (0: this write's revision), a
// writer's lease of ttl (in whole ms, rounded up; none when ttl <= 0) and
// the write's nonce (none when 0, or when it states no lease).
func format(holder, epoch int64, ttl time.Duration, nonce uint64) string {
	v := strconv.FormatInt(holder, 10) + " " + strconv.FormatInt(epoch, 10)
	if ms := lease.TTLMillis(ttl); ms > 0 {
		v += " " + strconv.FormatInt(ms, 10)
		if nonce != 0 {
			v += " " + strconv.FormatUint(nonce, 10)
		}
	}
	return v
}

// decode parses a value with the key's ModRevision, and accepts nothing
// but what value writes: two fields (a record from a leaselab that kept no
// lease: TTL 0), three (one that kept no nonce) or four.
func decode(v []byte, modRev int64) (lease.Record, error) {
	f := strings.Split(string(v), " ")
	if len(f) < 2 || len(f) > 4 {
		return lease.Record{}, fmt.Errorf("%d fields, not HOLDER EPOCH [LEASE_MS [NONCE]]", len(f))
	}
	var n [4]int64
	for i, s := range f {
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || x < 0 || strconv.FormatInt(x, 10) != s {
			return lease.Record{}, fmt.Errorf("field %d, %.24q, is not a decimal number", i+1, s)
		}
		n[i] = x
	}
	e := n[1]
	if e == 0 {
		e = modRev
	}
	if e > modRev || modRev <= 0 {
		return lease.Record{}, fmt.Errorf("epoch %d of revision %d", e, modRev)
	}
	rec := lease.Record{Holder: n[0], Epoch: e, Version: modRev}
	if len(f) >= 3 {
		ttl, err := lease.TTLFromMillis(n[2])
		if err != nil {
			return lease.Record{}, err
		}
		rec.TTL = ttl
	}
	if len(f) == 4 {
		if n[3] == 0 {
			return lease.Record{}, errors.New("nonce 0")
		}
		rec.Nonce = uint64(n[3])
	}
	return rec, nil
}

// ttlSeconds is the etcd lease's TTL for a lease of ttl: whole seconds,
// rounded up, the rule the simulator's model of etcd follows too.
func (s *Store) ttlSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+s.margin+time.Second-1)/time.Second))
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// fail reports and wraps an error that is none of the contract's outcomes.
func (s *Store) fail(op string, err error) error {
	if errors.Is(err, rpctypes.ErrPermissionDenied) { // (the client turns the gRPC status into it)
		// A role that may not write (or read) the key: for which
		// errors.Is(err, fs.ErrPermission), as a file's EACCES.
		err = fmt.Errorf("%w (%w)", err, fs.ErrPermission)
	}
	err = fmt.Errorf("etcdstore: %s %s: %w", op, s.key, err)
	if s.onError != nil {
		s.onError(op, err)
	}
	return err
}

// revoke revokes an etcd lease, best effort: one that is not revoked
// expires on its own.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID) {
	if id != clientv3.NoLease {
		s.c.Revoke(ctx, id)
	}
}

// Read returns the record; none is an error for which
// errors.Is(err, fs.ErrNotExist).
func (s *Store) Read() (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	// (One read-only transaction, the record and its incarnation: a
	// linearizable read, as a Get, and no Raft proposal.)
	resp, err := s.c.Txn(ctx).Then(clientv3.OpGet(s.key), clientv3.OpGet(s.lifeKey())).Commit()
	if err != nil {
		return lease.Record{}, s.fail("read", err)
	}
	got := resp.Responses[0].GetResponseRange()
	if got == nil || len(got.Kvs) == 0 {
		return lease.Record{}, fmt.Errorf("etcdstore: read %s: %w", s.key, fs.ErrNotExist)
	}
	life := lifeIn(resp.Responses[1].GetResponseRange())
	kv := got.Kvs[0]
	rec, err := decode(kv.Value, kv.ModRevision)
	rec.Incarnation = life
	if err != nil {
		// A value leaselab did not write (another program's, an
		// operator's put, on no etcd lease perhaps): held by no one known,
		// at its revision, as a file store's garbage version is. The
		// reference waits it out and takes it over by compare-and-set on
		// that revision (replace). (As a read error, nobody ever led over
		// it: a probe, 2026-12-07.) What it is, and why, is still told.
		if s.onError != nil {
			s.onError("read", fmt.Errorf("etcdstore: read %s: value %.64q is %w: %v", s.key, kv.Value, lease.ErrForeign, err))
		}
		return lease.Record{Holder: lease.Unknown, Version: kv.ModRevision, Incarnation: life}, nil
	}
	s.prepareSpare(rec)
	return rec, nil
}

// Create puts a record for holder if the key does not exist; its epoch
// and version are the revision of that write. If the key exists it fails
// with an error for which errors.Is(err, fs.ErrExist).
func (s *Store) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	need := s.ttlSeconds(ttl)
	l, spare := s.takeSpare(need)
	if !spare {
		g, err := s.c.Grant(ctx, need)
		if err != nil {
			return lease.Record{}, s.fail("create", err)
		}
		l.id = g.ID
	}
	nonce, life := lease.NonceFor(ttl), newLife()
	put := func() (*clientv3.TxnResponse, error) {
		return s.c.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(s.key), "=", 0)).
			Then(clientv3.OpPut(s.key, format(holder, 0, ttl, nonce), clientv3.WithLease(l.id)), s.lifeOp(life)).
			Commit()
	}
	resp, err := put()
	if spare && errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// The spare is gone (revoked by an operator, a restored
		// cluster): the transaction failed whole. Grant, and try again.
		spare = false
		g, gerr := s.c.Grant(ctx, need)
		if gerr != nil {
			return lease.Record{}, s.fail("create", gerr)
		}
		l.id = g.ID
		resp, err = put()
	}
	switch {
	case err != nil:
		// Whether the put took effect is unknown: the lease is not
		// reused (it may be the record's).
		return sent(holder, ttl, nonce), s.fail("create", err)
	case !resp.Succeeded:
		if spare {
			s.keepSpare(ctx, l)
		} else {
			s.revoke(ctx, l.id)
		}
		return lease.Record{}, fmt.Errorf("etcdstore: create %s: %w", s.key, fs.ErrExist)
	}
	rev := resp.Header.Revision
	return lease.Record{Holder: holder, Epoch: rev, Version: rev, TTL: lease.StatedTTL(ttl), Nonce: nonce, Incarnation: lifeOf(resp.Responses[1], life)}, nil
}

// sent is what a write whose outcome is not known returns: the record it
// sent, as lease.Store says.
func sent(holder int64, ttl time.Duration, nonce uint64) lease.Record {
	return lease.Record{Holder: holder, TTL: lease.StatedTTL(ttl), Nonce: nonce}
}

// replace is Renew's and Takeover's transaction: if the key still holds
// expected, put next (epoch 0: an acquisition, whose epoch is its
// revision) with a new etcd lease.
func (s *Store) replace(op string, expected lease.Record, holder, epoch int64, ttl time.Duration) (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	need := s.ttlSeconds(ttl)
	s.spareMu.Lock()
	s.lastTTL = need
	s.spareMu.Unlock()
	l, err := s.c.Grant(ctx, need)
	if err != nil {
		return lease.Record{}, s.fail(op, err)
	}
	nonce, life := lease.NonceFor(ttl), newLife()
	val := format(holder, epoch, ttl, nonce)
	same := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.key), "=", expected.Version),
		clientv3.Compare(clientv3.Value(s.key), "=", value(expected))}
	if expected.Holder == lease.Unknown {
		same = same[:1] // a value that is no record (Read): its revision alone
	}
	resp, err := s.c.Txn(ctx).
		If(same...).
		Then(clientv3.OpPut(s.key, val, clientv3.WithLease(l.ID), clientv3.WithPrevKV()), s.lifeOp(life)).
		Commit()
	switch {
	case err != nil:
		return sent(holder, ttl, nonce), s.fail(op, err)
	case !resp.Succeeded:
		s.revoke(ctx, l.ID)
		return lease.Record{}, fmt.Errorf("etcdstore: %s %s: %w", op, s.key, lease.ErrConflict)
	}
	if prev := resp.Responses[0].GetResponsePut().GetPrevKv(); prev != nil {
		s.revoke(ctx, clientv3.LeaseID(prev.Lease))
	}
	rev := resp.Header.Revision
	if epoch == 0 {
		epoch = rev
	}
	return lease.Record{Holder: holder, Epoch: epoch, Version: rev, TTL: lease.StatedTTL(ttl), Nonce: nonce, Incarnation: lifeOf(resp.Responses[1], life)}, nil
}

// Renew puts the next version of cur if cur is still the record, else
// fails with lease.ErrConflict (also when the key has expired).
func (s *Store) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return s.replace("renew", cur, cur.Holder, cur.Epoch, ttl)
}

// Takeover puts a record for holder, whose epoch is the revision of this
// write, if stale is still the record, else fails with lease.ErrConflict
// (also when the key has expired: re-read, then Create).
func (s *Store) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	return s.replace("takeover", stale, holder, 0, ttl)
}

// Release deletes the key if cur is still the record, else fails with
// lease.ErrConflict. The record's etcd lease is left to expire, not
// revoked: a revoke is one more Raft proposal while the successor's
// create is being proposed (measured: a hand-over's p99 3.1-5.1 ms
// without it, 3.9-6.6 ms with it), and the key, deleted, is no longer
// attached to it.
func (s *Store) Release(cur lease.Record) error {
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.c.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(s.key), "=", cur.Version),
			clientv3.Compare(clientv3.Value(s.key), "=", value(cur))).
		Then(clientv3.OpDelete(s.key)).
		Commit()
	switch {
	case err != nil:
		return s.fail("release", err)
	case !resp.Succeeded:
		return fmt.Errorf("etcdstore: release %s: %w", s.key, lease.ErrConflict)
	}
	return nil
}
