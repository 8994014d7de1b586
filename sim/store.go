package sim

import (
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// StoreOp is a Store operation, as the trace records it for the
// linearizability checker.
type StoreOp uint8

// The Store operations.
const (
	StoreRead StoreOp = iota + 1
	StoreCreate
	StoreRenew
	StoreTakeover
	StoreRelease
	// StoreExpire is a server dropping a record whose TTL ran out: not a
	// call of any process, but a step of the register all the same. Its
	// EvStore event has the record in A and B and the instant it expired
	// in N.
	StoreExpire
)

var storeOpNames = [...]string{StoreRead: "read", StoreCreate: "create", StoreRenew: "renew", StoreTakeover: "takeover", StoreRelease: "release", StoreExpire: "expire"}

func (o StoreOp) String() string {
	if int(o) < len(storeOpNames) && storeOpNames[o] != "" {
		return storeOpNames[o]
	}
	return "storeop?"
}

// StoreRes classifies how a Store operation returned.
type StoreRes uint8

// The outcomes. Unknown is an operation whose effect cannot be known from
// its result: an I/O error part-way, or (for an operation that never
// returned because its process died) no result at all.
const (
	ResOK       StoreRes = iota + 1
	ResNotFound          // Read: there is no record
	ResExists            // Create: a record exists
	ResConflict          // Renew, Takeover, Release: the record was not the expected one
	ResCorrupt           // Read: the record could not be parsed (empty, half-written, garbage)
	ResUnknown
)

var storeResNames = [...]string{ResOK: "ok", ResNotFound: "not-found", ResExists: "exists", ResConflict: "conflict", ResCorrupt: "corrupt", ResUnknown: "unknown"}

func (r StoreRes) String() string {
	if int(r) < len(storeResNames) && storeResNames[r] != "" {
		return storeResNames[r]
	}
	return "storeres?"
}

// classify maps a Store error to an outcome for the register model.
func classify(op StoreOp, err error) StoreRes {
	if err == nil {
		return ResOK
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	step := lease.FailedStep(err)
	switch {
	case op == StoreRead && errors.Is(err, fs.ErrNotExist):
		return ResNotFound
	case op == StoreRead && (errors.As(err, &se) || errors.As(err, &te) || err.Error() == "unexpected end of JSON input"):
		return ResCorrupt
	case op == StoreCreate && errors.Is(err, fs.ErrExist):
		return ResExists
	case errors.Is(err, lease.ErrConflict):
		return ResConflict
	case op == StoreTakeover && step == "remove" && errors.Is(err, fs.ErrNotExist),
		op == StoreTakeover && step == "create" && errors.Is(err, fs.ErrExist),
		op == StoreRelease && errors.Is(err, fs.ErrNotExist):
		// The seed's compare is "the file is still there" or "nobody
		// created it first"; a failure is a failed compare-and-set. (Its
		// takeover has already removed the file when the create fails: the
		// model then sees a record vanish, which is the point.)
		return ResConflict
	}
	return ResUnknown
}

// recStore wraps a process's Store and records each operation's call and
// return in the trace, for the linearizability check.
type recStore struct {
	inner lease.Store
	p     *proc
}

func (s *recStore) call(op StoreOp, in lease.Record, holder int64) {
	p := s.p
	a := p.w.cur
	p.w.record(Event{Proc: int16(p.idx), Act: int16(a.id), Kind: EvStoreCall, Store: op, A: in.Holder, B: ident(in), N: holder})
}

func (s *recStore) ret(op StoreOp, out lease.Record, err error) {
	p := s.p
	a := p.w.cur
	res := classify(op, err)
	if op == StoreRead && res == ResOK && out.Holder == lease.Unknown {
		res = ResUnknown // it learned that a version exists, not what it holds
	}
	p.w.record(Event{Proc: int16(p.idx), Act: int16(a.id), Kind: EvStore, Store: op, Res: res,
		A: out.Holder, B: ident(out), Errno: errno(err)})
}

// ident is what tells one write of a record from another: the seed's
// expiry second, or a versioned store's version (one of them is zero).
func ident(r lease.Record) int64 { return r.Until + r.Version }

func (s *recStore) Read() (lease.Record, error) {
	s.call(StoreRead, lease.Record{}, 0)
	r, err := s.inner.Read()
	s.ret(StoreRead, r, err)
	return r, err
}

func (s *recStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	s.call(StoreCreate, lease.Record{}, holder)
	r, err := s.inner.Create(holder, ttl)
	s.ret(StoreCreate, r, err)
	return r, err
}

func (s *recStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	s.call(StoreRenew, cur, cur.Holder)
	r, err := s.inner.Renew(cur, ttl)
	s.ret(StoreRenew, r, err)
	return r, err
}

func (s *recStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	s.call(StoreTakeover, stale, holder)
	r, err := s.inner.Takeover(stale, holder, ttl)
	s.ret(StoreTakeover, r, err)
	return r, err
}

func (s *recStore) Release(cur lease.Record) error {
	s.call(StoreRelease, cur, cur.Holder)
	err := s.inner.Release(cur)
	s.ret(StoreRelease, lease.Record{}, err)
	return err
}
