package sim

import (
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// recStore wraps a process's Store and records each operation's call and
// return in the trace, for the linearizability check.
type recStore struct {
	inner lease.Store
	p     *proc
}

// call records the call of op with the record it passes, in (by pointer,
// as ret's; nil for none), and, for a write, returns the process's
// monotonic clock reading then, which ret records with its result
// (CallMono).
func (s *recStore) call(op trace.StoreOp, in *lease.Record, holder int64) int64 {
	p := s.p
	a := p.w.cur
	e := p.w.event(int16(p.idx), int16(a.id), trace.EvStoreCall) // trace.StoreCall's, in place
	e.Store, e.N = op, holder
	if in != nil { // (a read's and a create's: none, and the event's is zero)
		e.SetRecord(*in)
	}
	p.w.added(e)
	if !op.Writes() {
		return 0
	}
	return p.clock.mono(a.t) // as its Mono reads it now

}

// ret records the return of op with out (by pointer: a Record is a
// hundred bytes) and err. Most calls succeed, and a success needs no
// classification: ResOK, no errno, nothing owed.
func (s *recStore) ret(op trace.StoreOp, out *lease.Record, err error, mono int64) {
	p := s.p
	a := p.w.cur
	e := p.w.event(int16(p.idx), int16(a.id), trace.EvStore) // trace.StoreReturn's, in place
	e.Store = op
	switch {
	case err != nil:
		e.Res, e.Errno = trace.Classify(op, err), errnoOf(err)
		if trace.OwedError(op, err) {
			e.Flag = trace.StoreOwed
		}
		if op == trace.StoreRead {
			e.SetRecord(*out)
		} // (else none: what a failed write sent is not what the store holds)
	case op == trace.StoreRead && out.Holder == lease.Unknown:
		e.Res = trace.ResUnknown // it learned that a version exists, not what it holds
		e.SetRecord(*out)
	default:
		e.Res = trace.ResOK
		e.SetRecord(*out)
	}
	if op.Writes() {
		e.N = mono
	}
	p.w.added(e)
}

func (s *recStore) Read() (lease.Record, error) {
	m := s.call(trace.StoreRead, nil, 0)
	r, err := s.inner.Read()
	s.ret(trace.StoreRead, &r, err, m)
	return r, err
}

func (s *recStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	m := s.call(trace.StoreCreate, nil, holder)
	r, err := s.inner.Create(holder, ttl)
	s.ret(trace.StoreCreate, &r, err, m)
	return r, err
}

func (s *recStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	m := s.call(trace.StoreRenew, &cur, cur.Holder)
	r, err := s.inner.Renew(cur, ttl)
	s.ret(trace.StoreRenew, &r, err, m)
	return r, err
}

func (s *recStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	m := s.call(trace.StoreTakeover, &stale, holder)
	r, err := s.inner.Takeover(stale, holder, ttl)
	s.ret(trace.StoreTakeover, &r, err, m)
	return r, err
}

func (s *recStore) Release(cur lease.Record) error {
	m := s.call(trace.StoreRelease, &cur, cur.Holder)
	err := s.inner.Release(cur)
	s.ret(trace.StoreRelease, &lease.Record{}, err, m)
	return err
}

// Unwrap returns the store recStore records, whose abilities (a server's
// notices: lease.StoreNotifier) the algorithm finds through it.
func (s *recStore) Unwrap() lease.Store { return s.inner }
