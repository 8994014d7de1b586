package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// The two configurations of MixedLeases: a long lease that leads and a
// short one that watches, as in a rolling change of -lease from 2.7 s to
// 0.9 s.
var (
	mixedLongConfig  = lease.Config{LeaseDuration: 2700 * time.Millisecond, RenewInterval: 900 * time.Millisecond, WatchInterval: 900 * time.Millisecond, Poll: true}
	mixedShortConfig = lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond, Poll: true}
)

const (
	// mixedSlow is how late every other renewal of the long lease lands:
	// the record then stays unchanged for 0.9 + 0.6 = 1.5 s, longer than
	// the short lease and its watch interval together, and still well
	// inside the long lease and its leader's deadline (2.6 s).
	mixedSlow = 600 * time.Millisecond
	// mixedLive is how long the long-lease leader leads, renewing, with
	// the short-lease process watching.
	mixedLive = 4500 * time.Millisecond
	// mixedWait bounds each wait for an elector to lead.
	mixedWait = 15 * time.Second
)

// MixedLeases is the real-server test of a rolling change of -lease: two
// electors (lease.Run) of one lease, each over its own client from open
// (holders 1 and 2; 3 reads), one with a 2.7 s lease renewed every 0.9 s,
// the other with a 0.9 s lease renewed (and watched) every 0.3 s. The long
// one leads first. Every other one of its
// renewals (the calls start every 0.9 s) lands 0.6 s late, so that the
// record stays unchanged for 1.5 s at a time: a watcher that waited its
// own 0.9 s lease would take over a lease whose leader still leads (and
// did, when the stores kept no lease). The short-lease watcher must not
// take over during 4.5 s of this, and must have read the 2.7 s lease in
// the record. Then the long-lease leader is cut off from the server
// (every call of its client fails, as if it were partitioned or stopped):
// the short one must take over no sooner than 2.7 s after the start of
// the leader's last successful write, and within a watch interval and a
// margin for a loaded machine after that; the record it writes states its
// 0.9 s lease. Give the clients a call timeout well under 0.9 s.
func MixedLeases(t *testing.T, open Open) {
	t.Helper()
	summary, err := runMixed(open)
	t.Log(summary)
	if err != nil {
		t.Fatal(err)
	}
}

// errCut is every call's error on a client cut off from its server.
var errCut = errors.New("storetest: cut off from the server")

// mixedLong is the long-lease leader's client: every other renewal slow,
// and every call failing once it is cut off.
type mixedLong struct {
	lease.Store
	mu        sync.Mutex
	renewals  int
	cut       bool
	lastStart time.Time     // the start of the last successful write
	lastEnd   time.Time     // its return
	maxGap    time.Duration // the longest between two successful writes' returns
}

func (g *mixedLong) isCut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cut
}

func (g *mixedLong) wrote(start time.Time) {
	end := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.lastEnd.IsZero() {
		g.maxGap = max(g.maxGap, end.Sub(g.lastEnd))
	}
	g.lastStart, g.lastEnd = start, end
}

func (g *mixedLong) Read() (lease.Record, error) {
	if g.isCut() {
		return lease.Record{}, errCut
	}
	return g.Store.Read()
}

func (g *mixedLong) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	start := time.Now()
	if g.isCut() {
		return lease.Record{}, errCut
	}
	rec, err := g.Store.Create(holder, ttl)
	if err == nil {
		g.wrote(start)
	}
	return rec, err
}

func (g *mixedLong) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	start := time.Now()
	g.mu.Lock()
	g.renewals++
	slow := g.renewals%2 == 0 && !g.cut
	g.mu.Unlock()
	if slow {
		time.Sleep(mixedSlow)
	}
	if g.isCut() {
		return lease.Record{}, errCut
	}
	rec, err := g.Store.Renew(cur, ttl)
	if err == nil {
		g.wrote(start)
	}
	return rec, err
}

func (g *mixedLong) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	start := time.Now()
	if g.isCut() {
		return lease.Record{}, errCut
	}
	rec, err := g.Store.Takeover(stale, holder, ttl)
	if err == nil {
		g.wrote(start)
	}
	return rec, err
}

func (g *mixedLong) Release(cur lease.Record) error {
	if g.isCut() {
		return errCut
	}
	return g.Store.Release(cur)
}

// mixedShort is the short-lease watcher's client: it notes the longest
// lease it read in a record of holder 1.
type mixedShort struct {
	lease.Store
	mu   sync.Mutex
	read time.Duration
}

func (s *mixedShort) Read() (lease.Record, error) {
	rec, err := s.Store.Read()
	if err == nil && rec.Holder == 1 {
		s.mu.Lock()
		s.read = max(s.read, rec.TTL)
		s.mu.Unlock()
	}
	return rec, err
}

// mixedEvents are the two electors' leadership changes, as their
// callbacks report them, the last instant each leader's term context was
// valid (its work checks ctx.Err() every millisecond, as a user's should
// before acting), and the store errors they report.
type mixedEvents struct {
	mu      sync.Mutex
	started [3]time.Time // by holder
	stopped [3]time.Time
	valid   [3]time.Time
	errs    []string
}

func (e *mixedEvents) callbacks(holder int) lease.Callbacks {
	return lease.Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.started[holder].IsZero() {
				e.started[holder] = time.Now()
			}
			go func() {
				for ctx.Err() == nil {
					now := time.Now()
					e.mu.Lock()
					e.valid[holder] = now
					e.mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			}()
		},
		OnStoppedLeading: func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.stopped[holder].IsZero() {
				e.stopped[holder] = time.Now()
			}
		},
		OnError: func(op string, err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			if !errors.Is(err, errCut) && len(e.errs) < 10 {
				e.errs = append(e.errs, fmt.Sprintf("holder %d %s: %v", holder, op, err))
			}
		},
	}
}

