package etcdstore

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

var leaseSeq atomic.Int64

func open(t *testing.T, srv *servertest.Server, name string, timeout time.Duration, onError func(string, error)) *Store {
	t.Helper()
	return openCluster(t, []*servertest.Server{srv}, name, timeout, onError)
}

// The contract suite against a real etcd. Its leases are whole seconds and
// expire within the lessor's check interval (500 ms) after their TTL.
func TestEtcdContract(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	storetest.Run(t, func(t *testing.T) storetest.Open {
		name := strings.ReplaceAll(t.Name(), "/", "-") + "-" + string(rune('a'+leaseSeq.Add(1)%26))
		return func(int64) lease.Store { return open(t, srv, name, storetest.ContractTimeout, nil) }
	}, storetest.Options{Expiry: time.Second, ExpirySlack: 900 * time.Millisecond})
}

// A rolling change of -lease on a real etcd: a watcher with a 0.9 s lease
// waits out the 2.7 s lease its leader's records state.
func TestMixedLeases(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	// Each write is a raft proposal with a WAL fsync: 500 ms calls.
	storetest.MixedLeases(t, func(int64) lease.Store { return open(t, srv, "mixed", 500*time.Millisecond, nil) })
}

// The key, its value and its etcd lease on the server, as the package
// comment describes them.
func TestKeyValueAndLease(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	s := open(t, srv, "jobs", time.Second, nil)
	ctx := context.Background()
	get := func() (string, int64, int64) {
		resp, err := s.c.Get(ctx, "leaselab/jobs")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get: %v, %v", resp, err)
		}
		kv := resp.Kvs[0]
		ttl, err := s.c.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			t.Fatal(err)
		}
		return string(kv.Value), kv.ModRevision, ttl.GrantedTTL
	}
	rec, err := s.Create(7, 2500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	v, rev, ttl := get()
	if v != "7 0 2500 "+strconv.FormatUint(rec.Nonce, 10) || rec.Nonce == 0 || rev != rec.Version || rec.Epoch != rec.Version || ttl != 3 {
		t.Errorf("after Create %+v: value %q, revision %d, TTL %d s; want \"7 0 2500 NONCE\", the record's version, 3 s (rounded up)", rec, v, rev, ttl)
	}
	old := rec
	oldLease, _ := s.c.Get(ctx, "leaselab/jobs")
	if rec, err = s.Renew(rec, 2500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	v, rev, _ = get()
	if v != "7 "+strconv.FormatInt(old.Epoch, 10)+" 2500 "+strconv.FormatUint(rec.Nonce, 10) || rev != rec.Version || rec.Epoch != old.Epoch {
		t.Errorf("after Renew %+v: value %q, revision %d", rec, v, rev)
	}
	// The replaced value's etcd lease is revoked.
	l, err := s.c.TimeToLive(ctx, clientv3.LeaseID(oldLease.Kvs[0].Lease))
	if err != nil || l.TTL != -1 {
		t.Errorf("the first write's lease: %+v, %v; want revoked (TTL -1)", l, err)
	}
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	// A value that is not a record is held by no one known.
	s.c.Put(ctx, "leaselab/jobs", "garbage")
	if rec, err := s.Read(); err != nil || rec.Holder != lease.Unknown {
		t.Errorf("Read of garbage = %+v, %v; want a record held by lease.Unknown", rec, err)
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		v    string
		rev  int64
		want lease.Record
		ok   bool
	}{
		{"7 0", 5, lease.Record{Holder: 7, Epoch: 5, Version: 5}, true}, // an earlier leaselab's: no lease
		{"7 3", 5, lease.Record{Holder: 7, Epoch: 3, Version: 5}, true},
		{"7 0 9000", 5, lease.Record{Holder: 7, Epoch: 5, Version: 5, TTL: 9 * time.Second}, true},
		{"7 3 1", 5, lease.Record{Holder: 7, Epoch: 3, Version: 5, TTL: time.Millisecond}, true},
		{"7 3 86400000", 5, lease.Record{Holder: 7, Epoch: 3, Version: 5, TTL: 24 * time.Hour}, true},
		{"7 6", 5, lease.Record{}, false}, // an epoch after its own write
		{"7 6 9000", 5, lease.Record{}, false},
		{"7", 5, lease.Record{}, false},
		{"-7 0", 5, lease.Record{}, false},
		{"07 0", 5, lease.Record{}, false},
		{"7  0", 5, lease.Record{}, false},
		{"", 5, lease.Record{}, false},
		{"7 0 0", 5, lease.Record{}, false},
		{"7 0 -9000", 5, lease.Record{}, false},
		{"7 0 86400001", 5, lease.Record{}, false},
		{"7 0 09000", 5, lease.Record{}, false},
		{"7 0 9000 1", 5, lease.Record{Holder: 7, Epoch: 5, Version: 5, TTL: 9 * time.Second, Nonce: 1}, true},
		{"7 3 9000 9223372036854775807", 5, lease.Record{Holder: 7, Epoch: 3, Version: 5, TTL: 9 * time.Second, Nonce: 1<<63 - 1}, true},
		{"7 0 9000 0", 5, lease.Record{}, false},
		{"7 0 9000 01", 5, lease.Record{}, false},
		{"7 0 9000 -1", 5, lease.Record{}, false},
		{"7 0 9000 9223372036854775808", 5, lease.Record{}, false},
		{"7 0 9000 1 1", 5, lease.Record{}, false},
		{"7 0 9000 ", 5, lease.Record{}, false},
		{"7 0 ", 5, lease.Record{}, false},
		{"7 0 9e3", 5, lease.Record{}, false},
	} {
		got, err := decode([]byte(c.v), c.rev)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("decode(%q, %d) = %+v, %v; want %+v, ok %v", c.v, c.rev, got, err, c.want, c.ok)
		}
	}
	for _, r := range []lease.Record{
		{Holder: 7, Epoch: 5, Version: 5}, {Holder: 7, Epoch: 3, Version: 9},
		{Holder: 7, Epoch: 5, Version: 5, TTL: 27 * time.Second}, {Holder: 7, Epoch: 3, Version: 9, TTL: 9 * time.Second},
		{Holder: 7, Epoch: 3, Version: 9, TTL: 9 * time.Second, Nonce: lease.NewNonce()},
	} {
		if got, err := decode([]byte(value(r)), r.Version); err != nil || got != r {
			t.Errorf("decode(value(%+v)) = %+v, %v", r, got, err)
		}
	}
}

