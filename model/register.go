package model

import (
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Input is the call of a Store operation.
type Input struct {
	Op trace.StoreOp
	// Rec is the record the caller expects to be current: cur for Renew
	// and Release, stale for Takeover; zero for Read and Create.
	Rec lease.Record
	// Holder is the process the operation writes a record for: Create's
	// and Takeover's holder, cur.Holder for Renew and Release; 0 for Read.
	Holder int64
}

// Output is how a Store operation returned.
type Output struct {
	Res trace.StoreRes
	// Rec is the record returned: Read's, or the one Create, Renew or
	// Takeover wrote. Zero otherwise.
	Rec lease.Record
}

// State is the register's content: no record, a record, or (Wild) a record
// whose holder is known and whose expiry is not, left by an operation that
// may have written it but never said what it wrote.
//
// A versioned store names even its empty register: its release is a new
// version, held by nobody. When a read has told that version (see
// versionOnly), an empty State keeps it in Rec.Version; otherwise an empty
// State's Rec is zero.
type State struct {
	Present bool
	Wild    bool
	// Rec is the record. When Wild, only Holder is known, and Version is
	// the version of the record the write replaced (0: not known), which
	// every store's next version exceeds; when empty, only Version is set.
	Rec lease.Record
}

var empty = State{}

func record(r lease.Record) State { return State{Present: true, Rec: r} }

// wild is the register after a write by holder whose outcome is unknown
// replaced the record of version after (0: not known).
func wild(holder, after int64) State {
	return State{Present: true, Wild: true, Rec: lease.Record{Holder: holder, Version: after}}
}

// newer reports whether r can be the record a wildcard stands for: a
// version above the one it replaced, when that is known. (Without it a
// write that failed with an unknown outcome explained a read of its
// holder's older record for as long as no other write came: a stale read
// passed.)
func (s State) newer(r lease.Record) bool { return s.Rec.Version == 0 || r.Version > s.Rec.Version }

// versionOnly reports whether r names a versioned store's record by its
// version alone: a record held by lease.Unknown, which lease.VersionedFile
// returns for a version whose name it found but whose content it could not
// read (EIO, or content that is not a record). Such a store compares its
// records by version (link(2) of the next version's name), so a Takeover
// of r replaces whatever version r.Version holds: a lease or a release.
// The seed's and the servers' records never have holder Unknown with a
// version. (flock's takeover of a lock file that holds no record makes one
// up, with a version from the wall clock; its store compares nothing, and
// the model rejects that takeover, as it always has: no checked run has
// such a file.)
func versionOnly(r lease.Record) bool { return r.Holder == lease.Unknown && r.Version != 0 }

// is reports whether the register can hold exactly r: a record equal to
// r, or a wildcard record for r's holder newer than the record its write
// replaced. A record named by its version alone (versionOnly) is any
// record of that version, a wildcard (whose version is not known, but
// above the one it replaced), or an empty register a read named with that
// version.
func (s State) is(r lease.Record) bool {
	if versionOnly(r) {
		if s.Wild {
			return s.newer(r)
		}
		return s.Rec.Version == r.Version
	}
	if !s.Present {
		return false
	}
	if s.Wild {
		return s.Rec.Holder == r.Holder && s.newer(r)
	}
	return s.Rec == r
}

// isNot reports whether the register can hold something other than r. A
// wildcard record for r's holder can: its expiry may differ. (The state
// then stays a wildcard, a slight over-approximation: it could exclude
// r.Until.)
func (s State) isNot(r lease.Record) bool {
	if versionOnly(r) {
		// An empty register not named by a read may be any version.
		return s.Wild || s.Rec.Version != r.Version
	}
	return !s.Present || s.Wild || s.Rec != r
}

// readVersion is the step of a read that returned r, a record named by its
// version alone (versionOnly), whether recorded as ResOK or (as the
// recorders do: it says nothing of the holder) ResUnknown: the version was
// current during the read. An empty register takes the version as its
// name, which a Takeover of r then compares with.
func readVersion(dst []State, s State, r lease.Record) []State {
	switch {
	case !s.Present && (s.Rec.Version == 0 || s.Rec.Version == r.Version):
		return append(dst, State{Rec: lease.Record{Version: r.Version}})
	case s.Present && s.is(r):
		return append(dst, s)
	}
	return dst
}

// writer is the holder of the record a write operation publishes: Renew
// keeps cur's holder, Create and Takeover write their holder's.
func writer(in Input) int64 {
	if in.Op == trace.StoreRenew {
		return in.Rec.Holder
	}
	return in.Holder
}

// step is the register's transition relation: the states that can follow
// s when the operation in returns out. None means out is impossible.
func step(s State, in Input, out Output) []State { return appendStep(nil, s, in, out) }

// appendStep appends step's states to dst.
func appendStep(dst []State, s State, in Input, out Output) []State {
	if in.Op == trace.StoreRead && (out.Res == trace.ResOK || out.Res == trace.ResUnknown) && versionOnly(out.Rec) {
		return readVersion(dst, s, out.Rec)
	}
	if out.Res == trace.ResUnknown {
		// An I/O error, or no return at all: the operation may or may not
		// have taken effect, and it said nothing about what it saw. For a
		// write we also do not know the expiry it stamped.
		switch {
		case in.Op == trace.StoreCreate && !s.Present:
			return append(dst, s, wild(in.Holder, s.Rec.Version))
		case (in.Op == trace.StoreRenew || in.Op == trace.StoreTakeover) && s.is(in.Rec):
			return append(dst, s, wild(writer(in), in.Rec.Version))
		case in.Op == trace.StoreRelease && s.is(in.Rec):
			return append(dst, s, empty)
		}
		return append(dst, s)
	}
	switch in.Op {
	case trace.StoreExpire:
		// Only the current record can expire.
		if s.is(in.Rec) {
			return append(dst, empty)
		}
	case trace.StoreRead:
		switch out.Res {
		case trace.ResOK:
			if s.is(out.Rec) {
				return append(dst, record(out.Rec))
			}
		case trace.ResNotFound:
			if !s.Present {
				return append(dst, s)
			}
		}
		// ResCorrupt is never legal: a register holds a whole record or
		// none, never an empty or half-written one.
	case trace.StoreCreate:
		switch out.Res {
		case trace.ResOK:
			if !s.Present && out.Rec.Holder == in.Holder {
				return append(dst, record(out.Rec))
			}
		case trace.ResExists:
			if s.Present {
				return append(dst, s)
			}
		}
	case trace.StoreRenew, trace.StoreTakeover, trace.StoreRelease:
		switch out.Res {
		case trace.ResOK:
			if !s.is(in.Rec) {
				break
			}
			if in.Op == trace.StoreRelease {
				return append(dst, empty)
			}
			if out.Rec.Holder == writer(in) {
				return append(dst, record(out.Rec))
			}
		case trace.ResConflict:
			if s.isNot(in.Rec) {
				return append(dst, s)
			}
		}
	}
	// Any other outcome (NotFound from a write, Exists from a renew) is
	// not one the Store contract has.
	return dst
}

// nondeterministic is the register as porcupine's nondeterministic model;
// Register is its power-set construction.
var nondeterministic = porcupine.NondeterministicModel{
	Init: func() []any { return []any{empty} },
	Step: func(state, input, output any) []any {
		next := step(state.(State), inputOf(input), outputOf(output))
		r := make([]any, len(next))
		for i, s := range next {
			r[i] = s
		}
		return r
	},
	Equal: func(a, b any) bool { return a.(State) == b.(State) },
	Hash: func(state any) uint64 {
		s := state.(State)
		h := uint64(s.Rec.Holder)*0x9e3779b97f4a7c15 ^ uint64(s.Rec.Until)*0xc2b2ae3d27d4eb4f ^
			uint64(s.Rec.Version)*0x165667b19e3779f9 ^ uint64(s.Rec.Epoch)*0x27d4eb2f165667c5
		if s.Present {
			h ^= 1
		}
		if s.Wild {
			h ^= 2
		}
		return h
	},
	DescribeOperation: func(input, output any) string {
		return describeOp(inputOf(input), outputOf(output))
	},
	DescribeState:             func(state any) string { return describeState(state.(State)) },
	DescribeOperationMetadata: func(md any) string { return fmt.Sprint(md) },
}

// Register is the Store contract as a sequential lease register: one
// record or none; Read; Create if absent; Renew and Takeover, which
// compare-and-set; Release, which compares-and-deletes. Operations are
// Input and Output values, or pointers to them (Decide's); states are
// State sets.
var Register = nondeterministic.ToModel()

// ExpiringRegister is Register for a history in which a server may have
// expired the record without the history saying when (real processes over
// Redis, etcd or SQL): before any operation, the record may be gone. It
// is weaker than Register (a second create can always be explained by an
// expiry); the simulator records its servers' expiries (StoreExpire) and
// is checked against Register.
var ExpiringRegister = func() porcupine.Model {
	m := nondeterministic
	m.Step = func(state, input, output any) []any {
		next := expiringStep(state.(State), inputOf(input), outputOf(output))
		r := make([]any, len(next))
		for i, t := range next {
			r[i] = t
		}
		return r
	}
	return m.ToModel()
}()

// expiringStep is ExpiringRegister's transition relation: step, and from
// a record, step from an empty register too.
func expiringStep(s State, in Input, out Output) []State { return appendExpiringStep(nil, s, in, out) }

// appendExpiringStep appends expiringStep's states to dst.
func appendExpiringStep(dst []State, s State, in Input, out Output) []State {
	at := len(dst)
	dst = appendStep(dst, s, in, out)
	if s.Present {
		n := len(dst)
		dst = appendStep(dst, empty, in, out)
		for i := n; i < len(dst); {
			if slices.Contains(dst[at:n], dst[i]) {
				dst = slices.Delete(dst, i, i+1)
				continue
			}
			i++
		}
	}
	return dst
}

// recString renders a record with the fields its store writes: the seed's
// {holder until} (Unix seconds), a versioned store's {holder epoch E
// version V}, or {? version V} for one named by its version alone.
func recString(r lease.Record) string {
	if versionOnly(r) {
		return fmt.Sprintf("{? version %d}", r.Version)
	}
	if r.Epoch == 0 && r.Version == 0 {
		return fmt.Sprintf("{%d %d}", r.Holder, r.Until)
	}
	return fmt.Sprintf("{%d epoch %d version %d}", r.Holder, r.Epoch, r.Version)
}

// describeOp renders an operation as "takeover({100 1760476487}) by 200 →
// ok {200 1760476499}" or "read → corrupt".
func describeOp(in Input, out Output) string {
	var call string
	switch in.Op {
	case trace.StoreRead:
		call = "read"
	case trace.StoreCreate:
		call = fmt.Sprintf("create by %d", in.Holder)
	case trace.StoreTakeover:
		call = fmt.Sprintf("takeover(%s) by %d", recString(in.Rec), in.Holder)
	default:
		call = fmt.Sprintf("%s(%s)", in.Op, recString(in.Rec))
	}
	ret := out.Res.String()
	if out.Res == trace.ResOK && in.Op != trace.StoreRelease {
		ret += " " + recString(out.Rec)
	}
	return call + " → " + ret
}

// describeState renders a state as "empty", "empty, version 2" (a
// versioned store's release, named by a read), "{200 1760476508} until
// 21:15:08" (the seed's), "{200 epoch 3 version 5}" (a versioned store's)
// or "{200 ?}" (a wildcard; "{200 ?, above version 4}" when the version it
// replaced is known).
func describeState(s State) string {
	switch {
	case !s.Present && s.Rec.Version != 0:
		return fmt.Sprintf("empty, version %d", s.Rec.Version)
	case !s.Present:
		return "empty"
	case s.Wild && s.Rec.Version != 0:
		return fmt.Sprintf("{%d ?, above version %d}", s.Rec.Holder, s.Rec.Version)
	case s.Wild:
		return fmt.Sprintf("{%d ?}", s.Rec.Holder)
	case s.Rec.Epoch != 0 || s.Rec.Version != 0:
		return recString(s.Rec)
	}
	return fmt.Sprintf("%s until %s", recString(s.Rec), time.Unix(s.Rec.Until, 0).UTC().Format("15:04:05"))
}
