package lease

import (
	"errors"
	"io/fs"
	"slices"
)

// noteOwn remembers that this process linked version v.
func (s *VersionedFile) noteOwn(v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.own[s.ownNext] = v
	s.ownNext = (s.ownNext + 1) % len(s.own)
}

// isOwn reports whether this process linked version v lately.
func (s *VersionedFile) isOwn(v int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return v > 0 && slices.Contains(s.own[:], v)
}

// sweep removes, after a write of version v that stands (l is the
// listing that said so), every version below v-1, and the temporary files
// of other processes that the previous sweep saw too. Errors are left for
// the next write's sweep. (Boot records are swept by bootBase.)
func (s *VersionedFile) sweep(l listing, v int64) {
	if s.mistake == mNoSweep { // mutant: versions accumulate
		return
	}
	keep := v - 1
	if s.mistake == mKeepOne { // mutant: only the newest kept
		keep = v
	}
	for _, old := range l.versions {
		if old >= keep {
			break
		}
		s.remove(s.name(old), old, false)
	}
	s.mu.Lock()
	var stale []string
	for _, t := range l.temps {
		if !slices.Contains(s.temps, t) && slices.Contains(s.seenTemps, t) {
			stale = append(stale, t)
		}
	}
	s.seenTemps = append(s.seenTemps[:0], l.temps...)
	s.mu.Unlock()
	if s.mistake == mKeepStaleTemps { // mutant: what the dead left stays
		stale = nil
	}
	for _, t := range stale {
		s.remove(t, 0, false)
	}
}

// remove unlinks name, a version (v > 0), a boot record or a temporary
// file of the protocol's, if it is provably the protocol's own: a
// version this process linked itself (or mine: it just linked it), or a
// regular file holding what the protocol writes at such a name. It reports
// whether the name is gone.
func (s *VersionedFile) remove(name string, v int64, mine bool) bool {
	if !mine && !(v > 0 && s.isOwn(v)) {
		b, err := s.FS.ReadFile(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return true
		case err != nil:
			return false // a directory, a FIFO, a link, unreadable: not ours to remove
		case v > 0 && !recordOrTorn(b), v == 0 && len(b) > maxRecord:
			return false
		}
	}
	err := s.FS.Remove(name)
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// recordOrTorn reports whether b is what the protocol writes in a version
// file, or what a power loss can leave of it: a record, nothing, zeros,
// or a record cut short.
func recordOrTorn(b []byte) bool {
	if len(b) > maxRecord {
		return false
	}
	zeros := true
	for _, c := range b {
		zeros = zeros && c == 0
	}
	if zeros {
		return true
	}
	const p1, p2, p3 = `{"processId":`, `,"epoch":`, `,"leaseMs":`
	rest, ok := literalPrefix(b, p1)
	if !ok || len(rest) == 0 {
		return ok
	}
	rest = skipDigits(rest)
	if rest, ok = literalPrefix(rest, p2); !ok || len(rest) == 0 {
		return ok
	}
	rest = skipDigits(rest)
	if len(rest) == 0 || string(rest) == "}" {
		return true
	}
	if rest, ok = literalPrefix(rest, p3); !ok || len(rest) == 0 {
		return ok // the lease its writer held, or a prefix of its name
	}
	rest = skipDigits(rest)
	return len(rest) == 0 || string(rest) == "}"
}

// literalPrefix strips lit from the start of b, or the whole of b if b is
// a prefix of lit; ok is false if neither.
func literalPrefix(b []byte, lit string) ([]byte, bool) {
	n := min(len(b), len(lit))
	if string(b[:n]) != lit[:n] {
		return nil, false
	}
	return b[n:], true
}

func skipDigits(b []byte) []byte {
	for len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		b = b[1:]
	}
	return b
}