// The value keeps the writer's lease in whole ms, rounded up; another
// client reads it back, and the record each write returns is the one
// stored (a compare-and-set on it matches).
func TestValueStatesLease(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	a, b := open(t, srv, "jobs", time.Second, nil), open(t, srv, "jobs", time.Second, nil)
	ctx := context.Background()
	value := func() string {
		t.Helper()
		resp, err := a.c.Get(ctx, "leaselab/jobs")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get: %v, %v", resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	r1, err := a.Create(7, 27*time.Second)
	if err != nil || r1.TTL != 27*time.Second || r1.Nonce == 0 {
		t.Fatalf("Create with a 27 s lease = %+v, %v", r1, err)
	}
	if v, want := value(), "7 0 27000 "+strconv.FormatUint(r1.Nonce, 10); v != want {
		t.Errorf("value %q, want %q", v, want)
	}
	if got, err := b.Read(); err != nil || got != r1 {
		t.Errorf("another client reads %+v, %v; want %+v", got, err, r1)
	}
	r2, err := a.Renew(r1, 9*time.Second)
	if err != nil || r2.TTL != 9*time.Second || r2.Nonce == 0 || r2.Nonce == r1.Nonce {
		t.Fatalf("Renew with a 9 s lease = %+v, %v (after %+v: every write has a nonce of its own)", r2, err, r1)
	}
	if v, want := value(), "7 "+strconv.FormatInt(r1.Epoch, 10)+" 9000 "+strconv.FormatUint(r2.Nonce, 10); v != want {
		t.Errorf("value %q, want %q", v, want)
	}
	if got, err := b.Read(); err != nil || got != r2 {
		t.Errorf("after the renewal another client reads %+v, %v; want %+v", got, err, r2)
	}
	r3, err := b.Takeover(r2, 8, 2700*time.Millisecond+time.Microsecond)
	if err != nil || r3.TTL != 2701*time.Millisecond || r3.Nonce == 0 || r3.Nonce == r2.Nonce {
		t.Fatalf("Takeover with a 2.700001 s lease = %+v, %v; want it rounded up to 2.701 s, with a nonce of its own", r3, err)
	}
	if v, want := value(), "8 0 2701 "+strconv.FormatUint(r3.Nonce, 10); v != want {
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

// A value an earlier leaselab wrote ("HOLDER EPOCH", no lease) reads with
// TTL 0 (the watcher waits its own lease), and a compare-and-set on it
// matches: it is taken over, renewed and released as any other.
func TestOldValue(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	a, b := open(t, srv, "jobs", time.Second, nil), open(t, srv, "jobs", time.Second, nil)
	ctx := context.Background()
	put := func(val string) lease.Record {
		t.Helper()
		resp, err := a.c.Put(ctx, "leaselab/jobs", val)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Read()
		if err != nil || got.TTL != 0 || got.Version != resp.Header.Revision {
			t.Fatalf("Read of the old value %q = %+v, %v; want version %d, TTL 0", val, got, err, resp.Header.Revision)
		}
		return got
	}
	rec := put("5 0")
	if rec != (lease.Record{Holder: 5, Epoch: rec.Version, Version: rec.Version}) {
		t.Errorf("Read of \"5 0\" = %+v", rec)
	}
	r, err := b.Takeover(rec, 8, 9*time.Second)
	if err != nil || r.Holder != 8 || r.TTL != 9*time.Second || r.Epoch != r.Version {
		t.Fatalf("Takeover of the old value = %+v, %v", r, err)
	}
	if got, err := a.Read(); err != nil || got != r {
		t.Errorf("after the takeover: Read = %+v, %v; want %+v", got, err, r)
	}
	// An old renewal: its epoch written out. (The takeover put the
	// incarnation beside it, which a read returns with the old value.)
	rec = put("5 " + strconv.FormatInt(r.Epoch, 10))
	if rec != (lease.Record{Holder: 5, Epoch: r.Epoch, Version: rec.Version, Incarnation: r.Incarnation}) {
		t.Errorf("Read of an old renewal = %+v", rec)
	}
	if r, err = a.Renew(rec, 9*time.Second); err != nil || r.TTL != 9*time.Second || r.Epoch != rec.Epoch {
		t.Fatalf("Renew of the old value = %+v, %v", r, err)
	}
	rec = put("5 0")
	if err := a.Release(rec); err != nil {
		t.Errorf("Release of the old value: %v", err)
	}
}

// A value that is not one a writer wrote is held by no one known
// (lease.Unknown), at its revision, as a file store's garbage version is,
// and told to OnError with why: among them a lease of 0 ms, a negative
// one, one over a day, a nonce of 0, and a fifth field. A takeover
// replaces it, if it is still the value; one put since the read is a
// conflict. (As a read error, nobody ever led over it: a probe.)
func TestMalformedValue(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	var told []error
	s := open(t, srv, "jobs", time.Second, func(_ string, err error) { told = append(told, err) })
	ctx := context.Background()
	for v, why := range map[string]string{
		"7 0 0":        "a lease of 0 ms",
		"7 0 -9000":    "field 3",
		"7 0 86400001": "a lease of 86400001 ms",
		"7 0 9000 0":   "nonce 0",
		"7 0 9000 1 1": "5 fields",
		"7 0 9000.5":   "field 3",
		"7":            "1 fields",
		"garbage":      "1 fields",
	} {
		if _, err := s.c.Put(ctx, "leaselab/jobs", v); err != nil {
			t.Fatal(err)
		}
		told = nil
		rec, err := s.Read()
		if err != nil || rec.Holder != lease.Unknown || rec.Version == 0 {
			t.Errorf("Read of %q = %+v, %v; want a record held by lease.Unknown at its revision", v, rec, err)
		}
		if len(told) != 1 || !strings.Contains(told[0].Error(), "not a lease record") || !strings.Contains(told[0].Error(), why) {
			t.Errorf("Read of %q told OnError %v; want one error saying %q", v, told, why)
		}
	}
	rec, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Put(ctx, "leaselab/jobs", "garbage"); err != nil { // the same value, put again
		t.Fatal(err)
	}
	if _, err := s.Takeover(rec, 42, 9*time.Second); !errors.Is(err, lease.ErrConflict) {
		t.Errorf("takeover of a value put since the read: %v, want a conflict", err)
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

// Nothing listens: New fails within its timeout.
func TestUnreachable(t *testing.T) {
	addr := servertest.Unreachable(t)
	start := time.Now()
	s, err := New(context.Background(), Options{Endpoints: []string{"http://" + addr}, Name: "x", Timeout: 300 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("New succeeded with nothing listening")
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the endpoint", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("New took %v to fail", d)
	}
	t.Logf("unreachable: %v", err)
	// It says why, as far as a connection can tell (the client keeps its
	// dial errors: a probe read only "context deadline exceeded").
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q does not say the connection was refused", err)
	}
	// The error says how long New really waited: a setup deadline on ctx
	// (here 1 s), not the 300 ms call timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s, err = New(ctx, Options{Endpoints: []string{"http://" + addr}, Name: "x", Timeout: 300 * time.Millisecond}); err == nil {
		s.Close()
		t.Fatal("New succeeded with nothing listening")
	}
	if !regexp.MustCompile(`no answer within 1(\.\d)?s`).MatchString(err.Error()) {
		t.Errorf("error %q: want it to say the 1 s it waited", err)
	}
}

// With auth enabled, a wrong password fails New.
func TestWrongPassword(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "right"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("enabling auth: %v", err)
		}
	}
	s, err := New(ctx, Options{Endpoints: []string{srv.Endpoint()}, Username: "root", Password: "right", Name: "x"})
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	s.Close()
	s, err = New(ctx, Options{Endpoints: []string{srv.Endpoint()}, Username: "root", Password: "wrong", Name: "x"})
	if err == nil {
		s.Close()
		t.Fatal("New with a wrong password succeeded")
	}
	if !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("error %q does not say so", err)
	}
	t.Logf("wrong password: %v", err)
}

// The leader's etcd is SIGKILLed while it holds the lease: it stops
// acting at its local deadline and steps down by then plus one call's
// timeout, and the store reports the failed calls.
func TestLeaderLosesServer(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	var log storetest.ErrorLog
	// Each write is a raft proposal with a WAL fsync: on a loaded machine
	// 100 ms calls fail while the server is still there.
	const timeout = 500 * time.Millisecond
	storetest.ServerLoss{
		Store:     open(t, srv, "leader", timeout, log.Add),
		Config:    lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: 500 * time.Millisecond, WatchInterval: 500 * time.Millisecond},
		Kill:      srv.Kill,
		OpTimeout: timeout,
		Errors:    log.Errors,
	}.Run(t)
}

