package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/etcdstore"
	"github.com/leaselab/leaselab/lease/redisstore"
	"github.com/leaselab/leaselab/lease/sqlstore"
)

// serverStores maps leaselab run's -store values for servers to the
// variant (the reference over that kind of store) that judges them.
var serverStores = map[string]string{"redis": "redis", "etcd": "etcd", "sqlite": "sql", "postgres": "sql"}

// openServerStore connects to the server store kind at dsn for the lease
// called name. Each call is bounded by timeout. (Errors that are none of
// the contract's outcomes reach the algorithm's Callbacks.OnError.)
func openServerStore(parent context.Context, kind, dsn, name string, timeout time.Duration, warn io.Writer) (lease.Store, error) {
	// The store's own OnError says what only the store knows: its change
	// notices failed (a subscription, watch or LISTEN the server refused)
	// and its watchers poll. Every other error reaches the algorithm,
	// which reports it.
	warnings := &repeatless{w: warn}
	onError := func(op string, err error) {
		// (A value no leaselab wrote is read as a record held by no one
		// known, which the algorithm waits out: only the store can say
		// what it is.)
		if warn != nil && (slices.Contains(feedOps, op) || errors.Is(err, lease.ErrForeign)) {
			warnings.say(fmt.Sprintf("leaselab: warning: %v\n", err))
		}
	}
	// Connecting (a TLS or SCRAM handshake, creating the table) gets more
	// than one call's timeout.
	wait := max(connectFor, timeout)
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	switch kind {
	case "redis":
		o := redisstore.Options{Addr: dsn, Name: name, Timeout: timeout, OnError: onError}
		if strings.Contains(dsn, "://") {
			u, err := url.Parse(dsn)
			// (A query or fragment was silently ignored, where an etcd
			// endpoint's is refused: a probe.)
			if err != nil || u.Scheme != "redis" || u.Host == "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
				return nil, fmt.Errorf("-dsn %q: want host:port or redis://[user:password@]host:port[/db], with no query", dsn)
			}
			o.Addr = u.Host
			o.Username = u.User.Username()
			o.Password, _ = u.User.Password()
			if db := strings.Trim(u.Path, "/"); db != "" {
				if o.DB, err = strconv.Atoi(db); err != nil {
					return nil, fmt.Errorf("-dsn %q: the database must be a number", dsn)
				}
			}
		}
		// go-redis logs its pool's dial failures itself, to standard
		// error; leaselab reports every store error (OnError, the exit
		// status), so each would be said twice.
		redis.SetLogger(quietRedis{})
		return untilReachable(ctx, wait, func() (lease.Store, error) { return redisstore.New(ctx, o) })
	case "etcd":
		eps := strings.Split(dsn, ",")
		for i, e := range eps {
			if !strings.Contains(e, "://") {
				eps[i] = "http://" + e
			}
			// An endpoint is a server's address: a path, query or user
			// in it was silently ignored (a probe:
			// http://127.0.0.1:12399/foo?x).
			if strings.HasPrefix(eps[i], "unix://") || strings.HasPrefix(eps[i], "unixs://") {
				continue // a socket's path, as the etcd client takes it (a review)
			}
			u, err := url.Parse(eps[i])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
				(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
				return nil, fmt.Errorf("-dsn %q: endpoint %q: want host:port, http(s)://host:port or unix(s)://PATH, with no path, query or user (the lease's key is -name)", dsn, e)
			}
		}
		return etcdstore.New(ctx, etcdstore.Options{Endpoints: eps, Name: name, Timeout: timeout, OnError: onError})
	case "sqlite":
		return sqlstore.Open(ctx, sqlstore.SQLite, dsn, sqlstore.Options{Name: name, Timeout: timeout, OnError: onError})
	case "postgres":
		return untilReachable(ctx, wait, func() (lease.Store, error) {
			return sqlstore.Open(ctx, sqlstore.Postgres, dsn, sqlstore.Options{Name: name, Timeout: timeout, OnError: onError})
		})
	}
	return nil, fmt.Errorf("no server store %q", kind)
}

// untilReachable calls open until it connects (within d, which ctx
// ends), until it fails for a reason other than a server not ready (none
// listening at the address: a dial refused or reset, as while a server
// starts or restarts; or one that says it is not ready yet: Redis's
// LOADING, PostgreSQL's 57P03), or until ctx ends; it then returns
// open's last answer. So a Redis or PostgreSQL that is down or starting
// at the start (a machine's boot, a restart with persistence to load) is
// waited for as an etcd is (its client retries until ctx ends), not
// refused at once.
func untilReachable(ctx context.Context, d time.Duration, open func() (lease.Store, error)) (lease.Store, error) {
	wait := 50 * time.Millisecond
	var notReady error // the last attempt's, when the server was not ready
	for {
		s, err := open()
		switch {
		case err == nil:
			return s, nil
		case notYet(err):
			notReady = err
		case notReady != nil && ctx.Err() != nil:
			// Out of time during an attempt: say what the attempts met.
			return nil, fmt.Errorf("%w (gave up after %v; the last attempt: %v)", notReady, d, err)
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (gave up after %v)", notReady, d)
		}
		wait = min(2*wait, time.Second)
	}
}

// notYet reports whether err says no server was ready at the address: a
// dial refused or reset (none listening yet; over a unix socket, one not
// made yet: ENOENT), Redis loading its data, or
// PostgreSQL starting (or in recovery). A connection reset after the dial
// (a TLS-only port, a proxy with no backend) is an answer, not refused
// for 5 s (a review).
func notYet(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && (errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOENT)) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(re.Error(), "LOADING ") {
		return true
	}
	return sqlstore.Starting(err)
}

// connectFor is how long run waits for its server at the start: the etcd
// client's own retries, Redis's and PostgreSQL's (untilReachable).
const connectFor = 5 * time.Second

// repeatless writes each line once in a row: a warning the same as the
// last one written is not written again. A value no leaselab wrote is
// read at every poll until it is taken over (a lease or more), and its
// warning, written at each, filled a log with one line every watch
// interval (a probe); a new value, or another warning between, is
// written again.
type repeatless struct {
	mu   sync.Mutex
	w    io.Writer
	last string
}

func (r *repeatless) say(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if line == r.last {
		return
	}
	r.last = line
	io.WriteString(r.w, line)
}

// feedOps are the operations of the stores' change notices, as their
// OnError names them.
var feedOps = []string{"subscribe", "watch", "listen", "notify"}

// quietRedis is a go-redis logger that says nothing.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
