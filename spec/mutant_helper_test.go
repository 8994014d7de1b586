package spec

import "github.com/leaselab/leaselab/lease"

// runFunc is a variant's Run.
type runFunc = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error

// registerWrapped registers variant base under name, its Run wrapped by
// wrap: a test's mutant. Tests register theirs when they need them (under
// sync.OnceFunc), so that tests iterating over every variant do not meet
// them.
func registerWrapped(base, name, summary string, wrap func(run runFunc) runFunc) {
	v, err := lease.LookupVariant(base)
	if err != nil {
		panic(err)
	}
	v.Name, v.Summary, v.Run = name, summary, wrap(v.Run)
	if err := lease.Register(v); err != nil {
		panic(err)
	}
}