// decode accepts only what value writes: every value it accepts is, byte
// for byte, the value of the record it returns, or (for a renewal whose
// epoch is its own revision, which value writes as 0) that epoch written
// out.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"7 0", "7 3", "7 0 9000", "7 3 27001", "7 0 0", "7 0 -1", "7 0 86400001", "7 0 9000 1", "", "7 5 1"} {
		f.Add(s, int64(5))
	}
	f.Fuzz(func(t *testing.T, v string, rev int64) {
		rec, err := decode([]byte(v), rev)
		if err != nil {
			return
		}
		got := value(rec)
		if got != v && format(rec.Holder, rec.Epoch, rec.TTL, rec.Nonce) != v {
			t.Fatalf("decode(%q, %d) = %+v, whose value is %q", v, rev, rec, got)
		}
		if rec.TTL < 0 || rec.TTL > lease.MaxTTLMillis*time.Millisecond || rec.TTL%time.Millisecond != 0 {
			t.Fatalf("decode(%q): TTL %v", v, rec.TTL)
		}
	})
}

// A watch started while etcd is down is reported once and started in
// the background when etcd is back: a notice, then every change.
func TestLateFeed(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	var log storetest.ErrorLog
	storetest.LateFeed{
		Feed:   open(t, srv, "late", time.Second, log.Add),
		Writer: open(t, srv, "late", time.Second, nil),
		Down:   srv.Kill,
		Up:     func() { srv.MustRestart(t) },
		Errors: log.Errors,
	}.Run(t)
}