// lastValid is the last instant holder's term context was seen valid.
func (e *mixedEvents) lastValid(holder int) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.valid[holder]
}

func (e *mixedEvents) get(holder int) (started, stopped time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started[holder], e.stopped[holder]
}

func (e *mixedEvents) errorList() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) == 0 {
		return "none"
	}
	return strings.Join(e.errs, "; ")
}

// waitFor polls until f is true or mixedWait has passed.
func waitFor(f func() bool) bool {
	for end := time.Now().Add(mixedWait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if f() {
			return true
		}
	}
	return f()
}

// runMixed runs MixedLeases over open and returns what it saw, and the
// first property that failed.
func runMixed(open Open) (string, error) {
	long := &mixedLong{Store: open(1)}
	short := &mixedShort{Store: open(2)}
	observer := open(3)
	var ev mixedEvents
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	run := func(s lease.Store, cfg lease.Config, holder int) {
		cfg.Callbacks = ev.callbacks(holder)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lease.Run(ctx, s, cfg, lease.RunOptions{ID: holder}); err != nil {
				panic(err) // a config the tests chose
			}
		}()
	}
	run(long, mixedLongConfig, 1)
	if !waitFor(func() bool { s, _ := ev.get(1); return !s.IsZero() }) {
		return "", fmt.Errorf("the long-lease elector did not lead within %v (store errors: %s)", mixedWait, ev.errorList())
	}
	run(short, mixedShortConfig, 2)
	time.Sleep(mixedLive)
	longStarted, longStopped := ev.get(1)
	shortStarted, _ := ev.get(2)
	long.mu.Lock()
	maxGap := long.maxGap
	long.mu.Unlock()
	short.mu.Lock()
	read := short.read
	short.mu.Unlock()
	summary := fmt.Sprintf("live: the longest the record stayed unchanged %v, the lease the short-lease watcher read %v",
		maxGap.Round(time.Millisecond), read)
	switch {
	case !shortStarted.IsZero():
		return summary, fmt.Errorf("the short-lease watcher (%v) took over %v after the long-lease leader (%v, renewing) started leading: it waited its own lease, not the record's (it read %v)",
			mixedShortConfig.LeaseDuration, shortStarted.Sub(longStarted).Round(time.Millisecond), mixedLongConfig.LeaseDuration, read)
	case !longStopped.IsZero():
		return summary, fmt.Errorf("the long-lease leader stepped down while it could renew (store errors: %s): the test proves nothing", ev.errorList())
	case maxGap <= mixedShortConfig.LeaseDuration+mixedShortConfig.WatchInterval:
		return summary, fmt.Errorf("the record never stayed unchanged longer than %v (the longest: %v): the test proves nothing",
			mixedShortConfig.LeaseDuration+mixedShortConfig.WatchInterval, maxGap)
	case read != mixedLongConfig.LeaseDuration:
		return summary, fmt.Errorf("the short-lease watcher read a lease of %v in the long-lease leader's records, want %v", read, mixedLongConfig.LeaseDuration)
	}

	// The leader is cut off: the short-lease process takes over after the
	// long lease, not its own.
	long.mu.Lock()
	long.cut = true
	long.mu.Unlock()
	if !waitFor(func() bool { s, _ := ev.get(2); return !s.IsZero() }) {
		return summary, fmt.Errorf("the short-lease watcher did not take over within %v of the cut (store errors: %s)", mixedWait, ev.errorList())
	}
	shortStarted, _ = ev.get(2)
	long.mu.Lock()
	last := long.lastStart
	long.mu.Unlock()
	after := shortStarted.Sub(last)
	longValid := ev.lastValid(1)
	summary += fmt.Sprintf("; cut off: the short-lease process led %v after the start of the long-lease leader's last write, whose term was last valid %v after it",
		after.Round(time.Millisecond), longValid.Sub(last).Round(time.Millisecond))
	if !longValid.Before(shortStarted) {
		return summary, fmt.Errorf("the long-lease leader's term was still valid %v after the short-lease process started leading",
			longValid.Sub(shortStarted))
	}
	// A server's own expiry of the record (Redis PX, an etcd lease, the
	// SQL expiry column), timed by the server's clock from the write's
	// commit, may let the watcher create the record a hair before its own
	// clock says: 10 ms of tolerance between the two clocks.
	const clocks = 10 * time.Millisecond
	if after < mixedLongConfig.LeaseDuration-clocks {
		return summary, fmt.Errorf("the short-lease watcher led %v after the long-lease leader's last write started: before its %v lease, while it could still lead",
			after, mixedLongConfig.LeaseDuration)
	}
	// A watch interval, and two seconds for a loaded machine.
	if limit := mixedLongConfig.LeaseDuration + mixedShortConfig.WatchInterval + 2*time.Second; after > limit {
		return summary, fmt.Errorf("the short-lease watcher led %v after the long-lease leader's last write started: more than %v", after, limit)
	}
	// The record states the new leader's own lease from its first
	// renewal on; its create may have stated the longer lease of the
	// record the server dropped, which a reader must wait out
	// (lease.RaisedTTL).
	var rec lease.Record
	var err error
	if !waitFor(func() bool {
		rec, err = observer.Read()
		return err == nil && rec.Holder == 2 && rec.TTL == mixedShortConfig.LeaseDuration
	}) {
		return summary, fmt.Errorf("after the takeover, a third client reads %+v, %v; want holder 2 stating a %v lease", rec, err, mixedShortConfig.LeaseDuration)
	}
	return summary, nil
}
