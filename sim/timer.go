package sim

import (
	"slices"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// monoTimer is a process's lease.MonoTimer: f is due once the process's
// monotonic clock reaches at. The world fires a due timer before any
// step of its process runs and whenever it looks at the leaders'
// contexts (observe), so that no code of the process, and no observer,
// sees the world after the instant without the timer's effect; a paused
// process fires its timers when it resumes, before its activities run,
// and a dead one never. (The OS runtime races the timer's goroutine
// against the process's other goroutines after a SIGCONT; the model lets
// the timer win. A user who must not act on a lapsed term after a pause
// checks the leader context's own Err or Term.Valid, which read the
// clock, and fences.) Firing runs f in the world's context and leaves
// no trace of its own: f may read the process's clock (silently) and
// cancel contexts, nothing else. A panic in f is the process's: it ends
// the process, exit status 2 (timerPanicked).
type monoTimer struct {
	p     *proc
	at    int64 // the instant, on the process's monotonic clock
	f     func()
	armed bool
}

var _ lease.MonoTimer = (*proc)(nil)

// AfterMono implements lease.MonoTimer.
func (p *proc) AfterMono(at time.Duration, f func()) func(time.Duration) {
	t := &monoTimer{p: p, f: f}
	t.set(at)
	return t.set
}

// set arms the timer for at, or disarms it if at < 0.
func (t *monoTimer) set(at time.Duration) {
	p := t.p
	if at < 0 {
		if t.armed {
			t.armed = false
			p.dropTimer(t)
		}
		return
	}
	t.at = int64(at)
	if !t.armed && !p.dead {
		t.armed = true
		p.timers = append(p.timers, t)
		p.w.timers++
		if info := &p.w.tr.Procs[p.idx]; len(p.timers) > info.MaxTimers {
			info.MaxTimers = len(p.timers)
		}
	}
}

func (p *proc) dropTimer(t *monoTimer) {
	for i, x := range p.timers {
		if x == t {
			p.timers = slices.Delete(p.timers, i, i+1) // (clears the vacated slot)
			p.w.timers--
			return
		}
	}
}

// fireTimers calls the process's timers that are due now, in the order
// they were armed. Its callers fire a paused process's only when it
// resumes (or, at the end of a run, as it would on resuming).
func (p *proc) fireTimers() {
	if len(p.timers) == 0 || p.dead {
		return
	}
	now := p.clock.mono(p.w.now)
	var due []*monoTimer
	for _, t := range p.timers {
		if now >= t.at {
			due = append(due, t)
		}
	}
	if len(due) > 0 && !p.stopped {
		p.lookBeforeTimers()
	}
	for _, t := range due {
		if !t.armed || now < t.at { // (an earlier one's f moved or disarmed it)
			continue
		}
		t.armed = false
		p.dropTimer(t)
		p.runTimer(t.f) // (one it arms again fires at the next step at or after its instant)
		if p.dead {
			return // f panicked, and the process with it (timerPanicked)
		}
	}
}

// runTimer calls a due timer's f, the process's code, silently. A panic
// in f ends the process, as one in its activities does (timerPanicked).
func (p *proc) runTimer(f func()) {
	silent := p.silent
	p.silent = true
	defer func() {
		p.silent = silent
		if r := recover(); r != nil {
			p.timerPanicked(r)
		}
	}()
	f()
}

// dropTimers disarms every timer of a process that dies.
func (p *proc) dropTimers() {
	for _, t := range p.timers {
		t.armed = false
	}
	p.w.timers -= len(p.timers)
	clear(p.timers)
	p.timers = p.timers[:0]
}

// lookBeforeTimers is the user's code looking at its leader contexts by
// their Err before the due timers fire: on the real kernel a timer's
// function runs on a goroutine of its own, and the user's code may run
// first (after a SIGCONT, on a loaded machine). A context whose Err is nil
// then was seen live now. (A probe's reference whose user context was a
// plain one, ended by the deadline's timer alone, passed every property:
// here timers always fired first. The reference's Err reads the clock.)
func (p *proc) lookBeforeTimers() {
	for i := range p.leaders {
		l := &p.leaders[i]
		silent := p.silent
		p.silent = true
		err := l.ctx.Err()
		p.silent = silent
		if err == nil {
			l.lastLive, l.liveSteps = p.w.now, len(p.w.tr.Events)
		}
	}
}
