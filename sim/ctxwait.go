package sim

import (
	"context"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// ctxWaiter is an activity in a wait that its context's end cuts short.
// Contexts end only when a simulated activity cancels one (the program's
// main on SIGTERM), so the world looks at them at every step (observe)
// and the run stays deterministic.
type ctxWaiter struct {
	a    *activity
	done <-chan struct{}
}

var _ lease.ContextWaiter = (*proc)(nil)

// SleepContext implements lease.ContextWaiter: Sleep, woken at the step
// that ends ctx.
func (p *proc) SleepContext(ctx context.Context, d time.Duration) {
	if ctx.Err() != nil {
		p.w.porCall() // no scheduling point: the caller's code runs on in this step
		return
	}
	defer p.w.waitCtx(p.w.cur, ctx)()
	p.Sleep(d)
}

// WaitChangeContext implements lease.ContextWaiter: WaitChange, woken at
// the step that ends ctx.
func (p *proc) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	if ctx.Err() != nil {
		p.w.porCall() // no scheduling point: the caller's code runs on in this step
		return false
	}
	defer p.w.waitCtx(p.w.cur, ctx)()
	return p.WaitChange(dir, token, until) && ctx.Err() == nil
}

// waitCtx registers a's wait as one that ctx's end cuts short, until the
// returned function is called.
func (w *World) waitCtx(a *activity, ctx context.Context) func() {
	w.ctxWaiters = append(w.ctxWaiters, ctxWaiter{a: a, done: ctx.Done()})
	return func() {
		for i, x := range w.ctxWaiters {
			if x.a == a {
				w.ctxWaiters = append(w.ctxWaiters[:i], w.ctxWaiters[i+1:]...)
				return
			}
		}
	}
}

// wakeDone wakes, now, every waiting activity whose context has ended.
func (w *World) wakeDone() {
	for i := 0; i < len(w.ctxWaiters); i++ {
		x := w.ctxWaiters[i]
		a := x.a
		if a == w.cur || a.p.dead {
			continue
		}
		select {
		case <-x.done:
		default:
			continue
		}
		w.ctxWaiters = append(w.ctxWaiters[:i], w.ctxWaiters[i+1:]...)
		i--
		if a.ready <= w.now {
			continue
		}
		a.ready, a.onClock = w.now, false
		if a.hidx >= 0 {
			w.queue.remove(a)
			a.seq = w.seq
			w.seq++
			w.queue.push(a)
		}
	}
}
