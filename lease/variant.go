package lease

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	// Epochs reports whether the variant gives each leader a fencing epoch.
	Epochs bool
	// Claims is what the variant states about how soon leadership passes
	// on, which the checker holds it to.
	Claims Claims
	// Run runs the algorithm as process p over store s (nil: the post's
	// program, NewSeedProgram).
	Run func(p Proc, s Store, path string, cfg Config) error
	// LocalDeadline reports whether its leaders stop at a local deadline
	// (and so whether the config must satisfy ValidateDeadline).
	LocalDeadline bool
}

// Claims is what a variant states about itself for a checker to hold it
// to: how a watcher learns that the leader is gone, and how late it may
// notice.
type Claims struct {
	// Handover is how leadership passes on when a leader dies or leaves.
	Handover Handover
	// Files, if set, bounds the names the variant keeps in its lock's
	// directory at any instant, however long it runs (nil: it states no
	// bound).
	Files *FileBound
	// ExpiryLag is how much later than the lease (plus a watch interval,
	// if watchers poll) the variant may notice an expired lease when
	// every clock is right: the seed's whole-second expiry adds up to one
	// second.
	ExpiryLag time.Duration
	// OwnClock: the variant's watchers wait out a lease on their own
	// monotonic clock, which may run slow by the drift bound: on top of
	// ExpiryLag they may notice an expired lease up to
	// Config.DriftLag later, a fraction of the lease.
	OwnClock bool
	// Pushed: the variant's store tells its watchers of every change
	// ([ChangeFeed]; in the simulator a [StoreNotifier]) on top of
	// Handover: a release is taken over at once and a crash costs the
	// lease, with no watch interval, while every notice arrives; a lost
	// one costs at most the watch interval the watchers still poll at.
	Pushed bool
	// Reports: the variant calls Callbacks.OnError with every store error
	// that is none of the contract's outcomes for its operation
	// (the checker reads them as trace.OwedError does), from the
	// activity whose call failed, before that activity's next store call.
	Reports bool
	// WallExpiry: the variant's server expires records on the machine's
	// wall clock (Redis, SQL), so that a step forward drops a live
	// lease early; the reference then waits it out (Vanishing), and a
	// hand-over within a lease of such a step may take up to that lease.
	WallExpiry bool
	// NamedWrites: each write carries a nonce by which its writer knows
	// it, so that a write whose outcome it could not know (its reply
	// lost) and that took effect is known for its own when it is read, or
	// when the next compare-and-set conflicts with it: not a lost lease,
	// and no reason to step down (Redis, etcd and SQL; not the file
	// stores, whose records carry none).
	NamedWrites bool
}

// FileBound is a number of names in a lock directory: Fixed, plus
// PerProc for every process that ran (the dead included: what a process
// leaves when it dies counts until someone removes it).
type FileBound struct {
	Fixed, PerProc int
	// Boots, if not 0, is the most boot records (PATH.boot.K) the
	// directory holds at rest: once a process has written since the
	// machine's last boot, the earlier boots' are gone (one more before
	// that: the previous is kept until the newest is durable).
	Boots int
	// Sweeps says that a process that writes removes what dead processes
	// left: a temporary file (PATH.tmp.PID.SEQ) of a process that has
	// died is gone once a live process has made two writes since (the
	// first sees it, the second removes it).
	Sweeps bool
}

// Of is the bound for procs processes.
func (b FileBound) Of(procs int) int { return b.Fixed + b.PerProc*procs }

// Handover is how a watcher learns that the leader is gone.
type Handover uint8

