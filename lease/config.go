package lease

import (
	"context"
	"fmt"
	"time"
)

// Config holds the post's three intervals and the callbacks.
type Config struct {
	// LeaseDuration is how long a lease stays valid after it is written
	// (the post's LEASE_DURATION, 9 s).
	LeaseDuration time.Duration
	// RenewInterval is how often the leader rewrites the expiry
	// (RENEW_INTERVAL, 3 s). It must be shorter than LeaseDuration.
	RenewInterval time.Duration
	// WatchInterval is how often a watcher reads the lease (WATCH_INTERVAL,
	// 3 s).
	WatchInterval time.Duration
	// RenewDeadline is how long after it starts a successful renewal (or
	// acquisition) a leader may still act; it steps down at this local
	// deadline unless it renews first. Only variants with a local deadline
	// (the reference) use it. 0: derived from LeaseDuration and
	// DriftBoundPPM (see RenewDeadlineInEffect).
	RenewDeadline time.Duration
	// DriftBoundPPM is the drift bound the algorithm is configured for:
	// how far, in parts per million, two processes' monotonic clocks may
	// disagree on the length of an interval. 0 means the reference's
	// default of 1% (10000 ppm).
	DriftBoundPPM int64
	// Poll makes the reference's watchers poll the store every
	// WatchInterval even when the process can be told of changes to the
	// lock's directory: for stores that are not files there (Redis, etcd,
	// SQL), whose changes no directory notification reports.
	Poll bool
	// Callbacks are told of leadership changes.
	Callbacks Callbacks
}

// MinInterval is the shortest renew or watch interval a Config may have
// (Validate): a process that renews or reads every microsecond spins (a
// probe ran -renew 1us -watch 1us: 93% of a core, 6,000 log lines a
// second).
const MinInterval = time.Millisecond

// MinRenewTime is the least time a renewal may take without costing its
// leader the term (ValidateDeadline): the renew deadline must exceed the
// renew interval by the longer of the renew interval and MinRenewTime, so
// that a leader has two renewals before its deadline and a renewal of
// several fsyncs has time to finish. (A probe ran a 60 ms lease renewed every
// 5 ms: a deadline of 8.8 ms, and 25 terms lost in 5 s to slow writes.)
const MinRenewTime = 50 * time.Millisecond

// DefaultDriftPPM is the drift bound the reference variant assumes unless
// told otherwise: 1%, a hundred times what NTP-disciplined or even free-
// running quartz clocks drift, and still a small margin on a 9 s lease.
const DefaultDriftPPM = 10_000

// deadlineSlack is subtracted from the longest safe deadline, so that a
// leader stops with time to spare for the system call that it stops after.
const deadlineSlack = 50 * time.Millisecond

// DriftBound returns the drift bound in effect, in parts per million:
// DriftBoundPPM, or DefaultDriftPPM when it is 0.
func (c Config) DriftBound() int64 {
	if c.DriftBoundPPM == 0 {
		return DefaultDriftPPM
	}
	return c.DriftBoundPPM
}

// DriftLag is how much longer than LeaseDuration, in true time, a watcher
// whose clock runs slow by the drift bound ρ waits out a lease on it:
// LeaseDuration·ρ/(1−ρ) (91 ms for 9 s at 1%).
func (c Config) DriftLag() time.Duration {
	rho := c.DriftBound()
	if rho >= 1_000_000 {
		return c.LeaseDuration // a clock that may stop: no bound; a lease more
	}
	l, d := int64(c.LeaseDuration), 1_000_000-rho
	return time.Duration(l/d*rho + l%d*rho/d) // l·ρ/d without overflow
}

// SafeDeadline is the longest renew deadline that keeps a leader's
// leadership strictly inside the lease as any watcher measures it: a
// watcher takes over LeaseDuration after it saw the leader's write, on a
// clock that may run up to the drift bound fast; the leader's deadline runs
// from before that write, on a clock that may run up to the drift bound
// slow. So deadline/(1-rho) < lease/(1+rho).
func (c Config) SafeDeadline() time.Duration {
	rho := c.DriftBound()
	return time.Duration(int64(c.LeaseDuration) / (1_000_000 + rho) * (1_000_000 - rho))
}

// RenewDeadlineInEffect returns the renew deadline in effect: RenewDeadline, or the
// safe deadline less a small slack.
func (c Config) RenewDeadlineInEffect() time.Duration {
	if c.RenewDeadline != 0 {
		return c.RenewDeadline
	}
	return c.SafeDeadline() - deadlineSlack
}

