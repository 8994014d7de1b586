package lease

import (
	"context"
	"sync"
	"time"
)

// Term is a leadership term: its fencing epoch and local deadline. The
// context given to OnStartedLeading carries it (TermOf).
type Term struct {
	clock    Clock
	epoch    int64
	mu       sync.Mutex
	deadline time.Duration
	lapsed   bool  // the deadline passed once: the term is over for good
	ended    error // why the term's context ended (end), once it has
	// moved, if set, moves the timer that ends the user's context at
	// the deadline (MonoTimer) when the deadline moves.
	moved func(time.Duration)
	// done, if set, is the Done of the term's context: closed when the
	// term ends before its deadline (a shutdown, a lost lease).
	done <-chan struct{}
	// deadlineOnly: Valid looks at the deadline alone (a mutant's).
	deadlineOnly bool
}

// Epoch is the term's fencing epoch: pass it with every action on a
// resource that can reject stale epochs.
func (t *Term) Epoch() int64 { return t.epoch }

// Valid reports whether the term still holds: its local deadline has not
// passed and it has not ended otherwise (a shutdown, a lost lease), as
// its context's Err says: check it before acting. (An action already
// under way when it ends is what fencing is for.) Once it has reported
// false it always does: a renewal that lands after the deadline does not
// revive the term. (Until 2026-12-06 it looked at the deadline only, and
// said true after a SIGTERM's release until the deadline, while the next
// leader led: a probe.)
func (t *Term) Valid() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended != nil && !t.deadlineOnly {
		return false
	}
	if t.done != nil && !t.deadlineOnly {
		select {
		case <-t.done:
			return false
		default:
		}
	}
	return t.inTimeLocked()
}

// inTime reports whether the term's local deadline has not passed,
// whether or not the term has ended otherwise: what a release after the
// step-down asks (the lease is still this process's to give back only
// until then).
func (t *Term) inTime() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inTimeLocked()
}

func (t *Term) inTimeLocked() bool {
	if !t.lapsed && t.clock.Mono() >= t.deadline {
		t.lapsed = true
	}
	return !t.lapsed
}

// end latches, the first time it is called, why the term's context ends:
// DeadlineExceeded if the deadline has passed, else Canceled; and returns
// it.
func (t *Term) end() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended == nil {
		if !t.lapsed && t.clock.Mono() >= t.deadline {
			t.lapsed = true
		}
		t.ended = context.Canceled
		if t.lapsed {
			t.ended = context.DeadlineExceeded
		}
	}
	return t.ended
}

// extend moves the term's deadline to d, unless the term has lapsed; it
// reports whether it did.
func (t *Term) extend(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lapsed || t.clock.Mono() >= t.deadline {
		t.lapsed = true
		return false
	}
	t.deadline = d
	if t.moved != nil {
		t.moved(d) // (under the lock: a timer firing now sees the new deadline)
	}
	return true
}

type termKey struct{}

// termContext is a leader's context: done when the leader steps down,
// and, whatever the algorithm is doing (a store call may hang), reporting
// DeadlineExceeded from Err once the term's local deadline has passed. A
// user who checks ctx.Err() before acting never acts on a lapsed term.
type termContext struct {
	context.Context
	term *Term
}

// Err is DeadlineExceeded once the term's deadline has passed, Canceled
// if the term ended before it (a lost lease, a shutdown), and, once
// non-nil, the same at every call: the reason is latched when the term
// ends (Term.end), so that the timer's cancellation at the deadline does
// not turn it into Canceled, nor a deadline passing after a shutdown into
// DeadlineExceeded (a probe saw Canceled after the deadline).
func (c termContext) Err() error {
	if c.Context.Err() == nil {
		if !c.term.Valid() {
			return c.term.end() // (the deadline's timer not run yet, or a step-down under way)
		}
		return nil
	}
	return c.term.end()
}

// TermOf returns the leadership term carried by ctx.
func TermOf(ctx context.Context) (*Term, bool) {
	t, ok := ctx.Value(termKey{}).(*Term)
	return t, ok
}
