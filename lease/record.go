package lease

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Record is the content of a lease: who holds it and until when. It is the
// post's {"processId": 12345, "leaseUntil": 1715430000}: Until is whole Unix
// seconds on the writer's wall clock.
//
// The versioned store of the reference variant leaves Until zero and uses
// Epoch (the fencing epoch: the version at which the holder acquired) and
// Version (which write of the record this is; every write makes a new
// one). Holder 0 is a released lease; Unknown a record nobody can read.
type Record struct {
	Holder  int64 `json:"processId"`
	Until   int64 `json:"leaseUntil"`
	Epoch   int64 `json:"-"`
	Version int64 `json:"-"`
	// TTL is the lease its writer held it for (its LeaseDuration): how
	// long a watcher waits, on its own clock, for the record to change
	// before it takes over. Processes of one lock may run with different
	// intervals (a rolling change of -lease); a watcher that waited its
	// own lease instead would take over a longer lease early. Zero: a
	// record that does not say (one written before TTLs were recorded, a
	// release, a store that keeps none); the watcher then waits its own.
	TTL time.Duration `json:"-"`
	// Nonce names the write that made the record: a number its writer
	// drew at random (a lease server's stores; the simulator's model of
	// them draws from its own counter), 0 for a record that has none (a
	// file store's, or one an earlier leaselab wrote). Versions name
	// records only while the store keeps its data: a server restarted
	// without it counts them again from 1, and a record made then may be
	// equal to one made before in holder, epoch and version. Its nonce is
	// not (a check with the loss as a fault: a watcher paused across a
	// loss took such a record for the one it had seen, and took it over
	// while its holder led). A store compares it with the rest of the
	// record in every compare-and-set.
	Nonce uint64 `json:"-"`
	// Incarnation names the life of the store's data the record was read
	// or written in: a number a lease server keeps beside the record,
	// written once (by the first write that finds none) and never
	// deleted, so that only a loss of the server's data changes it (the
	// next write after the loss draws a new one): etcd's and Redis's
	// stores keep it in a key beside the record's, the SQL store in the
	// row. 0 where the store keeps none (the file stores; a server whose
	// data an earlier leaselab wrote, until the next write). Versions cannot show every loss: a
	// counter that starts again from 1 may, after a few writes, climb
	// past a version a process saw before the loss, and a record made
	// then looks like one written after it (a check with the loss as a
	// fault: an etcd watcher paused across a loss created, after the
	// records made since had expired, got a version above the one it had
	// seen, and led beside that one's holder). A record of another
	// incarnation than the one seen shows the loss whatever its version
	// (Reference: lostUntil).
	Incarnation uint64 `json:"-"`
	// Vanished is set only in a record a [Vanishing] store's Create
	// returned: the version of the record that create took the place of,
	// where that record went without a release (its server expired it, on
	// a wall clock that may have stepped forward, or evicted it), whose
	// holder may still lead; 0 where there was none, it was released, or
	// the store cannot tell. Its creator may never have seen that record
	// (it was made and dropped between the creator's read and its create:
	// a check found a watcher that read no record create over a leader's
	// record a wall-clock step had just dropped, and lead beside it). The
	// reference then holds its new record, without leading, until that
	// record's lease has ended, as after a loss of the server's data.
	Vanished int64 `json:"-"`
	// VanishedTTL is the lease that record stated, where the store knows
	// it (0: not known), as VanishedError.TTL.
	VanishedTTL time.Duration `json:"-"`
	// VanishedNonce is that record's nonce, where the store knows it (0:
	// not known), as VanishedError.Nonce.
	VanishedNonce uint64 `json:"-"`
}

// NonceFor is the nonce of a write that states a lease of ttl: NewNonce's,
// or none (0) for a write that states no lease (the Redis and etcd values
// keep a nonce only after the lease).
func NonceFor(ttl time.Duration) uint64 {
	if TTLMillis(ttl) <= 0 {
		return 0
	}
	return NewNonce()
}

// NewNonce returns a nonce for a record (Record.Nonce): random, not 0,
// and under 2^63, so that a store may keep it in a signed 64-bit column.
// Only the real stores call it; the simulator never does.
func NewNonce() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
		if n := binary.LittleEndian.Uint64(b[:]) >> 1; n != 0 {
			return n
		}
	}
}

// Unknown is the holder of a record whose content cannot be read.
const Unknown = -1

// MaxTTLMillis bounds the lease a record may state: a day, in
// milliseconds. A larger one is not a lease any process of ours writes,
// and would keep every watcher waiting for it; a store's reader rejects it
// as it rejects any value it did not write.
const MaxTTLMillis = 24 * 3600 * 1000

// TTLMillis is a lease as a record states it: in whole milliseconds,
// rounded up (a watcher never waits less than the writer held it for); 0
// for d <= 0, a record that states none. Every store that keeps its
// writer's lease writes this, and its writes return a Record whose TTL is
// StatedTTL(d) (RaisedTTL for a create over a dropped record that stated
// a longer one), as its readers will parse it, so that a compare-and-set
// on the returned record matches what is stored.
func TTLMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// StatedTTL is the TTL of a record written for a lease of d, as its
// readers parse it: d rounded up to a whole millisecond (0 for d <= 0).
func StatedTTL(d time.Duration) time.Duration {
	return time.Duration(TTLMillis(d)) * time.Millisecond
}

