package trace

import (
	"encoding/json"
	"errors"
	"io/fs"

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

// Writes reports whether o writes a record a term can rest on: a
// create, renewal or takeover (not a release, which ends one).
func (o StoreOp) Writes() bool {
	return o == StoreCreate || o == StoreRenew || o == StoreTakeover
}

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

// StoreOpNamed is the operation called name ("read", "create", ...).
func StoreOpNamed(name string) (StoreOp, bool) {
	for op, n := range storeOpNames {
		if n == name && n != "" {
			return StoreOp(op), true
		}
	}
	return 0, false
}

func (r StoreRes) String() string {
	if int(r) < len(storeResNames) && storeResNames[r] != "" {
		return storeResNames[r]
	}
	return "storeres?"
}

// Classify maps a Store operation's error to the outcome the trace
// records for the linearizability check: the simulator's processes and
// real ones (leaselab torture, storetest) alike.
func Classify(op StoreOp, err error) StoreRes {
	if err == nil {
		return ResOK
	}
	// (The errors.As targets, and the failed step, are looked at only
	// where a case needs them: each escapes to the heap, and this runs on
	// every failed store call of every simulated run.)
	switch {
	case op == StoreRead && errors.Is(err, fs.ErrNotExist):
		return ResNotFound
	case op == StoreRead && isJSONError(err):
		return ResCorrupt
	case lease.Superseded(err):
		// A versioned write that linked its version and found a higher
		// one right after: it may have taken effect and been overtaken.
		return ResUnknown
	case op == StoreCreate && errors.Is(err, fs.ErrExist):
		return ResExists
	case errors.Is(err, lease.ErrConflict):
		return ResConflict
	case op == StoreTakeover && errors.Is(err, fs.ErrNotExist) && lease.FailedStep(err) == "remove",
		op == StoreTakeover && errors.Is(err, fs.ErrExist) && lease.FailedStep(err) == "create",
		op == StoreRelease && errors.Is(err, fs.ErrNotExist) && lease.FailedStep(err) == "":
		// The seed's compare is "the file is still there" or "nobody
		// created it first"; a failure is a failed compare-and-set. (Its
		// takeover has already removed the file when the create fails: the
		// model then sees a record vanish, which is the point.) Not a
		// step's ENOENT (a versioned release whose temporary file a sweep
		// removed while its writer was paused fails its link so): that
		// compared nothing.
		return ResConflict
	}
	return ResUnknown
}

// OwedError reports whether err, a failed call of op, is none of the
// Store contract's outcomes for op, and so an error its caller is owed
// word of (the errors-reported property). The outcomes, by operation: a
// read's missing record (fs.ErrNotExist, but for a listing of the lock's
// directory that found no directory, which lasts until someone makes it
// again); a create's existing record (fs.ErrExist); a write's conflict
// (lease.ErrConflict, a superseded write included: a create's too). The
// checker's own reading of the contract, from the error alone: not the
// algorithm's (the reference's, which it reports by), so that a mistake
// in that one shows.
func OwedError(op StoreOp, err error) bool {
	switch {
	case err == nil:
		return false
	case op == StoreRead:
		if !errors.Is(err, fs.ErrNotExist) {
			return true
		}
		pe, ok := errors.AsType[*fs.PathError](err)
		return ok && pe.Op == "readdir" && errors.Is(pe.Err, fs.ErrNotExist)
	case op == StoreCreate && errors.Is(err, fs.ErrExist):
		return false
	}
	return !errors.Is(err, lease.ErrConflict)
}

// isJSONError reports whether err is, or wraps, a JSON syntax or type
// error: a record that does not parse.
func isJSONError(err error) bool {
	// (errors.AsType: errors.As's targets escaped, two allocations a
	// classified store call.)
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		return true
	}
	_, ok := errors.AsType[*json.UnmarshalTypeError](err)
	return ok
}
