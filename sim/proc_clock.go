package sim

import (
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Now implements lease.Clock.
func (p *proc) Now() time.Time {
	if p.silent || p.dead {
		// The world looking at a context on the user's behalf, between
		// steps (no activity runs: a probe's Term read the wall clock
		// there and crashed the checker); or a dead process, whose code
		// runs on only in the defers its unwinding runs, and leaves no
		// trace (a review found a read recorded a second after the
		// SIGKILL, which a property took for its clock then).
		return p.w.wallOf(&p.clock, p.w.now)
	}
	p.w.porCall()
	a := p.w.cur
	t := p.w.wallOf(&p.clock, a.t)
	e := p.w.event(int16(p.idx), int16(a.id), trace.EvClock)
	e.Op, e.N = trace.OpClockWall, t.UnixNano()
	p.w.added(e)
	p.aim(e)
	return t
}

// Mono implements lease.Clock.
func (p *proc) Mono() time.Duration {
	if p.silent || p.dead {
		return time.Duration(p.clock.mono(p.w.now))
	}
	p.w.porCall()
	a := p.w.cur
	m := p.clock.mono(a.t)
	e := p.w.event(int16(p.idx), int16(a.id), trace.EvClock)
	e.Op, e.N = trace.OpClockMono, m
	p.w.added(e)
	p.aim(e)
	return time.Duration(m)
}

// span is a stretch of true time, [from, to).
type span struct{ from, to int64 }

// suspend records that the process's machine is suspended from now for d
// (a Suspend fault): an earlier suspension still running ends now, so
// that none is counted twice.
func (p *proc) suspend(d time.Duration) {
	now := p.w.now
	if n := len(p.suspends); n > 0 {
		p.suspends[n-1].to = min(p.suspends[n-1].to, now)
	}
	p.suspends = append(p.suspends, span{now, now + int64(d)})
}

// Suspended reports how long the process's machine has been suspended
// (Suspend faults) since it last booted, as of the instant its code runs
// at: CLOCK_BOOTTIME less CLOCK_MONOTONIC. Mono counts that time, as
// lease.Clock requires, and so does the wall clock; a runtime that kept
// its deadlines on CLOCK_MONOTONIC would read Mono() - Suspended() (the
// mutant catalogue models one so). It is no system call and leaves no
// trace.
func (p *proc) Suspended() time.Duration {
	t := p.w.now
	if !p.silent && !p.dead && p.w.cur != nil {
		t = p.w.cur.t
	}
	var d int64
	for _, s := range p.suspends {
		if s.from >= p.clock.boot && s.from < t {
			d += min(s.to, t) - s.from
		}
	}
	return time.Duration(d)
}

// aim counts a reading of a clock, e, as a point a fault aimed after
// the Nth call of any kind may land after (proc.count): between a check
// of the clock and the act it allows (a deadline read, then a write)
// lies the window of every check-then-act mistake, which a fault counted
// in system calls alone never hit (a probe's reference that re-read the
// record before each renewal, and renewed whatever it found, was found
// at run 27,128; with clock readings counted, at run 948; helper-105).
func (p *proc) aim(e *trace.Event) {
	if len(p.w.leaderTriggers) > 0 && p.w.leads(p) {
		p.count(p.w.leaderTriggers, e)
	}
	if len(p.triggers) > 0 {
		p.count(p.triggers, e)
	}
}

// Sleep implements lease.Clock.
func (p *proc) Sleep(d time.Duration) {
	a := p.w.cur
	until := p.clock.mono(a.t) + int64(d)
	a.point(a.onClockUntil(until))
	a.onClock = false
	if d > 0 && p.clock.mono(a.t) >= until {
		p.woke(a) // (not cut short by a context: SleepContext)
	}
}

// woke records that activity a woke because a wait on its clock ran out
// (trace.Trace.Wakes); the simulator's own activities (the workload) are
// not the process's code.
func (p *proc) woke(a *activity) {
	if !a.isolated {
		p.w.tr.Wakes = append(p.w.tr.Wakes, trace.Wake{T: a.t, Proc: int16(p.idx), Act: int16(a.id)})
	}
}

// NewTicker implements lease.Clock.
func (p *proc) NewTicker(d time.Duration) lease.Ticker {
	p.w.porCall()
	a := p.w.cur
	var t *ticker
	if p.nTick < len(p.tickBuf) {
		t = &p.tickBuf[p.nTick]
		p.nTick++
	} else {
		t = new(ticker)
	}
	*t = ticker{p: p, d: int64(d), start: p.clock.mono(a.t)}
	return t
}

// ticker has time.Ticker's semantics on the process's monotonic clock:
// tick k at start+k*d; a receiver that is late gets one tick at once and
// the ticks it missed are dropped.
type ticker struct {
	p        *proc
	d, start int64
	k        int64 // the last tick delivered
}

func (t *ticker) Wait() {
	p := t.p
	a := p.w.cur
	next := t.start + (t.k+1)*t.d
	if next <= p.clock.mono(a.t) {
		a.point(a.t)
	} else {
		a.point(a.onClockUntil(next))
		a.onClock = false
	}
	p.woke(a)
	// The ticks dropped: none for a receiver less than a period late,
	// whose count is k+1 without a division by a variable.
	if x := p.clock.mono(a.t) - t.start; t.d > 0 && x < (t.k+2)*t.d {
		t.k++
	} else {
		t.k = max(t.k+1, x/t.d)
	}
}

func (t *ticker) Stop() {}

// NewHandoff implements lease.Proc.
func (p *proc) NewHandoff() lease.Handoff {
	p.w.porCall()
	var h *handoff
	if p.nHand < len(p.handBuf) {
		h = &p.handBuf[p.nHand]
		p.nHand++
	} else {
		h = new(handoff)
	}
	*h = handoff{p: p}
	return h
}

// handoff is an unbuffered channel between activities of one process.
type handoff struct {
	p                *proc
	sender, receiver *activity
}

func (h *handoff) Send() {
	w := h.p.w
	a := w.cur
	a.point(a.t)
	w.added(w.event(int16(h.p.idx), int16(a.id), trace.EvSend))
	if r := h.receiver; r != nil {
		h.receiver = nil
		w.wake(r, w.now)
		return
	}
	h.sender = a
	a.block()
}

func (h *handoff) Recv() {
	w := h.p.w
	a := w.cur
	if s := h.sender; s != nil {
		w.porCall() // no scheduling point: the caller's code runs on in this step
		h.sender = nil
		w.wake(s, w.now)
	} else {
		w.porCall() // (h3 fix: the receiver it leaves is what the sender's step reads)
		h.receiver = a
		a.block()
	}
	w.added(w.event(int16(h.p.idx), int16(a.id), trace.EvRecv))
}
