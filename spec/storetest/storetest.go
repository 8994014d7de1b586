package storetest

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// Open returns a new client of one lease for holder: its own connection (or
// store value), as another process would have, to the same key, row or
// lock path as every other client Open returns.
type Open func(holder int64) lease.Store

// NewLease makes a fresh lease (a new key, row or path) for one subtest and
// returns how to open clients of it. Clients are closed by the caller's
// t.Cleanup, if they need closing.
type NewLease func(t *testing.T) Open

// Options describe the store under test.
type Options struct {
	// Expiry is the lease duration the Expiry subtest writes records with,
	// for a store whose server expires a record on its own (Redis PX, an
	// etcd lease, the SQL stores' expiry column). 0: the store has no
	// server-side expiry and Expiry is skipped.
	Expiry time.Duration
	// ExpirySlack is how much later than Expiry the record may still be
	// readable (etcd grants whole seconds, rounded up; a server checks
	// expiry lazily). 0 means 250 ms.
	ExpirySlack time.Duration
	// VersionOnlyCompare is set for a store whose compare-and-set compares
	// only the record's version, not its holder and epoch
	// (lease.VersionedFile links the next version's name whatever the
	// caller says the record holds). NonOwner then checks only records
	// the non-owner could have read, not made-up ones.
	VersionOnlyCompare bool
	// Contenders is the number of concurrent clients in ConcurrentCreate
	// (0: 8) and, halved, in Linearizable.
	Contenders int
	// HistoryOps is how many calls each client makes in Linearizable (0:
	// 60).
	HistoryOps int
	// NoLease is set for a store that keeps no writer's lease: its records
	// read with TTL 0 (lease.FlockRegister, whose one lock file has one
	// configuration). StatesLease then checks that its writes return TTL 0
	// too.
	NoLease bool
	// NoReleaseHint is set for a store that is a lease.ReleaseHint whose
	// notices do not say which announce a release (SQLite's, writes to
	// the database's files): its Released must never be true.
	NoReleaseHint bool
	// Skip names subtests to skip, with the reason.
	Skip map[string]string
}

func (o Options) contenders() int {
	if o.Contenders <= 0 {
		return 8
	}
	return o.Contenders
}

// LongTTL is the lease duration of every write outside Expiry: long enough
// that no record expires while a subtest runs.
const LongTTL = 5 * time.Minute

