package storetest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// mem is a lease register in memory, shared by its clients: the contract
// written as plainly as possible, to check the suite itself. Its faults
// break it on purpose.
type mem struct {
	mu      sync.Mutex
	rec     lease.Record
	present bool
	seq     int64
	until   time.Time // server-side expiry
	dead    bool      // the "server" is gone: every call fails

	// lostUpdate makes Takeover skip its compare when the record is
	// held (check-then-act with a window), as the seed's takeover does.
	lostUpdate bool
	// noLease drops the writer's lease: every record reads with TTL 0, as
	// a store from before leases were kept.
	noLease bool
	errs    []error
}

var errDead = errors.New("connection refused")

type memClient struct{ m *mem }

func (c memClient) Read() (lease.Record, error) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return lease.Record{}, err
	}
	if !m.present {
		return lease.Record{}, fs.ErrNotExist
	}
	return m.rec, nil
}

// check fails a call on a dead server and expires the record.
func (m *mem) check() error {
	if m.dead {
		m.errs = append(m.errs, errDead)
		return errDead
	}
	if m.present && time.Now().After(m.until) {
		m.present = false
	}
	return nil
}

func (m *mem) write(holder, epoch int64, ttl time.Duration) lease.Record {
	m.seq++
	if epoch == 0 {
		epoch = m.seq
	}
	m.rec, m.present, m.until = lease.Record{Holder: holder, Epoch: epoch, Version: m.seq, TTL: lease.StatedTTL(ttl)}, true, time.Now().Add(ttl)
	if m.noLease {
		m.rec.TTL = 0
	}
	return m.rec
}

func (c memClient) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return lease.Record{}, err
	}
	if m.present {
		return lease.Record{}, fs.ErrExist
	}
	return m.write(holder, 0, ttl), nil
}

func (c memClient) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return lease.Record{}, err
	}
	if !m.present || m.rec != cur {
		return lease.Record{}, lease.ErrConflict
	}
	return m.write(cur.Holder, cur.Epoch, ttl), nil
}

func (c memClient) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	m := c.m
	m.mu.Lock()
	if err := m.check(); err != nil {
		m.mu.Unlock()
		return lease.Record{}, err
	}
	if m.lostUpdate && m.present {
		m.mu.Unlock()
		time.Sleep(100 * time.Microsecond) // the window
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.write(holder, 0, ttl), nil
	}
	defer m.mu.Unlock()
	if !m.present || m.rec != stale {
		return lease.Record{}, lease.ErrConflict
	}
	return m.write(holder, 0, ttl), nil
}

func (c memClient) Release(cur lease.Record) error {
	m := c.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if !m.present || m.rec != cur {
		return lease.ErrConflict
	}
	m.present = false
	return nil
}

func memLease(t *testing.T) Open {
	m := &mem{}
	return func(int64) lease.Store { return memClient{m} }
}

// The suite passes a correct register.
func TestSuiteOnMemory(t *testing.T) {
	Run(t, memLease, Options{Expiry: time.Second, ExpirySlack: 500 * time.Millisecond})
}

// The porcupine check finds a takeover that does not compare: two
// clients that read the same record both take it over.
func TestHistoryFindsLostUpdate(t *testing.T) {
	for attempt := range 20 {
		m := &mem{lostUpdate: true}
		ops := RecordHistory(func(int64) lease.Store { return memClient{m} }, 4, 60, uint64(attempt))
		res := CheckHistory(ops)
		if err := res.Err(); err != nil {
			if !strings.Contains(err.Error(), "not linearizable") {
				t.Fatalf("unexpected error: %v", err)
			}
			t.Logf("found in attempt %d: %v (%s)", attempt, err, culprit(res))
			return
		}
	}
	t.Fatal("20 histories of a takeover without compare were all linearizable")
}

// The failure harness on a store whose "server" dies: the leader stops at
// its deadline.
func TestServerLossOnMemory(t *testing.T) {
	m := &mem{}
	ServerLoss{
		Store: memClient{m},
		Kill: func() {
			m.mu.Lock()
			m.dead = true
			m.mu.Unlock()
		},
		Errors: func() []error {
			m.mu.Lock()
			defer m.mu.Unlock()
			return append([]error(nil), m.errs...)
		},
	}.Run(t)
}

// Two electors with different leases over a register that keeps the
// writer's lease: the short-lease watcher waits out the long lease.
func TestMixedLeasesOnMemory(t *testing.T) {
	t.Parallel()
	MixedLeases(t, memLease(t))
}

// The same over a register that keeps no lease (every record reads with
// TTL 0): the short-lease watcher waits its own lease, and takes over
// while the long-lease leader still leads.
func TestMixedLeasesFindsNoLease(t *testing.T) {
	t.Parallel()
	m := &mem{noLease: true}
	summary, err := runMixed(func(int64) lease.Store { return memClient{m} })
	t.Log(summary)
	if err == nil || !strings.Contains(err.Error(), "waited its own lease") {
		t.Fatalf("runMixed over a register without leases: %v; want the takeover found", err)
	}
	t.Logf("found: %v", err)
}

// The reference's store, lease.VersionedFile on the real file system:
// each client is its own VersionedFile (its own cache), as each process
// has. It compares versions only, and has no expiry of its own.
func TestVersionedFileContract(t *testing.T) {
	newLease := func(t *testing.T) Open {
		path := filepath.Join(t.TempDir(), "leader.lock")
		return func(holder int64) lease.Store {
			return &lease.VersionedFile{FS: lease.OSFS{}, Path: path, PID: holder}
		}
	}
	Run(t, newLease, Options{VersionOnlyCompare: true})
}

// The flock store: lease.FlockRegister on the real file system, every
// operation a compare-and-write under the lock file's flock(2). Each
// client is its own store (its own descriptors, as each process has), so
// the kernel's lock is what orders them. No expiry of its own.
func TestFlockContract(t *testing.T) {
	newLease := func(t *testing.T) Open {
		path := filepath.Join(t.TempDir(), "leader.lock")
		return func(holder int64) lease.Store {
			return lease.FlockRegister{FS: lease.OSFS{}, Path: path}
		}
	}
	Run(t, newLease, Options{NoLease: true})
}

func Example() {
	// In a store package's test:
	//
	//	func TestContract(t *testing.T) {
	//		srv := servertest.Redis(t, "")
	//		storetest.Run(t, func(t *testing.T) storetest.Open {
	//			key := uniqueKey(t)
	//			return func(holder int64) lease.Store { return newClient(t, srv.Addr, key) }
	//		}, storetest.Options{Expiry: 300 * time.Millisecond})
	//	}
	fmt.Println(LongTTL)
	// Output: 5m0s
}
