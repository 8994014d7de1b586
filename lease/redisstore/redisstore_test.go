package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"sync"
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

// A rolling change of -lease on a real redis-server: a watcher with a
// 0.9 s lease waits out the 2.7 s lease its leader's records state.
func TestMixedLeases(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	storetest.MixedLeases(t, newLease(srv, 300*time.Millisecond)(t))
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
	if v, err := s.c.Get(ctx, "leaselab:{jobs}").Result(); err != nil || v != fmt.Sprintf("7 1 1 9000 %d", rec.Nonce) {
		t.Errorf("record value %q, %v; want \"7 1 1 9000 %d\"", v, err, rec.Nonce)
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
	// A value that is not a record is held by no one known.
	s.c.Set(ctx, "leaselab:{jobs}", "garbage", 0)
	if rec, err := s.Read(); err != nil || rec.Holder != lease.Unknown {
		t.Errorf("Read of garbage = %+v, %v; want a record held by lease.Unknown", rec, err)
	}
	// A key of another type reads as none (MGET), and a create says why
	// it cannot write: not a lost race, which is retried at once.
	s.c.Del(ctx, "leaselab:{jobs}")
	s.c.HSet(ctx, "leaselab:{jobs}", "x", "y")
	if _, err := s.Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a hash: %v, want none", err)
	}
	if rec, err := s.Create(7, 9*time.Second); !errors.Is(err, ErrWrongType) || errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over a hash = %+v, %v; want ErrWrongType", rec, err)
	}
	if typ, _ := s.c.Type(ctx, "leaselab:{jobs}").Result(); typ != "hash" {
		t.Errorf("the key is a %s after the create; want the hash left alone", typ)
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		v    string
		want lease.Record
		ok   bool
	}{
		{"1 2 3", lease.Record{Holder: 1, Epoch: 2, Version: 3}, true}, // an earlier leaselab's: no lease
		{"0 5 9", lease.Record{Epoch: 5, Version: 9}, true},
		{"1 2 2", lease.Record{Holder: 1, Epoch: 2, Version: 2}, true},
		{"1 2 3 9000", lease.Record{Holder: 1, Epoch: 2, Version: 3, TTL: 9 * time.Second}, true},
		{"1 2 3 1", lease.Record{Holder: 1, Epoch: 2, Version: 3, TTL: time.Millisecond}, true},
		{"1 2 3 86400000", lease.Record{Holder: 1, Epoch: 2, Version: 3, TTL: 24 * time.Hour}, true},
		{"", lease.Record{}, false}, {"1 2", lease.Record{}, false}, {"1 0 3", lease.Record{}, false},
		{"1 3 2", lease.Record{}, false}, {"-1 2 3", lease.Record{}, false}, {"01 2 3", lease.Record{}, false},
		{"1  2 3", lease.Record{}, false}, {"1 2 3\n", lease.Record{}, false}, {"+1 2 3", lease.Record{}, false},
		{"a b c", lease.Record{}, false},
		{"1 2 3 0", lease.Record{}, false}, {"1 2 3 -9000", lease.Record{}, false}, {"1 2 3 86400001", lease.Record{}, false},
		{"1 2 3 09000", lease.Record{}, false}, {"1 2 3 ", lease.Record{}, false},
		{"1 2 3 9000 1", lease.Record{Holder: 1, Epoch: 2, Version: 3, TTL: 9 * time.Second, Nonce: 1}, true},
		{"1 2 3 9000 9223372036854775807", lease.Record{Holder: 1, Epoch: 2, Version: 3, TTL: 9 * time.Second, Nonce: 1<<63 - 1}, true},
		{"1 2 3 9000 0", lease.Record{}, false}, {"1 2 3 9000 01", lease.Record{}, false}, {"1 2 3 9000 -1", lease.Record{}, false},
		{"1 2 3 9000 9223372036854775808", lease.Record{}, false}, {"1 2 3 9000 1 1", lease.Record{}, false}, {"1 2 3 9000 ", lease.Record{}, false},
		{"1 2 3 9e3", lease.Record{}, false}, {"1 2 3 +9000", lease.Record{}, false},
	} {
		got, err := decode(c.v)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("decode(%q) = %+v, %v; want %+v, ok %v", c.v, got, err, c.want, c.ok)
		}
	}
	for _, r := range []lease.Record{{Holder: 7, Epoch: 5, Version: 9}, {Holder: 7, Epoch: 5, Version: 9, TTL: 27 * time.Second}, {Holder: 7, Epoch: 5, Version: 9, TTL: 27 * time.Second, Nonce: lease.NewNonce()}} {
		if got, err := decode(encode(r)); err != nil || got != r {
			t.Errorf("decode(encode(%+v)) = %+v, %v", r, got, err)
		}
	}
}

