package lease

import (
	"errors"
	"fmt"
	"time"
)

// Dialer is an optional ability of a Proc: connecting to a lease server.
// The simulator's processes have it, with a model of each server kind
// ("redis", "etcd", "sql") as an atomic register with that server's
// expiry semantics, so that the checker runs the same reference algorithm
// over each store. A real process uses the client packages instead
// (lease/redisstore, lease/etcdstore, lease/sqlstore), through leaselab run
// -store.
type Dialer interface {
	// Dial returns a store for the lease called name on a server of the
	// given kind.
	Dial(kind, name string) (Store, error)
}

// ServerKinds are the server stores the simulator models, each a variant
// of the same name running the reference algorithm over it.
var ServerKinds = []string{"redis", "etcd", "sql"}

// ServerTTL is how long a server of kind keeps a lease written with ttl
// before it expires it itself: Redis's PX is exact to the millisecond,
// etcd's lease TTLs are whole seconds (rounded up), and the SQL store
// compares an expiry column with the server's clock.
func ServerTTL(kind string, ttl time.Duration) time.Duration {
	switch kind {
	case "redis":
		return (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
	case "etcd":
		return (ttl + time.Second - 1).Truncate(time.Second)
	}
	return ttl
}

// errNoServer is what a server variant's store says on a process that
// cannot dial (the real runtime, where leaselab run -store builds a real
// client instead).
var errNoServer = errors.New("this variant's store is the simulator's model of a server; on real processes use leaselab run -store with a real server")

// noServer is the store of a server variant on a process without a Dialer.
type noServer struct{ kind string }

func (n noServer) err() error                                  { return fmt.Errorf("%s: %w", n.kind, errNoServer) }
func (n noServer) Read() (Record, error)                       { return Record{}, n.err() }
func (n noServer) Create(int64, time.Duration) (Record, error) { return Record{}, n.err() }
func (n noServer) Renew(Record, time.Duration) (Record, error) { return Record{}, n.err() }
func (n noServer) Takeover(Record, int64, time.Duration) (Record, error) {
	return Record{}, n.err()
}
func (n noServer) Release(Record) error { return n.err() }

// serverVariant is the reference algorithm over a server store of kind.
func serverVariant(kind, summary string) Variant {
	return Variant{
		Name:    kind,
		Summary: summary,
		NewStore: func(p Proc, path string) Store {
			if d, ok := p.(Dialer); ok {
				if s, err := d.Dial(kind, path); err == nil {
					return s
				}
			}
			return noServer{kind}
		},
		Run: func(p Proc, s Store, path string, cfg Config) error {
			cfg.Poll = true // no directory to watch: poll the server
			r, err := NewReference(p, s, path, cfg)
			if err != nil {
				return err
			}
			r.Run()
			return nil
		},
		ClockTolerance: 200 * time.Millisecond,
		Epochs:         true,
		LocalDeadline:  true,
		ServerTTL:      true,
	}
}
