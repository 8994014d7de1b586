package lease

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Variant is a named, selectable version of the algorithm: the post's
// successive programs, and later the proposed fixes, so that the checker
// can judge each one by name.
type Variant struct {
	// Name selects the variant on the command line.
	Name string
	// Summary says in one line what it is.
	Summary string
	// NewStore builds the variant's store for process p and lock path.
	NewStore func(p Proc, path string) Store
	// ClockTolerance is how much later than lease + watch the variant may
	// notice an expired lease when every clock is right: the seed's
	// whole-second expiry adds up to one second.
	ClockTolerance time.Duration
	// Epochs reports whether the variant gives each leader a fencing epoch.
	Epochs bool
	// Notify reports whether its watchers wake on changes and at expiry
	// instead of polling, so that failover does not wait a watch interval.
	Notify bool
	// Run runs the algorithm as process p over store s (nil: the post's
	// program, NewElector).
	Run func(p Proc, s Store, path string, cfg Config) error
	// LocalDeadline reports whether its leaders stop at a local deadline
	// (and so whether the config must satisfy ValidateDeadline).
	LocalDeadline bool
	// KernelLock reports whether leadership is a lock the kernel holds
	// (flock): it passes to a waiting process as soon as its holder
	// releases it or dies, so failover waits for no lease and no watch
	// interval, and the variant makes flock calls (which faults can
	// follow or fail).
	KernelLock bool
	// ServerTTL reports whether the store expires records itself (a
	// server's TTL), so that a record may vanish between two operations.
	ServerTTL bool
}

// CheckConfig validates cfg for this variant.
func (v Variant) CheckConfig(cfg Config) error {
	if v.LocalDeadline {
		return cfg.ValidateDeadline()
	}
	return cfg.Validate()
}

// Start runs the variant as process p over s. It returns only through
// p.Exit, or with an error for a config the variant rejects.
func (v Variant) Start(p Proc, s Store, path string, cfg Config) error {
	if err := v.CheckConfig(cfg); err != nil {
		return err
	}
	if v.Run != nil {
		return v.Run(p, s, path, cfg)
	}
	e, err := NewElector(p, s, cfg)
	if err != nil {
		return err
	}
	e.Run()
	return nil
}

var variants = []Variant{
	{
		Name:    "seed-naive",
		Summary: "the post's first attempt: stat, then open(O_CREATE|O_WRONLY); otherwise the seed",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path, Naive: true}
		},
		ClockTolerance: time.Second,
	},
	{
		Name:    "seed",
		Summary: "the post's committed program: O_EXCL create, close, os.WriteFile; bugs included",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path}
		},
		ClockTolerance: time.Second,
	},
	{
		Name:    "seed-rename",
		Summary: "the seed with the post's fix taken literally: every write goes to a temporary file renamed onto the lock",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path, Publish: "rename", pid: int64(p.PID())}
		},
		ClockTolerance: time.Second,
	},
	{
		Name:    "seed-link",
		Summary: "the seed with new leases published by link(2) from a temporary file, renewals by rename",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path, Publish: "link", pid: int64(p.PID())}
		},
		ClockTolerance: time.Second,
	},
	{
		Name:    "reference",
		Summary: "the corrected algorithm: link(2) compare-and-set versions, observer-clock expiry, local deadline, fencing epochs, notification",
		NewStore: func(p Proc, path string) Store {
			return &VersionedFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p)}
		},
		Run: func(p Proc, s Store, path string, cfg Config) error {
			r, err := NewReference(p, s, path, cfg)
			if err != nil {
				return err
			}
			r.Run()
			return nil
		},
		ClockTolerance: 200 * time.Millisecond, // the drift margin on a 9 s lease at 1%
		Epochs:         true,
		Notify:         true,
		LocalDeadline:  true,
	},
	{
		Name:    "flock",
		Summary: "flock(2) on the lock file, released by the kernel when its holder dies; an epoch record written under the lock",
		NewStore: func(p Proc, path string) Store {
			return &FlockFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p)}
		},
		Run: func(p Proc, s Store, path string, cfg Config) error {
			f, err := NewFlock(p, s, path, cfg)
			if err != nil {
				return err
			}
			f.Run()
			return nil
		},
		Epochs:     true,
		KernelLock: true,
	},
	serverVariant("redis", "the reference over Redis (the simulator's model: SET NX PX, compare-and-set scripts, a counter for epochs, exact TTL)"),
	serverVariant("etcd", "the reference over etcd (the simulator's model: transactions on the key's revision, a lease TTL in whole seconds)"),
	serverVariant("sql", "the reference over a SQL row (the simulator's model: insert-if-absent, UPDATE/DELETE on a version column, an expiry column)"),
}

// ErrUnknownVariant is returned by LookupVariant.
var ErrUnknownVariant = errors.New("unknown variant")

var registry sync.Mutex

// Register adds a variant, so that the simulator, the checker and the
// command line can run it by name: a user's proposed fix plugs in without
// editing leaselab. Names must be new and non-empty, and NewStore set.
func Register(v Variant) error {
	registry.Lock()
	defer registry.Unlock()
	if v.Name == "" || v.NewStore == nil {
		return fmt.Errorf("a variant needs a name and a NewStore")
	}
	for _, w := range variants {
		if w.Name == v.Name {
			return fmt.Errorf("variant %q is already registered", v.Name)
		}
	}
	variants = append(variants, v)
	return nil
}

// Variants returns every variant, in a fixed order.
func Variants() []Variant {
	registry.Lock()
	defer registry.Unlock()
	return append([]Variant(nil), variants...)
}

// VariantNames returns the names of every variant, comma-separated.
func VariantNames() string {
	registry.Lock()
	defer registry.Unlock()
	return namesLocked()
}

func namesLocked() string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// LookupVariant returns the named variant.
func LookupVariant(name string) (Variant, error) {
	registry.Lock()
	defer registry.Unlock()
	for _, v := range variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("%w %q (valid: %s)", ErrUnknownVariant, name, namesLocked())
}

// Main runs variant v as the post's program does, as process p contending
// for the lock file at path. It returns only through p.Exit.
func Main(p Proc, v Variant, path string, cfg Config) error {
	return v.Start(p, v.NewStore(p, path), path, cfg)
}