// The value keeps the writer's lease in whole ms, rounded up; another
// client reads it back, and the record each write returns is the one
// stored (a compare-and-set on it matches).
func TestValueStatesLease(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	a, b := open(t, srv, "jobs", time.Second, nil), open(t, srv, "jobs", time.Second, nil)
	ctx := context.Background()
	value := func() string {
		t.Helper()
		v, err := a.c.Get(ctx, "leaselab:{jobs}").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r1, err := a.Create(7, 27*time.Second)
	if err != nil || r1.Nonce == 0 || r1.Incarnation == 0 || r1 != (lease.Record{Holder: 7, Epoch: 1, Version: 1, TTL: 27 * time.Second, Nonce: r1.Nonce, Incarnation: r1.Incarnation}) {
		t.Fatalf("Create with a 27 s lease = %+v, %v", r1, err)
	}
	if v, want := value(), fmt.Sprintf("7 1 1 27000 %d", r1.Nonce); v != want {
		t.Errorf("value %q, want %q", v, want)
	}
	if got, err := b.Read(); err != nil || got != r1 {
		t.Errorf("another client reads %+v, %v; want %+v", got, err, r1)
	}
	r2, err := a.Renew(r1, 9*time.Second)
	if err != nil || r2.TTL != 9*time.Second || r2.Nonce == 0 || r2.Nonce == r1.Nonce {
		t.Fatalf("Renew with a 9 s lease = %+v, %v (after %+v: every write has a nonce of its own)", r2, err, r1)
	}
	if got, err := b.Read(); err != nil || got != r2 {
		t.Errorf("after the renewal another client reads %+v, %v; want %+v", got, err, r2)
	}
	r3, err := b.Takeover(r2, 8, 2700*time.Millisecond+time.Microsecond)
	if err != nil || r3 != (lease.Record{Holder: 8, Epoch: 3, Version: 3, TTL: 2701 * time.Millisecond, Nonce: r3.Nonce, Incarnation: r1.Incarnation}) || r3.Nonce == 0 || r3.Nonce == r2.Nonce {
		t.Fatalf("Takeover with a 2.700001 s lease = %+v, %v; want it rounded up to 2.701 s, with a nonce of its own", r3, err)
	}
	if v, want := value(), fmt.Sprintf("8 3 3 2701 %d", r3.Nonce); v != want {
		t.Errorf("value %q, want %q", v, want)
	}
	// The nonce is compared: the record with another nonce is another.
	other := r3
	other.Nonce++
	if _, err := a.Renew(other, time.Second); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("Renew of the record with another nonce: %v, want a conflict", err)
	}
	if got, err := a.Read(); err != nil || got != r3 {
		t.Errorf("after the takeover another client reads %+v, %v; want %+v", got, err, r3)
	}
	if err := b.Release(r3); err != nil {
		t.Errorf("Release(%+v): %v", r3, err)
	}
}

