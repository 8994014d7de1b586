package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// The server variants: the reference algorithm over the simulator's model
// of each lease server, so that the checker runs the same algorithm over
// each store. A real process uses the client packages instead
// (lease/redisstore, lease/etcdstore, lease/sqlstore), through leaselab run
// -store. They are registered with lease.Register when this package is
// loaded, after lease's own variants.
func init() {
	for _, v := range []struct{ kind, summary string }{
		{"redis", "the reference over Redis (the simulator's model: SET NX PX, compare-and-set scripts, a counter for epochs, exact TTL)"},
		{"etcd", "the reference over etcd (the simulator's model: transactions on the key's revision, a lease TTL in whole seconds, a DELETE notice when it expires)"},
		{"sql", "the reference over a SQL row (the simulator's model: insert-if-absent, UPDATE/DELETE on a version column, an expiry column)"},
	} {
		if err := lease.Register(serverVariant(v.kind, v.summary)); err != nil {
			panic(err)
		}
	}
}

// ServerKinds are the server stores the simulator models, each a variant
// of the same name running the reference algorithm over it.
var ServerKinds = []string{"redis", "etcd", "sql"}

// ServerTTL is how long a server of kind keeps a lease written with ttl
// before it expires it itself: Redis's PX is exact to the millisecond,
// etcd's lease TTLs are whole seconds (rounded up), and the SQL store
// compares an expiry column with the server's clock. (The client packages
// round the same way.)
func ServerTTL(kind string, ttl time.Duration) time.Duration {
	switch kind {
	case "redis":
		return (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
	case "etcd":
		return (ttl + time.Second - 1).Truncate(time.Second)
	}
	return ttl
}

// errNoServer is what a server variant's store says on a process that is
// not the simulator's (the real runtime, where leaselab run -store builds
// a real client instead).
var errNoServer = errors.New("this variant's store is the simulator's model of a server; on real processes use leaselab run -store with a real server")

// failedStore is the store of a server variant that could not connect:
// every operation returns err.
type failedStore struct{ err error }

func (n failedStore) Read() (lease.Record, error)                       { return lease.Record{}, n.err }
func (n failedStore) Create(int64, time.Duration) (lease.Record, error) { return lease.Record{}, n.err }
func (n failedStore) Renew(lease.Record, time.Duration) (lease.Record, error) {
	return lease.Record{}, n.err
}
func (n failedStore) Takeover(lease.Record, int64, time.Duration) (lease.Record, error) {
	return lease.Record{}, n.err
}
func (n failedStore) Release(lease.Record) error { return n.err }

// serverVariant is the reference algorithm over the simulator's server of
// kind.
func serverVariant(kind, summary string) lease.Variant {
	return lease.Variant{
		Name:    kind,
		Summary: summary,
		NewStore: func(p lease.Proc, path string) lease.Store {
			sp, ok := p.(*proc)
			if !ok {
				return failedStore{fmt.Errorf("%s: %w", kind, errNoServer)}
			}
			s, err := sp.dial(kind, path)
			if err != nil {
				return failedStore{err}
			}
			return s
		},
		Run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			// The server's notices (remote is a lease.StoreNotifier), not
			// the directory of path, wake its watchers.
			ref, err := lease.LookupVariant("reference")
			if err != nil {
				return err
			}
			return ref.Run(p, s, path, cfg) // the reference's program: lease.Run
		},
		Claims:        lease.Claims{Handover: lease.ServerExpiry, ExpiryLag: lease.OwnClockLag, OwnClock: true, Files: &lease.FileBound{}, Pushed: true, Reports: true, WallExpiry: kind != "etcd", NamedWrites: true},
		Epochs:        true,
		LocalDeadline: true,
	}
}
