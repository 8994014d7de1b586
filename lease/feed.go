package lease

import (
	"context"
	"time"
)

// ChangeFeed is an optional ability of a [Store]: it is told when its
// record changes, through the server's own mechanism (an etcd watch, a
// Redis channel the writers publish on, PostgreSQL's LISTEN/NOTIFY,
// inotify on a SQLite database's directory), so that the reference's
// watchers learn of a release or a new version at once instead of at
// their next poll. [Run] and [NewReference] use it unless Config.Poll is
// set; the watch loop is the one the file store's inotify drives.
//
// A feed may lose a notice (a reconnect, a server restart, a subscription
// the server refused), deliver one late or twice, or deliver one before a
// read shows the change. None of that may cost liveness, so a watcher on a
// feed still wakes at the instant the lease it saw can expire, and reads
// at least every WatchInterval besides: a lost notice costs at most the
// poll it replaced. A feed that cannot subscribe at all reports why once
// (each store's OnError) and leaves its watchers polling.
type ChangeFeed interface {
	// Changes returns how many notices the feed has had so far and a
	// channel that is closed at the next one.
	Changes() (n uint64, next <-chan struct{})
}

// ReleaseHint is an optional ability of a [ChangeFeed] or a
// [StoreNotifier] whose notices say which of them announce a release (the
// record deleted, or marked released, or dropped by the server at its
// TTL): a watcher woken by one tries to create the record at once, instead
// of reading it first, which takes a round trip off every hand-over. It is
// a hint and no more: Create publishes only where there is no live record,
// so a hint that is wrong (a notice delivered late, twice, or before the
// release is visible; another watcher's create first) costs one failed
// Create, and the watcher reads as it would have.
type ReleaseHint interface {
	// Released reports whether the latest notice is one that announced a
	// release, and came after token (a count Changes or ChangeToken
	// returned).
	Released(token uint64) bool
}

var _ ReleaseHint = (*Notices)(nil)

// Vanishing is an optional ability of a [Store] (or of one its Unwrap
// returns) whose server can drop a live record on its own, without a
// release: it expires records on the machine's wall clock, which a step
// forward (NTP, an operator) moves (Redis's PX, the SQL store's
// clock_timestamp()), or evicts them (Redis under maxmemory with a
// volatile-* policy). A record such a store no longer has may still be
// held: its holder leads until its next renewal fails. The reference
// therefore waits out, on its own clock from when it saw it, a record it
// saw live that is gone without a release it knows of: a Read that says
// so (ErrReleased), or a release notice (ReleaseHint). (A probe: a Redis
// and a PostgreSQL server whose clock stepped forward 8 s made a watcher
// lead 2 s beside the leader; an eviction, 0.5 s.) Its Create says which
// record it took the place of, when that one went so (Record.Vanished): a
// record made and dropped between a process's read and its create is
// never seen, and is waited out all the same. etcd's lessor counts on the
// monotonic clock and evicts nothing: its expiry elects.
type Vanishing interface {
	// Vanishes reports whether the store's records can go without a
	// release.
	Vanishes() bool
}

// vanishes reports whether s, or a store it wraps, is Vanishing.
func vanishes(s Store) bool {
	for ; s != nil; s = unwrapped(s) {
		if v, ok := s.(Vanishing); ok {
			return v.Vanishes()
		}
	}
	return false
}

// unwrapped is the store s wraps (a wrapper's Unwrap() Store), or nil.
func unwrapped(s Store) Store {
	if u, ok := s.(interface{ Unwrap() Store }); ok {
		return u.Unwrap()
	}
	return nil
}

// notifierOnly is a Notifier that is no ContextWaiter: its wait runs to a
// change or its deadline whatever ctx does.
type notifierOnly struct{ Notifier }

func (n notifierOnly) WaitChangeContext(_ context.Context, dir string, token uint64, until time.Duration) bool {
	return n.WaitChange(dir, token, until)
}

// feedWaiter waits on a store's ChangeFeed with a process's monotonic
// clock, and never longer than poll: the reads that bound what a lost
// notice costs.
type feedWaiter struct {
	p    Proc
	f    ChangeFeed
	poll time.Duration
}

func (w feedWaiter) ChangeToken(string) uint64 {
	n, _ := w.f.Changes()
	return n
}

// Released implements ReleaseHint when the feed does.
func (w feedWaiter) Released(token uint64) bool {
	h, ok := w.f.(ReleaseHint)
	return ok && h.Released(token)
}

func (w feedWaiter) WaitChangeContext(ctx context.Context, _ string, token uint64, until time.Duration) bool {
	n, next := w.f.Changes()
	if n != token {
		return true
	}
	wait := min(until-w.p.Mono(), w.poll)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-next:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// StoreNotifier is what a watcher waits on for a change: a [Notifier]
// whose wait a context cuts short. A [Store] may be one itself: the
// simulator's servers are, whose notices the simulated world delivers and
// waits for (a real store is a [ChangeFeed] instead); its wait, as a
// feed's, ends at the latest a poll interval after it began.
type StoreNotifier interface {
	ChangeToken(dir string) uint64
	WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool
}

// watchSource is what a reference's watchers wait on: the store's notices
// when it has them (or a store it wraps: a wrapper's Unwrap() Store
// method names it) and cfg.Poll is not set, else the file system's
// changes to dir when the process has them (dir not ""), else nothing
// (nil: they poll).
func watchSource(p Proc, s Store, dir string, cfg Config) StoreNotifier {
	if cfg.Poll {
		return nil
	}
	for ; s != nil; s = unwrapped(s) {
		switch n := s.(type) {
		case StoreNotifier:
			return n
		case ChangeFeed:
			return feedWaiter{p: p, f: n, poll: cfg.WatchInterval}
		}
	}
	if dir == "" {
		return nil
	}
	if cw, ok := p.(StoreNotifier); ok {
		return cw
	}
	if n, ok := p.(Notifier); ok {
		return notifierOnly{n}
	}
	return nil
}