// A value an earlier leaselab wrote ("HOLDER EPOCH VERSION", no lease)
// reads with TTL 0 (the watcher waits its own lease), and a compare-and-set
// on it matches: it is taken over, renewed and released as any other.
func TestOldValue(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	a, b := open(t, srv, "jobs", time.Second, nil), open(t, srv, "jobs", time.Second, nil)
	ctx := context.Background()
	old := func(holder int64) lease.Record {
		t.Helper()
		v, err := a.c.Incr(ctx, "leaselab:{jobs}:version").Result()
		if err != nil {
			t.Fatal(err)
		}
		val := strconv.FormatInt(holder, 10) + " " + strconv.FormatInt(v, 10) + " " + strconv.FormatInt(v, 10)
		if err := a.c.Set(ctx, "leaselab:{jobs}", val, 9*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := b.Read()
		// (No incarnation until the first write of this leaselab, then
		// that write's.)
		want := lease.Record{Holder: holder, Epoch: v, Version: v, Incarnation: got.Incarnation}
		if err != nil || got != want {
			t.Fatalf("Read of the old value %q = %+v, %v; want %+v (TTL 0)", val, got, err, want)
		}
		return got
	}
	rec := old(5)
	r, err := b.Takeover(rec, 8, 9*time.Second)
	if err != nil || r != (lease.Record{Holder: 8, Epoch: 2, Version: 2, TTL: 9 * time.Second, Nonce: r.Nonce, Incarnation: r.Incarnation}) || r.Nonce == 0 || r.Incarnation == 0 {
		t.Fatalf("Takeover of the old value = %+v, %v", r, err)
	}
	if got, err := a.Read(); err != nil || got != r {
		t.Errorf("after the takeover: Read = %+v, %v; want %+v", got, err, r)
	}
	rec = old(5)
	if r, err = a.Renew(rec, 9*time.Second); err != nil || r.TTL != 9*time.Second || r.Epoch != rec.Epoch {
		t.Fatalf("Renew of the old value = %+v, %v", r, err)
	}
	rec = old(5)
	if err := a.Release(rec); err != nil {
		t.Errorf("Release of the old value: %v", err)
	}
}

// A value that is not one a writer wrote is held by no one known
// (lease.Unknown), at the counter's version, as a file store's garbage
// version is, and told to OnError with why: among them a lease of 0 ms, a
// negative one, one over a day, a nonce of 0, and a sixth field. A
// takeover replaces it, if it is still the value; one changed since the
// read is a conflict. (As a read error, nobody ever led over it: a probe
// SET one with no TTL.)
func TestMalformedValue(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	var told []error
	s := open(t, srv, "jobs", time.Second, func(_ string, err error) { told = append(told, err) })
	ctx := context.Background()
	for v, why := range map[string]string{
		"7 1 1 0":        "a lease of 0 ms",
		"7 1 1 -9000":    "field 4",
		"7 1 1 86400001": "a lease of 86400001 ms",
		"7 1 1 9000 0":   "nonce 0",
		"7 1 1 9000 1 1": "6 fields",
		"7 1 1 9000.5":   "field 4",
		"7 1":            "2 fields",
		"garbage":        "1 fields",
	} {
		if err := s.c.Set(ctx, "leaselab:{jobs}", v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		told = nil
		rec, err := s.Read()
		if err != nil || rec.Holder != lease.Unknown {
			t.Errorf("Read of %q = %+v, %v; want a record held by lease.Unknown", v, rec, err)
		}
		if len(told) != 1 || !strings.Contains(told[0].Error(), "not a lease record") || !strings.Contains(told[0].Error(), why) {
			t.Errorf("Read of %q told OnError %v; want one error saying %q", v, told, why)
		}
	}
	rec, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.c.Set(ctx, "leaselab:{jobs}", "other garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Takeover(rec, 42, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("takeover of a value changed since the read: %v, want a conflict", err)
	}
	if rec, err = s.Read(); err != nil {
		t.Fatal(err)
	}
	nrec, err := s.Takeover(rec, 42, 9*time.Second)
	if err != nil || nrec.Holder != 42 {
		t.Fatalf("takeover of the value read: %+v, %v; want a record of 42", nrec, err)
	}
	if got, err := s.Read(); err != nil || got != nrec {
		t.Errorf("after the takeover Read = %+v, %v; want %+v", got, err, nrec)
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

// decode accepts only what encode writes: every value it accepts is the
// encoding of the record it returns, byte for byte.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"1 2 3", "1 2 3 9000", "1 2 3 0", "1 2 3 -1", "1 2 3 86400001", "1 2 3 9000 1", "", "7 1 1 27001", "1 2 3 01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		rec, err := decode(v)
		if err != nil {
			return
		}
		if got := encode(rec); got != v {
			t.Fatalf("decode(%q) = %+v, which encodes as %q", v, rec, got)
		}
		if rec.TTL < 0 || rec.TTL > lease.MaxTTLMillis*time.Millisecond || rec.TTL%time.Millisecond != 0 {
			t.Fatalf("decode(%q): TTL %v", v, rec.TTL)
		}
	})
}

// A server whose first answer comes later than one call's timeout (a
// loaded machine) is asked again within New's context: New succeeds. One
// that never answers fails when that context ends, saying it timed out.
func TestSlowFirstAnswer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	answer := false // the first connection is never answered
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			ok := answer
			answer = true
			mu.Unlock()
			go func() {
				defer c.Close()
				buf := make([]byte, 512)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					switch req := strings.ToUpper(string(buf[:n])); {
					case !ok:
					case strings.Contains(req, "HELLO"): // as a Redis older than 6 answers
						c.Write([]byte("-ERR unknown command 'HELLO'\r\n"))
					case strings.Contains(req, "PING"):
						c.Write([]byte("+PONG\r\n"))
					}
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Addr: ln.Addr().String(), Name: "x", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("New gave up after one slow answer: %v", err)
	}
	s.Close()

	mu.Lock()
	answer = false
	mu.Unlock()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel's backlog) and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if s, err := New(ctx2, Options{Addr: silent.Addr().String(), Name: "x", Timeout: 50 * time.Millisecond}); err == nil {
		s.Close()
		t.Fatal("New succeeded against a server that never answers")
	} else if !isTimeout(err) {
		t.Errorf("error %q is not a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("New took %v to give up on a 300 ms context", d)
	}
}