// RaisedTTL is the lease a create by a writer of lease d states over a
// record its server dropped without a release that stated gone (0: none,
// or not known): the longer of the two, for a writer that states one.
// That record's holder may lead for up to gone from when it last wrote,
// and whoever reads the new record (its creator too, when the create's
// answer was lost) waits out what it states: a review found a 9 s
// watcher taking a 27 s holder's dropped place, its answer lost, and
// leading beside it after 9 s. Redis and SQL state this; their simulated
// models too.
func RaisedTTL(d, gone time.Duration) time.Duration {
	own := StatedTTL(d)
	if own > 0 && gone > own {
		return gone
	}
	return own
}

// TTLFromMillis is the TTL of a record that states a lease of ms
// milliseconds, or an error if no writer states that: a lease that is not
// positive or is longer than MaxTTLMillis.
func TTLFromMillis(ms int64) (time.Duration, error) {
	if ms <= 0 || ms > MaxTTLMillis {
		return 0, fmt.Errorf("a lease of %d ms is not one a writer states (1 to %d ms)", ms, MaxTTLMillis)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// AppendJSON appends the record as encoding/json marshals the post's
// leaseContent struct, byte for byte, without reflection: the simulator runs
// this millions of times.
func (r Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"processId":`...)
	b = strconv.AppendInt(b, r.Holder, 10)
	b = append(b, `,"leaseUntil":`...)
	b = strconv.AppendInt(b, r.Until, 10)
	return append(b, '}')
}

// ParseRecord decodes a lease file as the post's program does, with
// json.Unmarshal into {ProcessId int; LeaseUntil int64}: an empty file is an
// error ("unexpected end of JSON input"), unknown fields are ignored, field
// names match case-insensitively, and a missing field stays zero. The
// canonical form that AppendJSON writes is decoded by a fast path that gives
// the same result; anything else goes through encoding/json.
func ParseRecord(b []byte) (Record, error) {
	if h, u, ok := parseCanonical(b); ok {
		return Record{Holder: h, Until: u}, nil
	}
	if len(b) == 0 {
		return Record{}, errEmptyRecord // (the post's empty file, read at every poll of a wedged run)
	}
	var c struct {
		ProcessId  int   `json:"processId"`
		LeaseUntil int64 `json:"leaseUntil"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Record{}, err
	}
	return Record{Holder: int64(c.ProcessId), Until: c.LeaseUntil}, nil
}

// errEmptyRecord is encoding/json's error for empty input, made once.
var errEmptyRecord = json.Unmarshal(nil, &struct{}{})

// parseCanonical accepts exactly {"processId":N,"leaseUntil":M} with N and M
// JSON integers that fit in int64 (and so in int on the 64-bit machines the
// post ran on), and returns them. Everything else is left to encoding/json.
// (Not a Record: one is a hundred bytes, zeroed and copied at each return,
// and the simulator parses a record every few system calls.)
func parseCanonical(b []byte) (holder, until int64, ok bool) {
	const p1, p2 = `{"processId":`, `,"leaseUntil":`
	if len(b) < len(p1) || string(b[:len(p1)]) != p1 {
		return 0, 0, false
	}
	b = b[len(p1):]
	h, n, ok := plainInt(b)
	if !ok {
		h, n, ok = jsonInt(b)
	}
	if !ok {
		return 0, 0, false
	}
	b = b[n:]
	if len(b) < len(p2) || string(b[:len(p2)]) != p2 {
		return 0, 0, false
	}
	b = b[len(p2):]
	u, n, ok := plainInt(b)
	if !ok {
		u, n, ok = jsonInt(b)
	}
	if !ok || n != len(b)-1 || b[n] != '}' {
		return 0, 0, false
	}
	return h, u, true
}

// plainInt is jsonInt for the integers AppendJSON writes for a live lease
// (a PID, Unix seconds): 1 to 18 digits, the first not 0, whose value
// needs no range check. It refuses the rest (a sign, a 0, 19 digits or
// more), which jsonInt then reads; what follows the digits is
// parseCanonical's to check, and a fraction or an exponent fails there.
// (It inlines; jsonInt's general checks were a third of a record's parse.)
func plainInt(b []byte) (v int64, n int, ok bool) {
	if len(b) == 0 || b[0]-'1' > 8 {
		return 0, 0, false
	}
	for n < len(b) && b[n]-'0' <= 9 {
		v = v*10 + int64(b[n]-'0')
		n++
	}
	return v, n, n <= 18
}

// jsonInt parses a JSON integer (no fraction or exponent, no leading zeros)
// at the start of b: any int64, and nothing outside that range.
func jsonInt(b []byte) (v int64, n int, ok bool) {
	neg := n < len(b) && b[n] == '-'
	if neg {
		n++
	}
	start := n
	var u uint64 // 19 digits fit: below 10^19 < 2^64 (more are refused below)
	for n < len(b) && b[n]-'0' <= 9 {
		u = u*10 + uint64(b[n]-'0')
		n++
	}
	digits := n - start
	if digits == 0 || digits > 19 || (digits > 1 && b[start] == '0') {
		return 0, 0, false // (20 digits overflow an int64 whatever they are)
	}
	if n < len(b) && (b[n] == '.' || b[n] == 'e' || b[n] == 'E') {
		return 0, 0, false
	}
	// (A holder id of 19 digits, 10^18 or more, was refused until a probe:
	// its record read as garbage to every other process, which took over
	// after its own, shorter lease while the holder led.)
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), n, true
	case neg && u <= math.MaxInt64+1:
		return int64(-u), n, true // (-(MaxInt64+1) wraps to MinInt64)
	}
	return 0, 0, false
}