// A watcher's read grants a spare etcd lease in the background, and its
// next create puts the record with it (one proposal, not a grant and a
// transaction) while what is left of it covers the record's TTL; a create
// that finds the key held keeps it; a spare too old for the TTL is not
// used (the create grants its own), so that a record never lives on the
// server for less than its TTL.
func TestSpareLease(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	w := open(t, srv, "spare", time.Second, nil)
	s := open(t, srv, "spare", time.Second, nil)
	ctx := context.Background()
	const ttl = 2500 * time.Millisecond // 3 s on the server
	keyLease := func() (clientv3.LeaseID, int64, int64) {
		t.Helper()
		resp, err := s.c.Get(ctx, "leaselab/spare")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get: %v, %v", resp, err)
		}
		id := clientv3.LeaseID(resp.Kvs[0].Lease)
		l, err := s.c.TimeToLive(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return id, l.TTL, l.GrantedTTL
	}
	spare := func() spareLease {
		s.spareMu.Lock()
		defer s.spareMu.Unlock()
		return s.spare
	}
	rec, err := w.Create(1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for spare().id == clientv3.NoLease {
		if time.Now().After(deadline) {
			t.Fatal("no spare lease granted within 5 s of a read")
		}
		time.Sleep(time.Millisecond)
	}
	sp := spare()
	if sp.ttl != 6 {
		t.Errorf("spare TTL %d s, want 6 (twice the record's 3)", sp.ttl)
	}
	if _, err := s.Create(2, ttl); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a held key: %v, want ErrExist", err)
	}
	if got := spare(); got.id != sp.id {
		t.Errorf("after a create that found the key held the spare is %v, want %v kept", got.id, sp.id)
	}
	if err := w.Release(rec); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Create(2, ttl)
	if err != nil {
		t.Fatal(err)
	}
	id, left, _ := keyLease()
	if id != sp.id || left < 3 {
		t.Errorf("created with lease %v (%d s left), want the spare %v with at least 3 s left", id, left, sp.id)
	}
	if got := spare(); got.id != clientv3.NoLease {
		t.Errorf("the spare %v is still kept after the create used it", got.id)
	}
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	// A spare granted 4 s ago for 6 s has 2 s left: too little for 3.
	old, err := s.c.Grant(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	s.spareMu.Lock()
	s.spare = spareLease{id: old.ID, ttl: 6, sent: time.Now().Add(-4 * time.Second)}
	s.spareMu.Unlock()
	if _, err := s.Create(3, ttl); err != nil {
		t.Fatal(err)
	}
	if id, left, granted := keyLease(); id == old.ID || granted != 3 || left < 2 {
		t.Errorf("created with lease %v (granted %d s, %d s left), want a fresh one of 3 s, not the stale spare %v", id, granted, left, old.ID)
	}
	rec, err = s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	// A spare past the first half of its use is renewed by a keepalive,
	// not replaced: the same lease, counted again from the keepalive.
	s.spareMu.Lock()
	s.spare = spareLease{id: old.ID, ttl: 6, sent: time.Now().Add(-2 * time.Second)}
	s.spareMu.Unlock()
	if rec, err = w.Create(1, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Since(spare().sent) > time.Second; {
		if time.Now().After(deadline) {
			t.Fatal("the spare was not renewed within 5 s of a read")
		}
		time.Sleep(time.Millisecond)
	}
	if got := spare(); got.id != old.ID {
		t.Errorf("the spare is %v after its renewal, want %v renewed", got.id, old.ID)
	}
	// A spare gone from the server (revoked by someone else): the create
	// grants a lease and tries again, and succeeds.
	if _, err := s.c.Revoke(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(4, ttl); err != nil {
		t.Fatalf("Create with a spare revoked behind its back: %v, want a fresh lease and success", err)
	}
	if id, _, granted := keyLease(); id == old.ID || granted != 3 {
		t.Errorf("created with lease %v of %d s, want a fresh one of 3 s", id, granted)
	}
	// Close revokes the spare it holds.
	if _, err := s.Read(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); spare().id == clientv3.NoLease; {
		if time.Now().After(deadline) {
			t.Fatal("no spare lease granted within 5 s of a read")
		}
		time.Sleep(time.Millisecond)
	}
	last := spare().id
	s.Close()
	if l, err := w.c.TimeToLive(ctx, last); err != nil || l.TTL != -1 {
		t.Errorf("the spare after Close: %+v, %v; want revoked (TTL -1)", l, err)
	}
}

// A renewal whose reply never comes (the server hangs past its timeout)
// returns what it sent (storetest.LostReply). (Its lease grant, first,
// is what times out: nothing was sent, and no nonce is owed.)
func TestLostReply(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	storetest.LostReply{Store: open(t, srv, "lost", 500*time.Millisecond, nil), Pause: srv.Pause, Resume: srv.Resume}.Run(t)
}

// A create whose reply never comes, sent with a spare lease (no grant
// first: the transaction itself is what the hung server holds), returns
// the record it sent, nonce included, and a record it made carries that
// nonce (lease.Store; TestLostReply's renewal times out in its grant).
func TestLostCreateReply(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	const ttl = 30 * time.Second
	a := open(t, srv, "lost-create", 500*time.Millisecond, nil)
	b := open(t, srv, "lost-create", 500*time.Millisecond, nil)
	rec, err := a.Create(7, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(); err != nil { // readies b's spare
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b.spareMu.Lock()
		ready := b.spare.usable(b.ttlSeconds(ttl), time.Now())
		b.spareMu.Unlock()
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no spare lease within 10 s")
		}
	}
	if err := a.Release(rec); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	sent, err := b.Create(8, ttl)
	srv.Resume()
	if err == nil || errors.Is(err, fs.ErrExist) {
		t.Fatalf("create on a hung server: %+v, %v", sent, err)
	}
	if sent.Nonce == 0 || sent.Holder != 8 || sent.Version != 0 || sent.Epoch != 0 {
		t.Errorf("create failed (%v) and returned %+v: not what it sent", err, sent)
	}
	time.Sleep(300 * time.Millisecond)
	var cur lease.Record
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if cur, err = a.Read(); err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read worked for 20 s after the server was resumed: %v", err)
		}
	}
	applied := err == nil
	if applied && (cur.Holder != 8 || cur.Nonce != sent.Nonce) {
		t.Errorf("the lost create made %+v, but returned nonce %d", cur, sent.Nonce)
	}
	t.Logf("create on a hung server: sent nonce %d; it took effect: %v", sent.Nonce, applied)
}

// A malformed endpoint is refused at once, saying which; the client took
// it and waited out the timeout ("no answer").
func TestBadEndpoint(t *testing.T) {
	for _, ep := range []string{"http://[::1", "ftp://h:1", "http://"} {
		start := time.Now()
		_, err := New(context.Background(), Options{Endpoints: []string{ep}, Name: "x", Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "endpoint") || time.Since(start) > time.Second {
			t.Errorf("%q: %v after %v, want a refusal naming the endpoint at once", ep, err, time.Since(start))
		}
	}
}
