package sim

import (
	"context"
	"math/bits"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// workloadEvery is the mean interval between a leader's workload actions
// on the fenced resource.
const workloadEvery = 500 * time.Millisecond

// leaderCtx is a context the process's OnStartedLeading was given, as the
// user's code sees it.
type leaderCtx struct {
	ctx       context.Context
	nth       int   // which of the process's contexts (trace.Event.Context)
	epoch     int64 // its term's epoch as given (0: no Term)
	lastLive  int64 // the last instant it was seen live
	liveSteps int   // how many events the trace held then (trace.Event.LiveSteps)
	handed    int   // how many events the trace held when the context was handed over
}

// endedCtx is a leader context seen done, with its term's epoch as it was
// given (0: no Term).
type endedCtx struct {
	ctx     context.Context
	nth     int
	epoch   int64
	revived bool // recorded revived (lookAt: once is enough)
}

// maxEnded is how many of a process's ended contexts lookBack looks at:
// the latest, so that a process that leads thousands of terms (a
// flapping mutant) does not look at every earlier one at each.
const maxEnded = 16

// keepEnded remembers an ended context for lookBack, forgetting the
// oldest past maxEnded.
func (p *proc) keepEnded(e endedCtx) {
	if len(p.ended) == maxEnded {
		copy(p.ended, p.ended[1:])
		p.ended = p.ended[:maxEnded-1]
	}
	p.ended = append(p.ended, e)
}

// lookBack is the user's code that still holds the contexts of its
// earlier terms (an action decided in one, delayed) looking at them as a
// new term begins: an ended term stays ended (its context done, its
// Term's Valid false) and keeps its epoch; one that looks live again, or
// whose Term now says another epoch, is recorded (EvTermRevived). (A
// probe's reference that reused one Term for every term passed: an
// action delayed across the gap would pass its check and carry the new
// term's epoch, which the fenced resource accepts.)
func (p *proc) lookBack(act int16) {
	for i := range p.ended {
		p.lookAt(&p.ended[i], act)
	}
}

// lookAt looks at ended context e as the user's code does: by all three
// ways (live) and by its Term's epoch. One that looks live again, or says
// another epoch, is recorded (EvTermRevived), once.
func (p *proc) lookAt(e *endedCtx, act int16) {
	if e.revived {
		return
	}
	live := p.live(e.ctx)
	epoch := e.epoch
	if term, ok := lease.TermOf(e.ctx); ok {
		epoch = term.Epoch()
	}
	if live || epoch != e.epoch {
		e.revived = true
		p.w.record(trace.TermRevived(int16(p.idx), act, e.nth, epoch, live))
	}
}

// lookAgain is the user's code looking, as its process runs, at the
// context of its latest ended term between terms too (lookBack looks only
// as a new term begins, and a term that came back for a while and ended
// again before the next, or in a process that never led again, went
// unseen: a review's Term valid again 2 to 4 s after its end was caught
// in 1 to 42 runs of 3,000). Once an instant, at the first step of the
// process then; the latest ended context only (the earlier ones are
// looked at as each term begins). The look is silent, as the world's looks at live contexts are: it changes no
// schedule.
func (p *proc) lookAgain(act int16) {
	if p.lookedAt == p.w.now+1 {
		return
	}
	p.lookedAt = p.w.now + 1
	p.lookAt(&p.ended[len(p.ended)-1], act)
}

// observeLeadership wraps cb so that the world sees leadership as the
// user's code does: each OnStartedLeading is recorded (EvStarted) and its
// context watched at every step of the world while the process runs
// (observe) until it is seen done (EvStopped, which says where, in time
// and in steps, it was last seen live). For a variant with epochs, the leader also runs a
// workload: at random instants, whenever its context is live (whatever the
// algorithm's role, Lead or Term.Valid say), it acts on the world's fenced
// resource with its term's epoch, as a user's code acts on a storage
// service that rejects stale epochs.
func (p *proc) observeLeadership(cb lease.Callbacks, workload bool) lease.Callbacks {
	o := p.w.leadObserver(p)
	o.user, o.workload = cb, workload
	cb.OnStartedLeading, cb.OnStoppedLeading, cb.OnError, cb.OnNewLeader = o.started, o.stopped, o.onError, o.told
	return cb
}

// leadObserver is observeLeadership's wrappers of a process's callbacks:
// the user's, and whether the leader runs a workload, are fields, so that
// the wrappers are made once for each process of a spare world's slab
// and not four allocations a process a run (World.leadObserver).
type leadObserver struct {
	p        *proc
	user     lease.Callbacks
	workload bool
	started  func(ctx context.Context)
	stopped  func()
	onError  func(op string, err error)
	told     func(holder int64)
}

func newLeadObserver(p *proc) *leadObserver {
	o := &leadObserver{p: p}
	o.started = func(ctx context.Context) {
		a := p.w.cur
		term, hasTerm := lease.TermOf(ctx)
		var epoch int64
		if hasTerm {
			epoch = term.Epoch()
		}
		p.contexts++
		nth := p.contexts
		p.w.record(trace.Started(int16(p.idx), int16(a.id), epoch).OfContext(nth))
		p.lookBack(int16(a.id))
		if p.live(ctx) {
			p.leaders = append(p.leaders, leaderCtx{ctx: ctx, nth: nth, epoch: epoch, lastLive: p.w.now, liveSteps: len(p.w.tr.Events), handed: len(p.w.tr.Events)})
			p.w.leading++
			p.w.leaders.add(p.idx)
		} else {
			// Done before the user could act on it (a term whose deadline
			// passed while the process was paused): no leadership at all.
			p.w.record(trace.Stopped(int16(p.idx), -1, -1, false).OfContext(nth))
			p.keepEnded(endedCtx{ctx: ctx, nth: nth, epoch: epoch})
		}
		if o.workload && hasTerm {
			p.Go("work", func() {
				for p.w.touch(objKey{kind: objLead}, false); p.live(ctx); p.w.touch(objKey{kind: objLead}, false) {
					p.fence(epoch)
					p.Sleep(p.w.workloadPause())
				}
			})
			p.acts[len(p.acts)-1].isolated = true // the simulator's own code (the activity just made)
		}
		if started := o.user.OnStartedLeading; started != nil {
			started(ctx)
		}
	}
	// OnStoppedLeading is recorded (EvStoppedCallback), with whether a
	// leader context the user was given is still live as it is called: the
	// user stops its work there, and spec's stopped-callback holds the
	// algorithm to calling it once a term, after the term's context is
	// done and before the lease is released.
	o.stopped = func() {
		live := false
		for _, l := range p.leaders {
			live = live || p.live(l.ctx)
		}
		p.w.record(trace.StoppedCallback(int16(p.idx), int16(p.w.cur.id), live))
		if stopped := o.user.OnStoppedLeading; stopped != nil {
			stopped()
		}
	}
	// OnError is recorded (EvError): spec's errors-reported holds the
	// algorithm to telling its user of every store error it is owed.
	o.onError = func(op string, err error) {
		op2, _ := trace.StoreOpNamed(op)
		p.w.record(trace.ErrorCallback(int16(p.idx), int16(p.w.cur.id), op2, errno(err).Sys()))
		if onError := o.user.OnError; onError != nil {
			onError(op, err)
		}
	}
	// OnNewLeader is recorded (EvNewLeader): spec's leader-known holds
	// the algorithm to telling every process who leads.
	o.told = func(holder int64) {
		p.w.record(trace.NewLeader(int16(p.idx), int16(p.w.cur.id), holder))
		if told := o.user.OnNewLeader; told != nil {
			told(holder)
		}
	}
	return o
}

// live is the user's code asking its context whether it still leads, in
// any of the three ways it can: its Err; through a context derived from
// it (a request's, context.WithTimeout's), which sees only its Done,
// whether Done has closed; or its Term's Valid (a probe found Valid true
// after a SIGTERM's release while the next leader led). It is live if any
// says so: a context whose
// Err lapses at the local deadline while its Done stays open (a renewal
// hangs, and nothing closes it at the deadline) leads on in every derived
// context. (Judging Err alone, the checker could not see that bug, which
// a probe found on the real kernel: reference~no-deadline-timer.)
func (p *proc) live(ctx context.Context) bool {
	// Silent throughout: the world's look, not the process's code (a
	// context's Done may read the clock too, and the look may come
	// between steps, where no activity runs).
	silent := p.silent
	p.silent = true
	live := ctx.Err() == nil || p.liveAnyway(ctx)
	p.silent = silent // (not deferred: the step's hot path)
	return live
}

// liveAnyway is live's look at a context whose Err says it is over (the
// step's hot path is a live context's), with p silent: it leads still if
// its Term is valid or its Done open.
func (p *proc) liveAnyway(ctx context.Context) bool {
	if term, ok := lease.TermOf(ctx); ok && term.Valid() { // (the third way: the Term's Valid, as its doc says to check before acting)
		return true
	}
	select {
	case <-ctx.Done():
		return false
	default:
		return true // (a nil Done, a context never cancelled, is open too)
	}
}

// lapsed reports whether ctx is a term whose local deadline has passed
// (lease.Term.Valid), whether or not its elector also ended it.
func (p *proc) lapsed(ctx context.Context) bool {
	term, ok := lease.TermOf(ctx)
	if !ok {
		return false
	}
	p.silent = true
	valid := term.Valid()
	p.silent = false
	return !valid
}

// observe looks at the leader contexts of every process that can run
// (not paused, not dead), at a step of the world: whatever happens in the
// world, a process that runs could look at its context then. A paused
// process sees nothing.
func (w *World) observe() {
	if w.leading == 1 && w.timers == 0 && len(w.ctxWaiters) == 0 && !w.leaders.wide {
		// One context held (a run's usual state while anyone leads): look,
		// the loop below and look's own, for that one, in this frame
		// (measured: a third of the cost of a look each step).
		p := w.procs[bits.TrailingZeros64(w.leaders.set)]
		if len(p.leaders) == 1 {
			if p.stopped || p.dead {
				return
			}
			l := &p.leaders[0]
			silent := p.silent
			p.silent = true
			if l.ctx.Err() == nil || p.liveAnyway(l.ctx) {
				l.lastLive, l.liveSteps = w.now, len(w.tr.Events)
				p.silent = silent
				return
			}
			p.silent = silent
			p.lookFrom(0, true)
			return
		}
	}
	if w.timers > 0 {
		for _, p := range w.procs {
			if !p.stopped && !p.dead {
				p.fireTimers()
			}
		}
	}
	if len(w.ctxWaiters) > 0 {
		w.wakeDone()
	}
	if w.leading == 0 {
		return
	}
	if !w.leaders.wide {
		// The processes that hold contexts, by index, as the loop below
		// (which looked at every process for the one or two that lead).
		for m := w.leaders.set; m != 0; m &= m - 1 {
			if p := w.procs[bits.TrailingZeros64(m)]; len(p.leaders) > 0 && !p.stopped && !p.dead {
				p.look(true)
			}
		}
		return
	}
	for _, p := range w.procs {
		if len(p.leaders) > 0 && !p.stopped && !p.dead {
			p.look(true) // (a process leads in few steps: no call for the rest)
		}
	}
}

// leadSet is the set of the processes that hold leader contexts (observe's
// to look at), by index: a process's bit is set when it is given its
// first, and cleared when it holds none. wide is set for a run with a
// process past the 64th, whose lookers observe finds by a loop over all.
type leadSet struct {
	set  uint64
	wide bool
}

func (s *leadSet) add(idx int) {
	if idx >= 64 {
		s.wide = true
		return
	}
	s.set |= 1 << idx
}

func (s *leadSet) drop(idx int) {
	if idx < 64 {
		s.set &^= 1 << idx
	}
}

// observeAtEnd settles, when the run ends, the leadership of paused
// processes: what each would see on resuming. A context already done
// ended its leadership when the process was last seen live; one still
// live leaves it leading to the end of the run.
func (w *World) observeAtEnd() {
	for _, p := range w.procs {
		if p.stopped && !p.dead {
			if p.fireTimers(); !p.dead { // on resuming, before its code runs (dead if one panicked)
				p.look(false)
			}
		}
	}
}

// look asks each leader context whether it is live, ending the leadership
// of one that is done; seen live, a context's leadership extends to now
// (after every event recorded so far) if extend (the process is running
// and could act on it now), and a context seen done ends its leadership
// where it was last seen live.
func (p *proc) look(extend bool) {
	// Every step of a leading process comes here: while each context is
	// live (nearly always), nothing is recorded and nothing moves, and the
	// loop is this one, live's own inlined (silent throughout, Err first);
	// lookFrom takes over at the first context seen done.
	w := p.w
	silent := p.silent
	p.silent = true
	for i := range p.leaders {
		l := &p.leaders[i]
		if l.ctx.Err() != nil && !p.liveAnyway(l.ctx) {
			p.silent = silent
			p.lookFrom(i, extend)
			return
		}
		if extend {
			l.lastLive, l.liveSteps = w.now, len(w.tr.Events)
		}
	}
	p.silent = silent
}

// lookFrom is look from the i'th context on, the i'th seen done (by the
// one call of live look made for it) and every one before it live.
func (p *proc) lookFrom(i0 int, extend bool) {
	kept := p.leaders[:i0]
	for i := i0; i < len(p.leaders); i++ {
		l := &p.leaders[i]
		if i > i0 && p.live(l.ctx) {
			if extend {
				l.lastLive, l.liveSteps = p.w.now, len(p.w.tr.Events)
			}
			if len(kept) < i {
				kept = append(kept, *l)
			} else {
				kept = kept[:i+1] // in place: nothing copied while every context is live
			}
			continue
		}
		if por := p.w.por; por != nil {
			// A term whose deadline has passed ends at the first step of
			// the instant, whichever it is: the instant's, not the step's.
			por.timed = p.lapsed(l.ctx)
		}
		p.w.record(trace.Stopped(int16(p.idx), l.lastLive, l.liveSteps, false).OfContext(l.nth))
		if por := p.w.por; por != nil {
			por.timed = false
		}
		p.keepEnded(endedCtx{ctx: l.ctx, nth: l.nth, epoch: l.epoch})
		p.w.leading--
	}
	if len(kept) < len(p.leaders) {
		clear(p.leaders[len(kept):])
		p.leaders = kept
		if len(kept) == 0 {
			p.w.leaders.drop(p.idx)
		}
	}
}

// diedLeading ends the leadership of a process that dies: at the last
// instant its context was seen live (a paused process saw nothing).
func (p *proc) diedLeading() {
	for _, l := range p.leaders {
		p.w.record(trace.Stopped(int16(p.idx), l.lastLive, l.liveSteps, true).OfContext(l.nth))
		p.w.leading--
	}
	clear(p.leaders)
	p.leaders = p.leaders[:0]
	p.w.leaders.drop(p.idx)
}

// fence is one action on the fenced resource: a request that takes effect
// at a scheduling point, like a system call. The resource accepts an epoch
// no lower than the highest it has accepted, and rejects the rest.
func (p *proc) fence(epoch int64) {
	a, _ := p.enter(trace.OpFence, 0)
	w := p.w
	ok := epoch >= w.fenceMax
	if ok {
		w.fenceMax = epoch
	}
	e := p.call(a, 0)
	*e = trace.Fence(epoch, ok)
	e.T, e.Proc, e.Act = p.w.now, int16(p.idx), int16(a.id)
	p.done(e)
}

// workloadPause draws the time until a leader's next action: uniform in
// [workloadEvery/2, 3*workloadEvery/2) in whole milliseconds, never so
// short that a chooser out of choices (a fuzzer's, which then answers 0)
// makes a run crawl. An exploration does not enumerate it (its choices are
// the schedule's): there it is workloadEvery.
func (w *World) workloadPause() time.Duration {
	if w.cfg.Explore != nil {
		return workloadEvery
	}
	return workloadEvery/2 + time.Duration(w.choose.Choose(int(workloadEvery/time.Millisecond)))*time.Millisecond
}

// leaderNow is the process a fault aimed at the leader hits: of those
// that hold a leader context not yet seen done, which is what their
// user's code was told, the one handed its context last (a paused
// ex-leader that has not yet seen its context end is not "the leader"
// once another was handed one after it, helper-109); if none holds one,
// one whose role report says leader (a term reported but not yet handed
// to the user's code), the first by index. The algorithm's own report
// does not decide it: a variant that under-reports its role would
// otherwise never meet a fault aimed at its leader, and one that
// over-reports would divert them (helper-105).
func (w *World) leaderNow() *proc {
	var held, reported *proc
	for _, q := range w.procs {
		switch {
		case q.dead:
		case len(q.leaders) > 0:
			if held == nil || q.leaders[len(q.leaders)-1].handed > held.leaders[len(held.leaders)-1].handed {
				held = q
			}
		case q.role == lease.RoleLeader:
			if reported == nil {
				reported = q
			}
		}
	}
	if held != nil {
		return held
	}
	return reported
}

// leads reports whether p's calls count toward the crash points aimed at
// the leader's calls (World.leaderTriggers): p holds a leader context, or
// no process holds one and p reports the role. (Unlike leaderNow, every
// holder counts, not only the one handed its context last: they differ
// only while two processes hold contexts at once, and a paused one makes
// no calls.)
func (w *World) leads(p *proc) bool {
	if len(p.leaders) > 0 {
		return true
	}
	return w.leading == 0 && p.role == lease.RoleLeader
}