// The handovers.
const (
	// Polled: watchers read the lease every WatchInterval and take over
	// one that has expired.
	Polled Handover = iota
	// Notified: watchers wake when the lease changes and when the lease
	// they saw can expire, so failover waits for no watch interval.
	Notified
	// ServerExpiry: the store's server drops a record whose TTL ran out
	// (a record may vanish between two operations); watchers poll.
	ServerExpiry
	// KernelLock: leadership is a lock the kernel holds (flock), passed
	// to a waiting process as soon as its holder releases it or dies, so
	// failover waits for no lease and no watch interval.
	KernelLock
)

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
	e, err := NewSeedProgram(p, s, cfg)
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
		Claims: Claims{Handover: Polled, ExpiryLag: time.Second, Files: &FileBound{Fixed: 1}}, // the lock file
	},
	{
		Name:    "seed",
		Summary: "the post's committed program: O_EXCL create, close, os.WriteFile; bugs included",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path}
		},
		Claims: Claims{Handover: Polled, ExpiryLag: time.Second, Files: &FileBound{Fixed: 1}}, // the lock file
	},
	{
		Name:    "seed-rename",
		Summary: "the seed with the post's fix taken literally: every write goes to a temporary file renamed onto the lock",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path, Publish: "rename", pid: int64(p.PID())}
		},
		Claims: Claims{Handover: Polled, ExpiryLag: time.Second, Files: &FileBound{Fixed: 1, PerProc: 1}}, // the lock, a temporary file per PID
	},
	{
		Name:    "seed-link",
		Summary: "the seed with new leases published by link(2) from a temporary file, renewals by rename",
		NewStore: func(p Proc, path string) Store {
			return &SeedFile{FS: p, Clock: p, Path: path, Publish: "link", pid: int64(p.PID())}
		},
		Claims: Claims{Handover: Polled, ExpiryLag: time.Second, Files: &FileBound{Fixed: 1, PerProc: 1}}, // the lock, a temporary file per PID
	},
	{
		Name:    "reference",
		Summary: "the corrected algorithm: link(2) compare-and-set versions, observer-clock expiry, local deadline, fencing epochs, notification",
		NewStore: func(p Proc, path string) Store {
			return &VersionedFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p), TempBase: TempBase(p)}
		},
		Run:           runReference,
		Claims:        Claims{Handover: Notified, ExpiryLag: OwnClockLag, OwnClock: true, Files: &referenceFiles, Reports: true},
		Epochs:        true,
		LocalDeadline: true,
	},
	{
		Name:    "flock",
		Summary: "flock(2) on the lock file, released by the kernel when its holder dies; an epoch record written under the lock",
		NewStore: func(p Proc, path string) Store {
			return &EpochFile{FS: p, Path: path, PID: int64(p.PID()), Boot: bootOf(p), TempBase: TempBase(p)}
		},
		Run: func(p Proc, s Store, path string, cfg Config) error {
			f, err := NewFlockElection(p, s, path, cfg)
			if err != nil {
				return err
			}
			f.Run()
			return nil
		},
		Epochs: true,
		// The lock file, two boot records, and a boot record's temporary
		// file per process (one that died while making it leaves it, or
		// one whose unlink failed, until a holder's sweep: EpochFile).
		Claims: Claims{Handover: KernelLock, Files: &FileBound{Fixed: 3, PerProc: 1, Boots: 1}},
	},
}

// OwnClockLag is the ExpiryLag of the variants whose watchers time a
// lease on their own clock (Claims.OwnClock), besides its drift: with the
// drift of a 9 s lease at the default 1% (91 ms), the 200 ms that was
// their whole lag when it did not grow with the lease (a probe found
// correct runs of a 60 s lease over it: a watcher's slow clock waited
// 60.57 s).
const OwnClockLag = 110 * time.Millisecond

// referenceFiles is VersionedFile's bound (MaxFiles).
var referenceFiles = FileBound{Fixed: 5, PerProc: 5, Boots: 1, Sweeps: true}

// runReference is the reference variant's program: its main runs [Run]
// with a context that SIGTERM or SIGINT ends, and exits 0 once Run has
// returned.
func runReference(p Proc, s Store, path string, cfg Config) error {
	if err := cfg.ValidateDeadline(); err != nil {
		return err
	}
	return untilSignal(p, func(ctx context.Context) error {
		return Run(ctx, s, cfg, RunOptions{Proc: p, Dir: filepath.Dir(path)})
	})
}

// ErrUnknownVariant is returned by LookupVariant.
var ErrUnknownVariant = errors.New("unknown variant")

// registryMu guards variants, which Register extends.
var registryMu sync.Mutex

// Register adds a variant, so that the simulator, the checker and the
// command line can run it by name: a user's proposed fix plugs in without
// editing leaselab. Names must be new and non-empty, and NewStore set.
func Register(v Variant) error {
	registryMu.Lock()
	defer registryMu.Unlock()
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
	registryMu.Lock()
	defer registryMu.Unlock()
	return append([]Variant(nil), variants...)
}

// VariantNames returns the names of every variant, comma-separated.
func VariantNames() string {
	registryMu.Lock()
	defer registryMu.Unlock()
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
	registryMu.Lock()
	defer registryMu.Unlock()
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
