package lease

import (
	"fmt"
	"strings"
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
}

// Variants returns every variant, in a fixed order.
func Variants() []Variant { return append([]Variant(nil), variants...) }

// VariantNames returns the names of every variant, comma-separated.
func VariantNames() string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

// LookupVariant returns the named variant.
func LookupVariant(name string) (Variant, error) {
	for _, v := range variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("%w %q (valid: %s)", ErrUnknownVariant, name, VariantNames())
}

// Main runs variant v as the post's program does, as process p contending
// for the lock file at path. It returns only through p.Exit.
func Main(p Proc, v Variant, path string, cfg Config) error {
	e, err := NewElector(p, v.NewStore(p, path), cfg)
	if err != nil {
		return err
	}
	e.Run()
	return nil
}
