package lease_test

import (
	"context"
	"errors"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// storeMutants are the catalogue's entries for the etcd and sql variants
// (helper-111's probe, 2026-12-07): mistakes of the real adapters
// (lease/redisstore, lease/etcdstore, lease/sqlstore) as the simulator's
// stores show them, and mistakes of the reference the catalogue ran over
// Redis only, run over etcd's and the SQL store's models.
var storeMutants = []mutant{
	{
		name: "sql~expired-reads-released", base: "sql",
		mistake:    "a row whose expiry stamp has passed reads as released (lease.ErrReleased), not as dropped (lease.VanishedError): a watcher takes a record a wall-clock step expired early for a release, and leads beside its holder",
		property:   spec.NoWedge,
		newStore:   serverStore("sql", func(p lease.Proc, s lease.Store) lease.Store { return expiredReleased{s} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
	},
	{
		name: "sql~create-forgets-dropped", base: "sql",
		mistake:    "a create over a row that expired without a release does not name it (Record.Vanished and its lease and nonce left 0): its creator leads at once over a record a wall-clock step dropped while its holder led",
		property:   spec.ExclusiveLeadership,
		newStore:   serverStore("sql", func(p lease.Proc, s lease.Store) lease.Store { return forgetsDropped{s} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
		confirm:    &confirmation{faults: "all", sched: "mixed", runs: 40000},
		missed:     "as redis~dropped-at-once on Redis: it needs a wall-clock step right after another's create while this process's create is in flight (the row that create made dropped before this one lands), 4 runs in the default command's first 40,000, none of its first 10,000 (confirmed at run 20,219 of -faults all, mixed)",
	},
	{
		name: "etcd~hint-always", base: "etcd",
		mistake:  "the watch's Released says a release whatever came after the token, no notice included (a Released that returns true): a watcher woken by its poll tries a create before each read, and each failed create (the live record's) doubles its lost-race back-off, which delays the takeover of a dead leader's record past its lease",
		property: spec.NoWedge,
		newStore: serverStore("etcd", func(p lease.Proc, s lease.Store) lease.Store {
			return hinting{s, func(lease.StoreNotifier, uint64) bool { return true }}
		}),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
	},
	{
		name: "etcd~every-notice-release", base: "etcd",
		mistake:    "every event of the watch is said to be a release (lease.ReleaseHint), not only a DELETE: a watcher woken by a renewal's notice tries a create before it reads",
		property:   spec.NoWedge,
		newStore:   serverStore("etcd", func(p lease.Proc, s lease.Store) lease.Store { return hinting{s, anyNotice} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
		harmless:   hintHarmless,
	},
	{
		name: "etcd~hint-ignores-token", base: "etcd",
		mistake:    "Released reports whether the latest notice was a release, not whether it came after the watcher's token: a release long past, before the record now read, is taken for a fresh one",
		property:   spec.NoWedge,
		newStore:   serverStore("etcd", func(p lease.Proc, s lease.Store) lease.Store { return hinting{s, latestRelease} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
		harmless:   hintHarmless,
	},
	{
		name: "sql~every-notice-release", base: "sql",
		mistake:    "every notice (LISTEN's, or the SQLite file's) is said to be a release (lease.ReleaseHint), not only the one a release's statement sends: a watcher woken by a renewal tries a create before it reads",
		property:   spec.NoWedge,
		newStore:   serverStore("sql", func(p lease.Proc, s lease.Store) lease.Store { return hinting{s, anyNotice} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
		harmless:   "the reference takes no release hint on a store whose records vanish (the SQL store's expire on the database's wall clock): it reads first whatever the hint says",
	},
	{
		name: "etcd~release-rereads", base: "etcd",
		mistake:    "a release compares against a fresh read, not the record the term wrote (a delete of whatever is there): a leader paused between its read and its release deletes its successor's record, and a third process leads beside it",
		property:   spec.ExclusiveLeadership,
		run:        serverRun(0, func(_ lease.Proc, s lease.Store, _ lease.Config) lease.Store { return releaseRereads{s} }),
		exploreWhy: "the documented exploration bounds run the file variants",
	},
	{
		name: "sql~stale-release-ok", base: "sql",
		mistake:    "a release whose compare-and-set finds another's row (lease.ErrConflict) says it worked: the UPDATE's zero rows affected not checked",
		property:   spec.LinearizableStore,
		newStore:   serverStore("sql", func(p lease.Proc, s lease.Store) lease.Store { return conflictFreeRelease{s} }),
		run:        serverRun(0, nil),
		exploreWhy: "the documented exploration bounds run the file variants",
	},
	{
		name: "etcd~renew-error-ignored", base: "etcd",
		mistake:    "a renewal that fails (the server unreachable) extends the local deadline as if it had succeeded: the leader outlives its lease, which the server expires",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeRenewErrorIgnored, nil),
		exploreWhy: "needs renewals failing for a lease; explore injects one failed request",
	},
	{
		name: "sql~vanished-at-once", base: "sql",
		mistake:    "a record seen live that the server dropped without a release (its expiry stamp passed early on a wall clock that stepped forward) is taken for no lease at once",
		property:   spec.NoWedge,
		run:        serverRun(lease.MistakeVanishedAtOnce, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none draws a server's wall-clock expiry",
	},
	{
		name: "etcd~unknown-write-forgotten", base: "etcd",
		mistake:    "a create or takeover whose reply was lost (it took effect) is not remembered by its nonce: the watcher waits its own record out as another's",
		property:   spec.StableLeadership,
		run:        serverRun(lease.MistakeUnknownWriteForgotten, nil),
		exploreWhy: "the documented exploration bounds run the file variants: none loses a server's reply",
		confirm:    &confirmation{faults: "all", sched: "mixed", runs: 20000, probe: waitsOutOwnRecord, probeName: "own record waited out"},
	},
	{
		name: "sql~no-cancel-lost", base: "sql",
		mistake:    "a renewal that finds another's record steps down (its role, the log line, OnStoppedLeading) but leaves the user's context live",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeNoCancelLost, nil),
		exploreWhy: "it needs the server's record to go before the term's deadline (a step of the server's wall clock, a loss), which no documented bound has",
	},
	{
		name: "etcd~no-cancel-lost", base: "etcd",
		mistake:    "a renewal that finds another's record steps down (its role, the log line, OnStoppedLeading) but leaves the user's context live",
		property:   spec.HonestRole,
		run:        serverRun(lease.MistakeNoCancelLost, nil),
		exploreWhy: "it needs the server's record to go before the term's deadline, which no documented bound has",
	},
}

// expiredReleased: a read that finds a row expired without a release says
// it was released.
type expiredReleased struct{ lease.Store }

func (s expiredReleased) Read() (lease.Record, error) {
	rec, err := s.Store.Read()
	if errors.Is(err, lease.ErrVanished) {
		return lease.Record{}, lease.ErrReleased
	}
	return rec, err
}

func (s expiredReleased) Unwrap() lease.Store { return s.Store }

// forgetsDropped: a create does not name the record it took the place of.
type forgetsDropped struct{ lease.Store }

func (s forgetsDropped) Create(h int64, ttl time.Duration) (lease.Record, error) {
	rec, err := s.Store.Create(h, ttl)
	rec.Vanished, rec.VanishedTTL, rec.VanishedNonce = 0, 0, 0
	return rec, err
}

func (s forgetsDropped) Unwrap() lease.Store { return s.Store }

// hinting is a store whose Released is released: a ReleaseHint's
// mistakes.
type hinting struct {
	lease.Store
	released func(n lease.StoreNotifier, token uint64) bool
}

func (s hinting) notifier() lease.StoreNotifier { return s.Store.(lease.StoreNotifier) }

func (s hinting) ChangeToken(dir string) uint64 { return s.notifier().ChangeToken(dir) }

func (s hinting) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	return s.notifier().WaitChangeContext(ctx, dir, token, until)
}

func (s hinting) Released(token uint64) bool { return s.released(s.notifier(), token) }

func (s hinting) Unwrap() lease.Store { return s.Store }

// anyNotice: a notice came after token, whatever it announced.
func anyNotice(n lease.StoreNotifier, token uint64) bool { return n.ChangeToken("") > token }

// latestRelease: the latest notice was a release, whenever it came.
func latestRelease(n lease.StoreNotifier, _ uint64) bool {
	return n.(lease.ReleaseHint).Released(0)
}

// conflictFreeRelease: a release's conflict is reported as success.
type conflictFreeRelease struct{ lease.Store }

func (s conflictFreeRelease) Release(cur lease.Record) error {
	if err := s.Store.Release(cur); !errors.Is(err, lease.ErrConflict) {
		return err
	}
	return nil
}

func (s conflictFreeRelease) Unwrap() lease.Store { return s.Store }

// hintHarmless is why a release hint that is wrong is harmless on etcd.
const hintHarmless = "a hint is no more than that (lease.ReleaseHint): the create it prompts compares the key's absence, so a wrong one costs a failed create, a read and a lost race's first back-off (renewBackoff), which a notice that came after the token (a renewal's) makes only while the record is fresh"