// A redis-server that loses its data (FLUSHALL here; a restart without
// persistence in the probe that found it, 2026-12-05) just after the
// leader's renewal makes no second leader: the watcher, which polls
// sooner than the leader renews, finds no lease and creates one, but its
// version (the counter's, lost too) is below the one it saw, so it gives
// the record back and waits that lease out. Before, it led at once, while
// the leader led on until its next renewal failed.
func TestServerDataLossNoOverlap(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	cfg := lease.Config{LeaseDuration: 1500 * time.Millisecond, RenewInterval: 500 * time.Millisecond, WatchInterval: 50 * time.Millisecond}
	var mu sync.Mutex
	type term struct {
		id         int
		start, end time.Time // end zero: still leading
	}
	var terms []*term
	renewed := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stores := []*Store{open(t, srv, "loss", time.Second, nil), open(t, srv, "loss", time.Second, nil)}
	for i, s := range stores {
		c := cfg
		id := 101 + i
		c.Callbacks.OnStartedLeading = func(lctx context.Context) {
			tm := &term{id: id, start: time.Now()}
			mu.Lock()
			terms = append(terms, tm)
			mu.Unlock()
			go func() {
				<-lctx.Done()
				mu.Lock()
				tm.end = time.Now()
				mu.Unlock()
			}()
		}
		w := &renewSignal{ch: renewed}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lease.Run(ctx, s, c, lease.RunOptions{ID: id, Log: w}); err != nil {
				t.Error(err)
			}
		}()
		if i == 0 {
			// The first leads before the second starts.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				n := len(terms)
				mu.Unlock()
				if n > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no leader within 10 s")
				}
			}
		}
	}
	// Two renewals (the second process has seen the lease), then the loss,
	// right after the next.
	for range 3 {
		select {
		case <-renewed:
		case <-time.After(10 * time.Second):
			t.Fatal("no renewal within 10 s")
		}
	}
	if err := stores[0].c.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * cfg.LeaseDuration)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(terms) < 2 {
		t.Fatalf("%d terms: want a second after the loss", len(terms))
	}
	for i := 1; i < len(terms); i++ {
		prev, next := terms[i-1], terms[i]
		if prev.end.IsZero() || next.start.Before(prev.end) {
			t.Errorf("process %d led from %v while process %d's term, from %v, ended %v: two leaders", next.id, next.start.Format("15:04:05.000"), prev.id, prev.start.Format("15:04:05.000"), prev.end.Format("15:04:05.000"))
		}
	}
}

// renewSignal is a log that signals each "Lease renewed" line.
type renewSignal struct{ ch chan struct{} }

func (r *renewSignal) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "Lease renewed") {
		select {
		case r.ch <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// A renewal whose reply never comes (the server hangs past its timeout)
// returns the record it sent, whose nonce a record it made carries: the
// leader can tell its own lost renewal from another's record.
func TestLostReply(t *testing.T) {
	t.Parallel()
	srv := servertest.Redis(t, "")
	sent, _ := storetest.LostReply{Store: open(t, srv, "lost", 200*time.Millisecond, nil), Pause: srv.Pause, Resume: srv.Resume}.Run(t)
	if sent.Nonce == 0 {
		t.Errorf("the script was sent, but the renewal returned no nonce: %+v", sent)
	}
}