// ValidateDeadline checks the inequalities a variant with a local deadline
// relies on, and names the one that fails.
func (c Config) ValidateDeadline() error {
	if err := c.Validate(); err != nil {
		return err
	}
	rho := c.DriftBound()
	if rho < 0 || rho >= 1_000_000 {
		return fmt.Errorf("drift bound %d ppm must be at least 0 and below 1000000", rho)
	}
	d := c.RenewDeadlineInEffect()
	switch {
	case c.RenewDeadline < 0:
		return fmt.Errorf("renew deadline %v must be positive (0: the safe deadline less a slack)", c.RenewDeadline)
	case d <= 0:
		return fmt.Errorf("drift bound %d ppm leaves no margin: lease %v x (1-rho)/(1+rho) = %v is not longer than the slack %v",
			rho, c.LeaseDuration, c.SafeDeadline(), deadlineSlack)
	case d >= c.SafeDeadline():
		return fmt.Errorf("renew deadline %v must be shorter than lease %v x (1-rho)/(1+rho) = %v for drift bound %d ppm, or a watcher may take over while the leader still acts",
			d, c.LeaseDuration, c.SafeDeadline(), rho)
	case c.RenewInterval >= d:
		return fmt.Errorf("renew interval %v must be shorter than the renew deadline %v, or the leader steps down before it renews", c.RenewInterval, d)
	case d-c.RenewInterval < max(c.RenewInterval, MinRenewTime):
		return fmt.Errorf("renew deadline %v leaves a renewal only %v after the renew interval %v; want at least %v (the renew interval, and %v at least), or one slow or failed renewal costs the term: a longer lease or a shorter renew interval",
			d, d-c.RenewInterval, c.RenewInterval, max(c.RenewInterval, MinRenewTime), MinRenewTime)
	}
	return nil
}

// Callbacks follow client-go's leaderelection. They are called from the
// elector's own activities and must not block: start work with [Proc.Go].
// Under [Run] on the real OS (RunOptions.Proc nil) two may: OnStartedLeading
// runs on a goroutine of its own and may block until its context is done,
// and OnStoppedLeading, called once OnStartedLeading has returned, may
// wait for the work to stop (the release comes after it). No callback's
// panic is recovered: under Run on the real OS, one in OnStartedLeading
// ends the process (its goroutine's panic), as client-go's does, and the
// lease is left to expire. One on Run's goroutine (OnError, OnNewLeader,
// OnStoppedLeading) comes out of Run, the lease left to expire and the
// leader's context done first.
type Callbacks struct {
	// OnStartedLeading is called when this process becomes leader. ctx is
	// cancelled when leadership ends.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called when this process stops leading.
	OnStoppedLeading func()
	// OnNewLeader is called when the observed holder changes, this process
	// included: the reference calls it when it leads and when it reads a
	// record of a holder other than the one it last named; flock, whose
	// watchers wait in the kernel and read no record, only when it leads.
	OnNewLeader func(holder int64)
	// OnError is called (by the reference algorithm) with every store error
	// that is none of the contract's outcomes for its operation (a read's
	// missing record, a create's existing record, a write's conflict): an
	// I/O error, an unreachable, hung or refusing server, a write's
	// ENOENT. op is the Store method ("read", "create", "renew",
	// "takeover", "release"). The algorithm goes on: it retries, and a
	// leader that cannot renew steps down at its local deadline. It must
	// not block.
	OnError func(op string, err error)
}

// DefaultConfig returns the post's intervals: a 9 s lease renewed every 3 s,
// watched every 3 s.
func DefaultConfig() Config {
	return Config{LeaseDuration: 9 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
}

// Validate reports the first problem with c, or nil.
func (c Config) Validate() error {
	switch {
	case c.LeaseDuration <= 0 || c.RenewInterval <= 0 || c.WatchInterval <= 0:
		return fmt.Errorf("lease, renew and watch intervals must be positive (got lease %v, renew %v, watch %v)",
			c.LeaseDuration, c.RenewInterval, c.WatchInterval)
	case c.RenewInterval < MinInterval || c.WatchInterval < MinInterval:
		return fmt.Errorf("renew %v and watch %v intervals must be at least %v: more often, a process does little but its system calls and log lines",
			c.RenewInterval, c.WatchInterval, MinInterval)
	case c.LeaseDuration <= c.RenewInterval:
		return fmt.Errorf("lease %v must be longer than the renew interval %v, or the lease lapses between renewals",
			c.LeaseDuration, c.RenewInterval)
	case c.LeaseDuration > MaxTTLMillis*time.Millisecond:
		// A record states its lease, and a reader takes a longer one for
		// a record no writer makes (ParseRecord): it would wait out its
		// own lease and take over from a live holder.
		return fmt.Errorf("lease %v is longer than the %v a lease record may state", c.LeaseDuration, time.Duration(MaxTTLMillis)*time.Millisecond)
	}
	return nil
}
