package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultTimeout bounds each call when Options.Timeout is zero.
const DefaultTimeout = time.Second

// Options configure a Store.
type Options struct {
	// Addr is the server's host:port.
	Addr string
	// Username and Password authenticate (AUTH); both may be empty.
	Username, Password string
	// DB is the database number (SELECT).
	DB int
	// TLS configures the connection (nil: plain TCP).
	TLS *tls.Config
	// Name names the lease: its keys are "leaselab:{Name}" and
	// "leaselab:{Name}:version".
	Name string
	// Timeout bounds each call, connection included (0: DefaultTimeout).
	// Keep it well under the elector's renew interval: a call under way
	// when the leader's local deadline passes delays its step-down by up
	// to this much.
	Timeout time.Duration
	// ExpiryMargin is added to the lease duration for the key's TTL (see
	// the package comment). 0: the TTL is the lease duration.
	ExpiryMargin time.Duration
	// OnError, if set, is called with every error a call returns that is
	// none of the contract's outcomes (no record, a record exists, a
	// conflict): an unreachable or hung server, a refused password, a
	// dropped connection. lease.Reference treats such an error as "try
	// again" and steps down at its local deadline; this is where to see
	// it. It must not block.
	OnError func(op string, err error)
}

// Store is a lease.Store on one Redis key. Its methods may be called
// concurrently.
type Store struct {
	c       *redis.Client
	key     string
	counter string
	// released holds the version of the last record released (a release
	// deletes the record; a record the server expired or evicted leaves
	// it below the counter: lease.ErrVanished).
	released string
	// leaseKey holds "VERSION LEASE_MS NONCE" of the last record that
	// stated a lease (value.go).
	leaseKey string
	// life holds the incarnation of the server's data (lifeLua).
	life    string
	channel string // the writers publish every change on it
	timeout time.Duration
	margin  time.Duration
	onError func(string, error)

	notices lease.Notices
	subOnce sync.Once
	mu      sync.Mutex
	ps      *redis.PubSub // the subscription, once a watcher asked (nil: none, or refused)
	closed  bool
	quit    chan struct{} // closed by Close
	// foreign is the value, not a lease record, that the last Read found
	// at the key: a takeover of the record it returned (held by
	// lease.Unknown) replaces that value, if it is still there.
	foreign    string
	hasForeign bool
}

var _ lease.Store = (*Store)(nil)

// ErrWrongType is Create's error when the lease's key holds a value of
// another type than a string (a hash, a list, ...): someone else's, which
// no create can replace. It must be removed.
var ErrWrongType = errors.New("the key holds a value of another type than a lease record: remove it")

// ErrNoVersionLeft is the error of every write once the version counter
// is at 999999999999999, the highest version the store counts (its
// scripts count in Lua's doubles). Only an operator's counter gets there:
// removing the lease's keys starts the versions, and the epochs, at 1
// again, which a fenced resource that remembers its highest epoch must be
// told of.
var ErrNoVersionLeft = errors.New("the version counter is at 999999999999999, the highest version the store counts: remove the lease's keys")

