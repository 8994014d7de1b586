package sim

import (
	"context"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// workloadEvery is how often a leader's workload acts on the fenced
// resource.
const workloadEvery = 500 * time.Millisecond

// workload wraps cb so that every leader of a variant with epochs runs a
// workload: while its term is valid, it acts on the world's fenced
// resource with its epoch every workloadEvery, as a real leader would act
// on a storage service that rejects stale epochs.
func (p *proc) workload(cb lease.Callbacks) lease.Callbacks {
	started := cb.OnStartedLeading
	cb.OnStartedLeading = func(ctx context.Context) {
		if term, ok := lease.TermOf(ctx); ok {
			p.Go("work", func() {
				for ctx.Err() == nil && term.Valid() {
					p.fence(term.Epoch())
					p.Sleep(workloadEvery)
				}
			})
		}
		if started != nil {
			started(ctx)
		}
	}
	return cb
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
	p.done(a, trace.Fence(epoch, ok))
}