// Run runs the contract suite, one subtest per property, each on a fresh
// lease from newLease.
func Run(t *testing.T, newLease NewLease, opts Options) {
	sub := func(name string, f func(t *testing.T, open Open, opts Options)) {
		t.Run(name, func(t *testing.T) {
			if why, ok := opts.Skip[name]; ok {
				t.Skip(why)
			}
			f(t, newLease(t), opts)
		})
	}
	sub("Basics", testBasics)
	sub("ConcurrentCreate", testConcurrentCreate)
	sub("StaleCompareAndSet", testStale)
	sub("NonOwner", testNonOwner)
	sub("Epochs", testEpochs)
	sub("StatesLease", testStatesLease)
	sub("Notices", testNotices)
	sub("Expiry", testExpiry)
	sub("Linearizable", testLinearizable)
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
func isExist(err error) bool    { return errors.Is(err, fs.ErrExist) }
func isConflict(err error) bool { return errors.Is(err, lease.ErrConflict) }

// mustRead reads and fails the test unless the record is want.
func mustRead(t *testing.T, s lease.Store, want lease.Record, what string) {
	t.Helper()
	got, err := s.Read()
	if err != nil || got != want {
		t.Fatalf("%s: Read = %+v, %v; want %+v", what, got, err, want)
	}
}

// mustBeAbsent reads and fails the test unless there is no record.
func mustBeAbsent(t *testing.T, s lease.Store, what string) {
	t.Helper()
	if got, err := s.Read(); !isNotExist(err) {
		t.Fatalf("%s: Read = %+v, %v; want an error for which errors.Is(err, fs.ErrNotExist)", what, got, err)
	}
}

// checkAcquired checks a record an acquisition (Create or Takeover)
// returned: its holder, its epoch equal to its version, and its version
// above every earlier one.
func checkAcquired(t *testing.T, rec lease.Record, holder, after int64, what string) {
	t.Helper()
	if rec.Holder != holder || rec.Epoch != rec.Version || rec.Version <= after {
		t.Fatalf("%s returned %+v; want holder %d and epoch = version > %d", what, rec, holder, after)
	}
}

// checkRenewed checks the record Renew(cur) returned.
func checkRenewed(t *testing.T, rec, cur lease.Record, what string) {
	t.Helper()
	if rec.Holder != cur.Holder || rec.Epoch != cur.Epoch || rec.Version <= cur.Version {
		t.Fatalf("%s returned %+v; want holder %d, epoch %d and a version above %d", what, rec, cur.Holder, cur.Epoch, cur.Version)
	}
}

func testBasics(t *testing.T, open Open, _ Options) {
	a, b := open(1), open(2)
	mustBeAbsent(t, a, "a fresh lease")
	if _, err := a.Read(); errors.Is(err, lease.ErrVanished) || errors.Is(err, lease.ErrReleased) {
		t.Fatalf("Read of a fresh lease = %v; want none, neither vanished nor released", err)
	}
	r1, err := a.Create(1, LongTTL)
	if err != nil {
		t.Fatalf("Create on a fresh lease: %v", err)
	}
	checkAcquired(t, r1, 1, 0, "Create")
	mustRead(t, a, r1, "after Create, the creator")
	mustRead(t, b, r1, "after Create, another client")
	mustRead(t, open(3), r1, "after Create, a new client")
	if rec, err := b.Create(2, LongTTL); !isExist(err) {
		t.Fatalf("Create while a record exists = %+v, %v; want fs.ErrExist", rec, err)
	}
	mustRead(t, b, r1, "after a failed Create")

	r2, err := a.Renew(r1, LongTTL)
	if err != nil {
		t.Fatalf("Renew of the current record: %v", err)
	}
	checkRenewed(t, r2, r1, "Renew")
	mustRead(t, b, r2, "after Renew")
	r3, err := a.Renew(r2, LongTTL)
	if err != nil {
		t.Fatalf("second Renew: %v", err)
	}
	checkRenewed(t, r3, r2, "second Renew")

	if err := a.Release(r3); err != nil {
		t.Fatalf("Release of the current record: %v", err)
	}
	mustBeAbsent(t, a, "after Release, the releaser")
	mustBeAbsent(t, b, "after Release, another client")
	if rec, err := a.Renew(r3, LongTTL); !isConflict(err) {
		t.Fatalf("Renew after Release = %+v, %v; want lease.ErrConflict", rec, err)
	}
	if err := a.Release(r3); !isConflict(err) {
		t.Fatalf("a second Release = %v; want lease.ErrConflict", err)
	}
	if rec, err := b.Takeover(r3, 2, LongTTL); !isConflict(err) {
		t.Fatalf("Takeover of a released record = %+v, %v; want lease.ErrConflict", rec, err)
	}
	mustBeAbsent(t, b, "after failed writes on a released lease")

	r4, err := b.Create(2, LongTTL)
	if err != nil {
		t.Fatalf("Create after Release: %v", err)
	}
	checkAcquired(t, r4, 2, r3.Version, "Create after Release")
	mustRead(t, a, r4, "after the second Create")
}

func testConcurrentCreate(t *testing.T, open Open, opts Options) {
	n := opts.contenders()
	clients := make([]lease.Store, n)
	for i := range clients {
		clients[i] = open(int64(i + 1))
	}
	var last lease.Record
	for round := range 5 {
		recs, errs := make([]lease.Record, n), make([]error, n)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range clients {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				recs[i], errs[i] = clients[i].Create(int64(i+1), LongTTL)
			}()
		}
		start.Done()
		done.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: contenders %d and %d both created: %+v and %+v", round, winner+1, i+1, recs[winner], recs[i])
			case err == nil:
				winner = i
			case !isExist(err):
				t.Fatalf("round %d: contender %d's Create failed with %v; want success or fs.ErrExist", round, i+1, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no contender created the lease: %v", round, errs)
		}
		rec := recs[winner]
		checkAcquired(t, rec, int64(winner+1), last.Version, fmt.Sprintf("round %d: the winner's Create", round))
		for _, c := range clients {
			mustRead(t, c, rec, fmt.Sprintf("round %d: after the race", round))
		}
		if err := clients[winner].Release(rec); err != nil {
			t.Fatalf("round %d: the winner's Release: %v", round, err)
		}
		last = rec
	}
}

