package lease

import (
	"errors"
	"strconv"
	"time"
)

// AppendVersioned encodes a versioned record, as the reference store
// writes it.
func AppendVersioned(b []byte, r Record) []byte { return appendVersioned(b, r) }

// ParseVersioned decodes what AppendVersioned writes, and nothing else.
func ParseVersioned(b []byte) (Record, error) { return parseVersioned(b) }

// appendVersioned encodes a versioned record: {"processId":H,"epoch":E}.
// The version is the file's name, not its content.
func appendVersioned(b []byte, r Record) []byte {
	b = append(b, `{"processId":`...)
	b = strconv.AppendInt(b, r.Holder, 10)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendInt(b, r.Epoch, 10)
	if r.TTL > 0 {
		b = append(b, `,"leaseMs":`...)
		b = strconv.AppendInt(b, TTLMillis(r.TTL), 10)
	}
	return append(b, '}')
}

// maxRecord bounds what a reader accepts as a record: anything larger is
// not ours.
const maxRecord = 256

func parseVersioned(b []byte) (Record, error) {
	const p1, p2 = `{"processId":`, `,"epoch":`
	bad := errors.New("not a versioned lease record")
	if len(b) > maxRecord || len(b) < len(p1) || string(b[:len(p1)]) != p1 {
		return Record{}, bad
	}
	b = b[len(p1):]
	if len(b) > 0 && b[0] == '-' {
		return Record{}, bad // holders and epochs are never negative (nor "-0")
	}
	h, n, ok := jsonInt(b)
	if !ok || h < 0 {
		return Record{}, bad
	}
	b = b[n:]
	if len(b) < len(p2) || string(b[:len(p2)]) != p2 {
		return Record{}, bad
	}
	b = b[len(p2):]
	e, n, ok := jsonInt(b)
	if !ok || e <= 0 {
		return Record{}, bad
	}
	b = b[n:]
	var ttl time.Duration
	// The lease its writer held, when it says (records written before it
	// was recorded end at the epoch).
	const p3 = `,"leaseMs":`
	if len(b) > len(p3) && string(b[:len(p3)]) == p3 {
		b = b[len(p3):]
		ms, n, ok := jsonInt(b)
		if !ok {
			return Record{}, bad
		}
		var err error
		if ttl, err = TTLFromMillis(ms); err != nil {
			return Record{}, bad
		}
		b = b[n:]
	}
	if len(b) != 1 || b[0] != '}' {
		return Record{}, bad
	}
	return Record{Holder: h, Epoch: e, TTL: ttl}, nil
}

// decimal parses a positive decimal number with no sign and no leading
// zero, as the protocol writes them.
func decimal(s string) (int64, bool) {
	if s == "" || len(s) > 18 || s[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