// New connects to the server and checks that it answers (PING, after
// AUTH when a password is given): an unreachable server, a refused
// password or a Redis Cluster node (ErrCluster) is an error here, not at
// the first lease operation. A PING
// slower than the call timeout is sent again until ctx ends (without a
// deadline on ctx, New allows one call timeout in all).
func New(ctx context.Context, o Options) (*Store, error) {
	if o.Addr == "" || o.Name == "" {
		return nil, errors.New("redisstore: Options.Addr and Options.Name are required")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := redis.NewClient(&redis.Options{
		Addr:      o.Addr,
		Username:  o.Username,
		Password:  o.Password,
		DB:        o.DB,
		TLSConfig: o.TLS,
		Protocol:  2,
		// A retried script could report a conflict with its own first,
		// successful, attempt: every call is made once, and an error is
		// an unknown outcome for the caller to handle.
		MaxRetries:               -1,
		DialerRetries:            1,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		PoolTimeout:              timeout,
		ContextTimeoutEnabled:    true,
		PoolSize:                 4,
		DisableIdentity:          true, // CLIENT SETINFO is Redis 7.2's
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	s := &Store{
		c:        c,
		key:      "leaselab:{" + o.Name + "}",
		counter:  "leaselab:{" + o.Name + "}:version",
		released: "leaselab:{" + o.Name + "}:released",
		leaseKey: "leaselab:{" + o.Name + "}:lease",
		life:     "leaselab:{" + o.Name + "}:incarnation",
		channel:  "leaselab:{" + o.Name + "}:changes",
		timeout:  timeout,
		margin:   o.ExpiryMargin,
		onError:  o.OnError,
		quit:     make(chan struct{}),
	}
	// Connecting and setting up may take longer than one call: a deadline
	// the caller set on ctx bounds them instead of the call timeout.
	cancel := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// A server slower than one call's timeout (a loaded machine, a
	// server starting) is asked again while ctx lasts; one that refuses
	// the connection or the credentials is an error at once.
	for {
		err := c.Ping(ctx).Err()
		if err == nil && s.cluster(ctx) {
			c.Close()
			return nil, fmt.Errorf("redisstore: %s: %w", o.Addr, ErrCluster)
		}
		if err == nil {
			return s, nil
		}
		if !isTimeout(err) || ctx.Err() != nil {
			c.Close()
			return nil, fmt.Errorf("redisstore: %s: %w", o.Addr, err)
		}
	}
}

// ErrCluster is New's error for a server that is a Redis Cluster node.
// The store speaks to one server: a node that does not own the lease's
// slot answers MOVED to every call, for good, and one that does may
// migrate it under a leader, after which every call of every process
// fails and nobody leads (a probe, 2026-12-07). Use one Redis, or a
// primary with replicas.
var ErrCluster = errors.New("the server is a Redis Cluster node (cluster_enabled:1): leaselab needs one Redis, or a primary with replicas, not a cluster")

// cluster reports whether the server says it is a cluster node (INFO
// cluster). A server that does not answer INFO (a managed service that
// renames it) is not said to be one.
func (s *Store) cluster(ctx context.Context) bool {
	info, err := s.c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// Replica reports whether the server says it is a replica (ROLE), which
// refuses every write (READONLY): a process over it would watch and retry
// its create for good (a probe pointed -dsn at one). A server that does not
// answer ROLE (a managed service that renames it) is not said to be one.
func (s *Store) Replica(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	role, err := s.c.Do(ctx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "slave"
}

// EvictionWarning says, when the server may evict the lease's keys, why:
// a memory limit (maxmemory) with a policy other than noeviction. Every
// policy that evicts may take them (the allkeys ones any key, the volatile
// ones any key with a TTL, which the lease's record has): the record, the
// version counter, the marks of releases, after which every process waits
// out the lease it saw and each new term starts again from epoch 1 (a
// probe: allkeys-lru under pressure, nobody led for 73 and 100 s). ""
// when it cannot (no limit, noeviction) or does not say (CONFIG refused).
func (s *Store) EvictionWarning(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	policy, err := s.c.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return ""
	}
	limit, err := s.c.ConfigGet(ctx, "maxmemory").Result()
	if err != nil || limit["maxmemory"] == "0" || limit["maxmemory"] == "" || policy["maxmemory-policy"] == "noeviction" || policy["maxmemory-policy"] == "" {
		return ""
	}
	return fmt.Sprintf("redis at %s may evict the lease's keys (maxmemory %s, maxmemory-policy %s): under memory pressure nobody leads until the pressure passes, and epochs start again from 1; run it with maxmemory-policy noeviction", s.c.Options().Addr, limit["maxmemory"], policy["maxmemory-policy"])
}

// isTimeout reports whether err is a call's deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Close ends the subscription, if any, and closes the client's
// connections.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.quit)
	}
	s.closed = true
	ps := s.ps
	s.mu.Unlock()
	if ps != nil {
		ps.Close()
	}
	return s.c.Close()
}

var (
	_ lease.ChangeFeed  = (*Store)(nil)
	_ lease.ReleaseHint = (*Store)(nil)
)

// Released implements lease.ReleaseHint: the latest notice is the
// message a release publishes, and came after token.
func (s *Store) Released(token uint64) bool { return s.notices.Released(token) }

// Changes implements lease.ChangeFeed. The first call subscribes to the
// channel every writer publishes its change on, inside the script that
// makes it (so a change and its message are one step: no writer can die
// between them). Redis's pub/sub keeps nothing for a subscriber that is
// away: a message sent while the subscription reconnects is lost, and
// so is a server-side expiry (nobody publishes it), which the watchers'
// wake at the expiry of the lease they saw covers; their poll every
// watch interval covers the rest; after a reconnect the subscription is
// made again and counted as a notice. Keyspace notifications
// (notify-keyspace-events) are not used, so a server that has them off
// notifies all the same. A subscription the server refuses (an ACL
// without the channel, a server away) is reported once through OnError
// and leaves the watchers polling while it is tried again in the
// background (a notice when it succeeds); a PUBLISH the server refuses
// never fails the write.
func (s *Store) Changes() (uint64, <-chan struct{}) {
	s.subOnce.Do(s.subscribe)
	return s.notices.Changes()
}

func (s *Store) subscribe() {
	if err := s.trySubscribe(); err != nil {
		s.fail("subscribe", fmt.Errorf("%s: %w (its watchers poll; trying again in the background)", s.channel, err))
		go func() {
			for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
				select {
				case <-s.quit:
					return
				case <-time.After(backoff):
				}
				if s.trySubscribe() == nil {
					s.notices.Notify() // late: what changed meanwhile was not heard
					return
				}
			}
		}()
	}
}

// trySubscribe subscribes to the channel and, once the server has
// confirmed it, counts every message as a notice, and every
// resubscription after a lost connection (go-redis makes it on its own)
// as one: messages sent meanwhile were lost.
func (s *Store) trySubscribe() error {
	ctx, cancel := s.ctx()
	defer cancel()
	ps := s.c.Subscribe(ctx, s.channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ps.Close()
		return nil
	}
	s.ps = ps
	s.mu.Unlock()
	ch := ps.ChannelWithSubscriptions()
	go func() {
		for msg := range ch {
			// The release script publishes "0": nobody holds the lease
			// (lease.ReleaseHint); every other message is a version.
			if m, ok := msg.(*redis.Message); ok && m.Payload == "0" {
				s.notices.NotifyRelease()
			} else {
				s.notices.Notify()
			}
		}
	}()
	return nil
}

// Key returns the record's key.
func (s *Store) Key() string { return s.key }

// ttlMS is the key's TTL for a lease of ttl, in whole milliseconds,
// rounded up (PX): the rule the simulator's model of Redis follows too.
func (s *Store) ttlMS(ttl time.Duration) int64 {
	return max(1, (ttl + s.margin + time.Millisecond - 1).Milliseconds())
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// fail reports and wraps an error that is none of the contract's outcomes.
func (s *Store) fail(op string, err error) error {
	if denied(err.Error()) {
		// An ACL that refuses this user a command or a key: for which
		// errors.Is(err, fs.ErrPermission), as a file's EACCES.
		err = fmt.Errorf("%w (%w)", err, fs.ErrPermission)
	}
	err = fmt.Errorf("redisstore: %s %s: %w", op, s.key, err)
	if s.onError != nil {
		s.onError(op, err)
	}
	return err
}

// denied reports whether a server's error message says its ACL refused
// this user: a command or key it may not use (NOPERM), or one a script
// ran for it ("ERR The user executing the script can't run this command
// or subcommand", "No permissions to access a key": Redis 7.0's words for
// a script's refused write; a review found a user who may read and run
// scripts, but not write, retrying for ever).
func denied(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "can't run this command or subcommand") || strings.Contains(msg, "No permissions to access a key")
}

// Vanishes implements lease.Vanishing: Redis expires a key by its wall
// clock (PX), which a step moves, and may evict it (maxmemory with a
// volatile-* policy).
func (s *Store) Vanishes() bool { return true }

// Read returns the record; none is an error for which
// errors.Is(err, fs.ErrNotExist): with lease.ErrReleased when the last
// record was released, lease.ErrVanished when it went otherwise (expired,
// evicted), neither when there never was one (or the server lost its
// data). One MGET reads the record, the counter and the last released
// version at once.
func (s *Store) Read() (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	vals, err := s.c.MGet(ctx, s.key, s.counter, s.released, s.leaseKey, s.life).Result()
	if err != nil {
		return lease.Record{}, s.fail("read", err)
	}
	str := func(i int) (string, bool) {
		if i >= len(vals) {
			return "", false
		}
		v, ok := vals[i].(string)
		return v, ok
	}
	v, ok := str(0)
	if !ok {
		why := fs.ErrNotExist
		if c, ok := str(1); ok && c != "0" {
			if r, ok := str(2); ok && r == c {
				why = lease.ErrReleased
			} else {
				n, _ := strconv.ParseInt(c, 10, 64)
				l, _ := str(3)
				ttl, nonce := statedLease(l, n)
				why = &lease.VanishedError{Version: n, TTL: ttl, Nonce: nonce}
			}
		}
		return lease.Record{}, fmt.Errorf("redisstore: read %s: %w", s.key, why)
	}
	rec, err := decode(v)
	if err != nil {
		// A value leaselab did not write (another program's, an
		// operator's SET, without a TTL perhaps): held by no one known,
		// as a file store's garbage version is, at the counter's version.
		// The reference waits it out (its own lease, or the longest it has
		// seen stated) and takes it over, replacing this very value by
		// compare-and-set. (As an error, it was read again and again, and
		// nobody ever led: a probe, 2026-12-07.) A leaselab write bumps
		// the counter, so a holder that writes on is seen to.
		// What it is, and why, is still told (Options.OnError).
		if s.onError != nil {
			s.onError("read", fmt.Errorf("redisstore: read %s: value %.64q is %w: %v", s.key, v, lease.ErrForeign, err))
		}
		c, _ := str(1)
		n, _ := strconv.ParseInt(c, 10, 64)
		s.mu.Lock()
		s.foreign, s.hasForeign = v, true
		s.mu.Unlock()
		return lease.Record{Holder: lease.Unknown, Version: max(n, 0), Incarnation: lifeOf(vals[4])}, nil
	}
	rec.Incarnation = lifeOf(vals[4])
	return rec, nil
}

// Create writes a record for holder, epoch and version the next version,
// if there is none; if there is one it fails with an error for which
// errors.Is(err, fs.ErrExist). Where the key's last record went without a
// release (expired, evicted), the record returned names it
// (lease.Record.Vanished): its holder may still lead.
func (s *Store) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	nonce := lease.NonceFor(ttl)
	raw, err := createScript.Run(ctx, s.c, []string{s.key, s.counter, s.released, s.leaseKey, s.life}, holder, s.ttlMS(ttl), tail(ttl, nonce), s.channel, newLife()).Slice()
	var res [3]int64
	var goneNonce, life uint64
	if err == nil {
		err = createAnswer(raw, &res, &goneNonce, &life)
	}
	v := res[0]
	switch {
	case err != nil:
		return sent(holder, ttl, nonce), s.fail("create", err)
	case v == -1:
		// (MGET, which Read makes, gives none for such a key: taken for a
		// lost race, every create failed at once and for ever, 6,000 a
		// second from each process: a probe's HSET on the lease's key.)
		return lease.Record{}, fmt.Errorf("redisstore: create %s: %w", s.key, ErrWrongType)
	case v == -2:
		return lease.Record{}, fmt.Errorf("redisstore: create %s: %w", s.key, ErrNoVersionLeft)
	case v == 0:
		return lease.Record{}, fmt.Errorf("redisstore: create %s: %w", s.key, fs.ErrExist)
	}
	goneTTL, _ := lease.TTLFromMillis(res[2])
	return lease.Record{Holder: holder, Epoch: v, Version: v, TTL: lease.RaisedTTL(ttl, goneTTL), Nonce: nonce, Incarnation: life, Vanished: res[1], VanishedTTL: goneTTL, VanishedNonce: goneNonce}, nil
}