func testStale(t *testing.T, open Open, _ Options) {
	a, b := open(1), open(2)
	r1, err := a.Create(1, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := b.Read() // b's expectation, about to go stale
	if err != nil || seen != r1 {
		t.Fatalf("Read = %+v, %v; want %+v", seen, err, r1)
	}
	r2, err := a.Renew(r1, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := b.Takeover(seen, 2, LongTTL); !isConflict(err) {
		t.Fatalf("Takeover with a stale expectation = %+v, %v; want lease.ErrConflict", rec, err)
	}
	if rec, err := a.Renew(r1, LongTTL); !isConflict(err) {
		t.Fatalf("Renew with a stale expectation = %+v, %v; want lease.ErrConflict", rec, err)
	}
	if err := a.Release(r1); !isConflict(err) {
		t.Fatalf("Release with a stale expectation = %v; want lease.ErrConflict", err)
	}
	mustRead(t, b, r2, "after three stale compares")

	// b takes over with the current record: now a's expectation is stale.
	r3, err := b.Takeover(r2, 2, LongTTL)
	if err != nil {
		t.Fatalf("Takeover with the current record: %v", err)
	}
	checkAcquired(t, r3, 2, r2.Version, "Takeover")
	if r3.Epoch <= r1.Epoch {
		t.Fatalf("Takeover's epoch %d is not above the deposed holder's %d", r3.Epoch, r1.Epoch)
	}
	if rec, err := a.Renew(r2, LongTTL); !isConflict(err) {
		t.Fatalf("the deposed holder's Renew = %+v, %v; want lease.ErrConflict", rec, err)
	}
	if err := a.Release(r2); !isConflict(err) {
		t.Fatalf("the deposed holder's Release = %v; want lease.ErrConflict", err)
	}
	if rec, err := open(3).Takeover(r2, 3, LongTTL); !isConflict(err) {
		t.Fatalf("a second Takeover of the same record = %+v, %v; want lease.ErrConflict", rec, err)
	}
	mustRead(t, a, r3, "after the deposed holder's writes")
}

func testNonOwner(t *testing.T, open Open, opts Options) {
	a, b := open(1), open(2)
	// b held the lease once, released it; a holds it now.
	old, err := b.Create(2, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(old); err != nil {
		t.Fatal(err)
	}
	cur, err := a.Create(1, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(old); !isConflict(err) {
		t.Fatalf("Release by a non-owner with its old record = %v; want lease.ErrConflict", err)
	}
	if rec, err := b.Renew(old, LongTTL); !isConflict(err) {
		t.Fatalf("Renew by a non-owner with its old record = %+v, %v; want lease.ErrConflict", rec, err)
	}
	mustRead(t, b, cur, "after the non-owner's writes")
	if opts.VersionOnlyCompare {
		t.Logf("the store compares versions only: made-up records not tried")
		return
	}
	forged := []lease.Record{
		{Holder: 2, Epoch: cur.Epoch, Version: cur.Version},     // b's name on a's version
		{Holder: 1, Epoch: cur.Epoch + 1, Version: cur.Version}, // a wrong epoch
	}
	for _, f := range forged {
		if err := b.Release(f); !isConflict(err) {
			t.Fatalf("Release(%+v) of %+v = %v; want lease.ErrConflict", f, cur, err)
		}
		if rec, err := b.Renew(f, LongTTL); !isConflict(err) {
			t.Fatalf("Renew(%+v) of %+v = %+v, %v; want lease.ErrConflict", f, cur, rec, err)
		}
	}
	mustRead(t, b, cur, "after made-up records")
}

// testStatesLease: a record keeps its writer's lease (Record.TTL), rounded
// up to a whole millisecond, and every other client reads it back, the
// lease of the last write only; the records the writes return are the
// ones stored (a compare-and-set on them matches).
func testStatesLease(t *testing.T, open Open, opts Options) {
	a, b := open(1), open(2)
	stated := func(d time.Duration) time.Duration {
		if opts.NoLease {
			return 0
		}
		return lease.StatedTTL(d)
	}
	r1, err := a.Create(1, 27*time.Second)
	if err != nil || r1.TTL != stated(27*time.Second) {
		t.Fatalf("Create with a 27 s lease = %+v, %v; want TTL %v", r1, err, stated(27*time.Second))
	}
	mustRead(t, b, r1, "after a Create with a 27 s lease")
	r2, err := a.Renew(r1, 9*time.Second)
	if err != nil || r2.TTL != stated(9*time.Second) {
		t.Fatalf("Renew with a 9 s lease = %+v, %v; want TTL %v", r2, err, stated(9*time.Second))
	}
	mustRead(t, b, r2, "after a Renew with a 9 s lease")
	// Rounded up: a watcher never waits less than the writer's lease.
	odd := 27*time.Second + time.Microsecond
	r3, err := b.Takeover(r2, 2, odd)
	if err != nil || r3.TTL != stated(odd) {
		t.Fatalf("Takeover with a %v lease = %+v, %v; want TTL %v", odd, r3, err, stated(odd))
	}
	mustRead(t, a, r3, "after a Takeover with a 27.000001 s lease")
	r4, err := b.Renew(r3, odd)
	if err != nil || r4.TTL != r3.TTL {
		t.Fatalf("Renew of %+v = %+v, %v", r3, r4, err)
	}
	if err := b.Release(r4); err != nil {
		t.Fatalf("Release of %+v: %v", r4, err)
	}
	mustBeAbsent(t, a, "after the release")
}

func testEpochs(t *testing.T, open Open, _ Options) {
	const holders = 3
	clients := make([]lease.Store, holders)
	for i := range clients {
		clients[i] = open(int64(i + 1))
	}
	var epochs []int64
	var last lease.Record // the last write's record
	cur, err := clients[0].Create(1, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	epochs = append(epochs, cur.Epoch)
	last = cur
	for step := range 12 {
		next := clients[(step+1)%holders]
		h := int64((step+1)%holders + 1)
		var rec lease.Record
		switch step % 3 {
		case 0: // a takeover by the next holder
			rec, err = next.Takeover(cur, h, LongTTL)
		case 1: // the holder renews, then releases; the next one creates
			var r lease.Record
			if r, err = clients[cur.Holder-1].Renew(cur, LongTTL); err == nil {
				checkRenewed(t, r, cur, "Renew")
				if err = clients[cur.Holder-1].Release(r); err == nil {
					last = r
					rec, err = next.Create(h, LongTTL)
				}
			}
		case 2: // a takeover after a renewal
			var r lease.Record
			if r, err = clients[cur.Holder-1].Renew(cur, LongTTL); err == nil {
				last = r
				rec, err = next.Takeover(r, h, LongTTL)
			}
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkAcquired(t, rec, h, last.Version, fmt.Sprintf("step %d", step))
		if rec.Epoch <= epochs[len(epochs)-1] {
			t.Fatalf("step %d: epoch %d after epochs %v", step, rec.Epoch, epochs)
		}
		epochs = append(epochs, rec.Epoch)
		cur, last = rec, rec
		mustRead(t, open(99), cur, fmt.Sprintf("step %d: a new client", step))
	}
	t.Logf("epochs of 13 successive leaders: %v", epochs)
}

// ContractTimeout is the per-call timeout a store's contract test should
// give its clients: long enough that a loaded machine never times out a
// call to a healthy server (a timed-out call is an unknown outcome, which
// the suite must then treat as either), short enough to end a test whose
// server hangs.
const ContractTimeout = 10 * time.Second

func testExpiry(t *testing.T, open Open, opts Options) {
	if opts.Expiry == 0 {
		t.Skip("the store has no server-side expiry")
	}
	slack := opts.ExpirySlack
	if slack == 0 {
		slack = 250 * time.Millisecond
	}
	ttl := opts.Expiry
	a, b := open(1), open(2)

	// A release first: what it leaves behind (Redis's mark of the version
	// released) must not make the expiry below read as a release (a
	// probe's mutant, 2026-12-07: a mark read as naming the last version
	// whatever version it named made every expiry after a release read as
	// lease.ErrReleased; a watcher then created at once, and its create,
	// which names the record that went, held the new record a lease from
	// then without leading: a crashed leader was replaced two leases after
	// its last renewal, not one).
	r0, err := a.Create(1, LongTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(r0); err != nil {
		t.Fatal(err)
	}

	// Not renewed: gone after the TTL, and nothing compares equal to it.
	start := time.Now()
	r1, err := a.Create(1, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := b.Read(); time.Since(start) < ttl/2 && (err != nil || rec != r1) {
		// (A read that came after half the TTL proves nothing either way:
		// the machine stalled.)
		t.Fatalf("right after Create: Read = %+v, %v; want %+v", rec, err, r1)
	}
	var goneAfter time.Duration
	for {
		_, err := b.Read()
		if isNotExist(err) {
			goneAfter = time.Since(start)
			break
		}
		if err != nil {
			t.Fatalf("Read while waiting for expiry: %v", err)
		}
		if time.Since(start) > ttl+slack {
			t.Fatalf("record still there %v after a Create with TTL %v", time.Since(start), ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The store may round the TTL up, never down; the read itself took
	// some time after start, so allow a read's worth of earliness.
	if goneAfter < ttl-20*time.Millisecond {
		t.Fatalf("record gone %v after a Create with TTL %v: before its TTL", goneAfter, ttl)
	}
	t.Logf("record with TTL %v gone after %v", ttl, goneAfter.Round(time.Millisecond))
	vanishing := false
	if v, ok := b.(lease.Vanishing); ok && v.Vanishes() {
		// A store whose server can drop a record on its own says so, and
		// which record went: its holder may still lead, and a watcher
		// that saw it waits it out (lease.Vanishing).
		vanishing = true
		_, err := b.Read()
		var ve *lease.VanishedError
		if !errors.As(err, &ve) || !errors.Is(err, lease.ErrVanished) || ve.Version != r1.Version || errors.Is(err, lease.ErrReleased) {
			t.Fatalf("Read after an expiry = %v; want a *lease.VanishedError of version %d", err, r1.Version)
		}
		if ve.TTL != r1.TTL || ve.Nonce != r1.Nonce {
			// A process that never saw it waits that long: its holder
			// may hold a longer lease than the reader's own.
			t.Fatalf("Read after an expiry: VanishedError TTL %v, nonce %d; want the lease the record stated, %v, and its nonce, %d (versions repeat after a loss of the server's data)", ve.TTL, ve.Nonce, r1.TTL, r1.Nonce)
		}
	}
	if rec, err := a.Renew(r1, ttl); !isConflict(err) {
		t.Fatalf("Renew of an expired record = %+v, %v; want lease.ErrConflict", rec, err)
	}
	if rec, err := b.Takeover(r1, 2, ttl); !isConflict(err) {
		t.Fatalf("Takeover of an expired record = %+v, %v; want lease.ErrConflict (re-read, then Create)", rec, err)
	}
	if err := a.Release(r1); !isConflict(err) {
		t.Fatalf("Release of an expired record = %v; want lease.ErrConflict", err)
	}
	// (With half the lease: a store whose records vanish makes the new
	// record state the longer lease of the two, the expired record's,
	// whose holder may lead that long: lease.RaisedTTL.)
	r2, err := b.Create(2, ttl/2)
	if err != nil {
		t.Fatalf("Create after expiry: %v", err)
	}
	checkAcquired(t, r2, 2, r1.Version, "Create after expiry")
	if want := map[bool]time.Duration{true: r1.TTL, false: lease.StatedTTL(ttl / 2)}[vanishing && r1.TTL > 0]; r2.TTL != want {
		t.Fatalf("Create with a lease of %v after the expiry of a record of %v: the record states %v, want %v", ttl/2, r1.TTL, r2.TTL, want)
	}
	if want, wantTTL, wantNonce := map[bool]int64{true: r1.Version}[vanishing], map[bool]time.Duration{true: r1.TTL}[vanishing], map[bool]uint64{true: r1.Nonce}[vanishing]; r2.Vanished != want || r2.VanishedTTL != wantTTL || r2.VanishedNonce != wantNonce {
		// A create that takes the place of a record gone without a
		// release names it, and the lease it stated: its creator may
		// never have seen it, and its holder may still lead
		// (lease.Record.Vanished).
		t.Fatalf("Create after an expiry: Vanished = %d (%v, nonce %d), want %d (%v, nonce %d)", r2.Vanished, r2.VanishedTTL, r2.VanishedNonce, want, wantTTL, wantNonce)
	}
	r2.Vanished, r2.VanishedTTL, r2.VanishedNonce = 0, 0, 0 // (the create's answer: no read shows it)
	mustRead(t, a, r2, "after a Create over an expired record")

	// Renewed every third of the TTL: still there well past its first
	// TTL and slack.
	cur, renewed := r2, time.Now()
	for end := time.Now().Add(ttl + slack + ttl/2); time.Now().Before(end); {
		time.Sleep(ttl / 3)
		if stall := time.Since(renewed); stall > ttl*3/4 {
			// The machine stalled for most of a TTL between two
			// renewals: the record may have expired, as it should.
			t.Logf("stalled %v between renewals of a %v TTL: the renewal part proves nothing this time", stall, ttl)
			b.Release(cur)
			return
		}
		renewed = time.Now()
		if cur, err = b.Renew(cur, ttl); err != nil {
			t.Fatalf("Renew of a live record: %v", err)
		}
	}
	mustRead(t, a, cur, "after renewals past the first TTL")
	if err := b.Release(cur); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(); vanishing && (!errors.Is(err, lease.ErrReleased) || errors.Is(err, lease.ErrVanished)) {
		t.Fatalf("Read after a release = %v; want lease.ErrReleased (a record that went by a release is not waited out)", err)
	}
	r3, err := a.Create(1, ttl)
	if err != nil {
		t.Fatalf("Create after a release: %v", err)
	}
	if r3.Vanished != 0 {
		t.Fatalf("Create after a release: Vanished = %d, want 0 (a released record is held by no one)", r3.Vanished)
	}
	if err := a.Release(r3); err != nil {
		t.Fatal(err)
	}
}

func testLinearizable(t *testing.T, open Open, opts Options) {
	clients := max(2, opts.contenders()/2)
	n := opts.HistoryOps
	if n <= 0 {
		n = 60
	}
	seed := uint64(time.Now().UnixNano())
	ops := RecordHistory(open, clients, n, seed)
	res := CheckHistory(ops)
	if err := res.Err(); err != nil {
		path := writeHTML(t, res)
		t.Fatalf("%d clients x %d calls (seed %d): %v (%s); porcupine's view: %s", clients, n, seed, err, culprit(res), path)
	}
	t.Logf("%d clients x %d calls (seed %d) linearizable; outcomes %v", clients, n, seed, Outcomes(ops))
}