// sent is what a write whose outcome is not known returns: the record it
// sent, as lease.Store says.
func sent(holder int64, ttl time.Duration, nonce uint64) lease.Record {
	return lease.Record{Holder: holder, TTL: lease.StatedTTL(ttl), Nonce: nonce}
}

// write runs writeScript: rec replaces expected if expected is still the
// value. An epoch of 0 is an acquisition's: the new version.
func (s *Store) write(op string, expected lease.Record, holder, epoch int64, ttl time.Duration) (lease.Record, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	e := ""
	if epoch != 0 {
		e = strconv.FormatInt(epoch, 10)
	}
	want := encode(expected)
	if expected.Holder == lease.Unknown {
		// The value Read found that is no record (see Read).
		s.mu.Lock()
		foreign, ok := s.foreign, s.hasForeign
		s.mu.Unlock()
		if !ok {
			return lease.Record{}, fmt.Errorf("redisstore: %s %s: %w", op, s.key, lease.ErrConflict)
		}
		want = foreign
	}
	return s.writeValue(ctx, op, want, holder, e, epoch, ttl)
}

// writeValue runs writeScript: the record of holder (epoch e, "" for the
// new version's) replaces the value want, if want is still the value.
func (s *Store) writeValue(ctx context.Context, op, want string, holder int64, e string, epoch int64, ttl time.Duration) (lease.Record, error) {
	nonce := lease.NonceFor(ttl)
	raw, err := writeScript.Run(ctx, s.c, []string{s.key, s.counter, s.leaseKey, s.life}, want, holder, e, s.ttlMS(ttl), tail(ttl, nonce), s.channel, newLife()).Result()
	v, life := int64(0), uint64(0)
	if err == nil {
		v, life, err = writeAnswer(raw)
	}
	switch {
	case err != nil:
		return sent(holder, ttl, nonce), s.fail(op, err)
	case v == -2:
		return lease.Record{}, fmt.Errorf("redisstore: %s %s: %w", op, s.key, ErrNoVersionLeft)
	case v == 0:
		return lease.Record{}, fmt.Errorf("redisstore: %s %s: %w", op, s.key, lease.ErrConflict)
	}
	if epoch == 0 {
		epoch = v
	}
	return lease.Record{Holder: holder, Epoch: epoch, Version: v, TTL: lease.StatedTTL(ttl), Nonce: nonce, Incarnation: life}, nil
}

// Renew writes the next version of cur if cur is still the record, else
// fails with lease.ErrConflict (also when the server has expired it).
func (s *Store) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	return s.write("renew", cur, cur.Holder, cur.Epoch, ttl)
}

// Takeover writes a record for holder, with the next version as its epoch,
// if stale is still the record, else fails with lease.ErrConflict (also
// when the server has expired it: re-read, then Create).
func (s *Store) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	return s.write("takeover", stale, holder, 0, ttl)
}

// Release deletes cur if it is still the record, else fails with
// lease.ErrConflict. The version counter stays: the next record's version
// and epoch are higher.
func (s *Store) Release(cur lease.Record) error {
	ctx, cancel := s.ctx()
	defer cancel()
	n, err := releaseScript.Run(ctx, s.c, []string{s.key, s.released}, encode(cur), s.channel, cur.Version).Int64()
	switch {
	case err != nil:
		return s.fail("release", err)
	case n == 0:
		return fmt.Errorf("redisstore: release %s: %w", s.key, lease.ErrConflict)
	}
	return nil
}
