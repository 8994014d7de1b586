package lease

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// VersionedFile is the reference variant's store: a compare-and-set
// register built from link(2), which creates a name only if it does not
// exist.
//
// Every write of the lease (acquisition, renewal, takeover, release) is a
// new version: the record is written to a private temporary file and
// linked to PATH.N, where N is one more than the version the writer
// read. link fails with EEXIST if PATH.N exists, so of all the writers that
// read version N-1, exactly one succeeds: that is the compare-and-set. A
// version file is complete before it has a name (no reader ever sees an
// empty or half-written lease, whatever instant a writer dies at), and it
// never changes afterwards (so no write can overwrite a newer holder's
// lease). The current record is the highest version; versions are
// contiguous, because a writer links N only after reading N-1.
//
// The record's epoch is the version at which its holder acquired: it
// strictly increases from leader to leader and, living in file names, is
// never reused, not after a release and not after every process restarts.
//
// Versions accumulate, one small file per write (a renewal every few
// seconds); removing old ones safely needs a floor that readers respect and
// is not done yet (see the README).
type VersionedFile struct {
	FS   FS
	Path string
	PID  int64
	// Boot, if set, names the machine's current boot (BootIDer): epochs
	// are then (K-1)*BootStride + version for the boot record K, made
	// durable once per boot, and no acquisition needs an fsync. Without
	// it, every acquisition fsyncs the directory (syncDir).
	Boot func() (string, error)
	// NoDirSync leaves out the fsyncs that make epochs durable (the boot
	// record's, or the directory's after an acquisition). It exists for the
	// tests that show the power-loss check catches their absence; never
	// set it.
	NoDirSync bool

	mistake mistake // planted by the mutation tests only (mistake.go)

	// mu guards the cache below. It is never held across a system call:
	// the elector's activities share the store (a renewal and the signal
	// handler's release), and a simulated activity must not block another
	// while it waits to be scheduled.
	mu      sync.Mutex
	base    int64 // this boot's epoch base, once known (hasBase)
	hasBase bool
	known   int64  // highest version known to exist
	cached  Record // the record of version known, once read
	hasRec  bool
	tempSeq int64
}

var _ Store = (*VersionedFile)(nil)

func (s *VersionedFile) name(v int64) string { return s.Path + "." + strconv.FormatInt(v, 10) }

// exists reports whether version v exists. An error other than ENOENT
// (EIO, say) says nothing about v and is returned.
func (s *VersionedFile) exists(v int64) (bool, error) {
	_, err := s.FS.Stat(s.name(v))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// latest finds the highest version: from the highest known, forward, or
// (for a process that knows none) by doubling then bisecting, since
// versions are contiguous from 1.
func (s *VersionedFile) latest() (int64, error) {
	s.mu.Lock()
	known := s.known
	s.mu.Unlock()
	if known == 0 {
		hi := int64(1)
		for {
			ok, err := s.exists(hi)
			if err != nil {
				return 0, err
			}
			if !ok {
				break
			}
			known, hi = hi, hi*2
		}
		lo := known // exists (or 0); hi does not
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			ok, err := s.exists(mid)
			if err != nil {
				return 0, err
			}
			if ok {
				lo = mid
			} else {
				hi = mid
			}
		}
		known = lo
	}
	for {
		ok, err := s.exists(known + 1)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		known++
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if known > s.known {
		s.known, s.hasRec = known, false
	}
	return s.known, nil
}

// Read returns the highest version's record; a released lease (or none)
// is an error for which errors.Is(err, fs.ErrNotExist). A version whose
// content cannot be parsed (a foreign or damaged file), or cannot be read
// this time (EIO), is a record held by Unknown with its Version and no
// error: it expires on the observer's clock like any other.
//
// Such a record is named by its version alone: it may be a lease or (when
// the content could not be read) a release. Renew, Takeover and Release
// compare versions only, so a Takeover of it replaces whatever that
// version holds, if it is still the latest. (The linearizability model,
// model.Register, reads it so.)
func (s *VersionedFile) Read() (Record, error) {
	if s.Boot != nil {
		// Learn (or make) this boot's record now, while watching, so that
		// no acquisition waits for it; an error is met again when needed.
		s.epochBase()
	}
	rec, err := s.readLatest()
	var ue *unreadError
	switch {
	case errors.As(err, &ue):
		return rec, nil
	case err == nil && rec.Holder == 0:
		return Record{}, &fs.PathError{Op: "read", Path: s.name(rec.Version), Err: syscall.ENOENT}
	}
	return rec, err
}

// unreadError is readLatest's error for a version whose name exists but
// whose content could not be read this time: Read reports the version
// held by Unknown, Create the I/O error.
type unreadError struct{ err error }

func (e *unreadError) Error() string { return e.err.Error() }
func (e *unreadError) Unwrap() error { return e.err }

// readLatest returns the highest version's record, released or not. When
// the version's content could not be read, it returns the version held by
// Unknown and an *unreadError.
func (s *VersionedFile) readLatest() (Record, error) {
	v, err := s.latest()
	if err != nil {
		return Record{}, err
	}
	if v == 0 {
		return Record{}, &fs.PathError{Op: "read", Path: s.name(1), Err: syscall.ENOENT}
	}
	s.mu.Lock()
	if s.hasRec && s.known == v {
		rec := s.cached
		s.mu.Unlock()
		return rec, nil // versions never change
	}
	s.mu.Unlock()
	b, err := s.FS.ReadFile(s.name(v))
	if err != nil && !errors.Is(err, syscall.EISDIR) {
		// The version exists (its name is there) but its content could not
		// be read this time: Read reports the version, held by Unknown, so
		// that the observer's clock for it starts now; the content is read
		// again next time.
		return Record{Holder: Unknown, Version: v}, &unreadError{err}
	}
	rec, perr := parseVersioned(b)
	if err != nil || perr != nil {
		rec = Record{Holder: Unknown}
	}
	rec.Version = v
	s.mu.Lock()
	if s.known == v {
		s.cached, s.hasRec = rec, true
	}
	s.mu.Unlock()
	return rec, nil
}

// Create publishes a lease for holder if the latest version is released
// or there is none. When the latest version's content cannot be read (EIO)
// it returns that error: it cannot tell a release from a lease, and must
// not say a record exists when the version may be a release.
func (s *VersionedFile) Create(holder int64, ttl time.Duration) (Record, error) {
	cur, err := s.readLatest()
	var ue *unreadError
	switch {
	case errors.As(err, &ue):
		// (First: a version removed between its stat and its read is
		// ENOENT, and is not an absent lease.)
		return Record{}, ue.err
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Record{}, err
	case cur.Holder != 0:
		return Record{}, &fs.PathError{Op: "create", Path: s.name(cur.Version), Err: syscall.EEXIST}
	}
	v := cur.Version + 1
	base, err := s.epochBase()
	if err != nil {
		return Record{}, err
	}
	rec, err := s.publish(Record{Holder: holder, Epoch: nextEpoch(base+v, cur), Version: v, TTL: ttl}, true)
	if errors.Is(err, ErrConflict) {
		err = &fs.PathError{Op: "create", Path: s.name(v), Err: syscall.EEXIST}
	}
	return rec, err
}

// Renew writes the next version for cur's holder if cur is still the latest.
func (s *VersionedFile) Renew(cur Record, ttl time.Duration) (Record, error) {
	if s.mistake&mVersionSkip != 0 { // mutant: the next version counted twice
		return s.publish(Record{Holder: cur.Holder, Epoch: cur.Epoch, Version: cur.Version + 2, TTL: ttl}, false)
	}
	return s.publish(Record{Holder: cur.Holder, Epoch: cur.Epoch, Version: cur.Version + 1, TTL: ttl}, false)
}

// Takeover writes the next version for holder, with a new epoch, if stale
// is still the latest.
func (s *VersionedFile) Takeover(stale Record, holder int64, ttl time.Duration) (Record, error) {
	v := stale.Version + 1
	base, err := s.epochBase()
	if err != nil {
		return Record{}, err
	}
	if s.mistake&mStaleEpoch != 0 { // mutant: the epoch not incremented
		return s.publish(Record{Holder: holder, Epoch: stale.Epoch, Version: v, TTL: ttl}, true)
	}
	return s.publish(Record{Holder: holder, Epoch: nextEpoch(base+v, stale), Version: v, TTL: ttl}, true)
}

// nextEpoch is the epoch of a term that replaces prev: its own, base +
// version, or prev's next if that is higher. They differ only where
// runtimes that can tell their boot and runtimes that cannot share a lock
// directory (containers on one volume): without a boot id the base is 0,
// below the epochs of every boot after the first, and fencing needs no
// epoch ever to go back.
func nextEpoch(own int64, prev Record) int64 {
	return max(own, prev.Epoch+1)
}

// Release writes a released record (holder 0) if cur is still the latest.
func (s *VersionedFile) Release(cur Record) error {
	_, err := s.publish(Record{Holder: 0, Epoch: cur.Epoch, Version: cur.Version + 1}, false)
	return err
}

// publish writes rec to a temporary file and links it to its version's
// name, then, for a version that starts a term, fsyncs the directory.
// EEXIST at the link is a lost compare-and-set: ErrConflict.
func (s *VersionedFile) publish(rec Record, startsTerm bool) (Record, error) {
	rec.TTL = StatedTTL(rec.TTL) // as readers will parse it
	s.mu.Lock()
	s.tempSeq++
	tmp := s.Path + ".tmp." + strconv.FormatInt(s.PID, 10) + "." + strconv.FormatInt(s.tempSeq, 10)
	s.mu.Unlock()
	buf := appendVersioned(make([]byte, 0, 48), rec)
	fd, err := s.FS.Open(tmp, O_WRONLY|O_CREATE|O_EXCL, perm)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	// No fsync of the data: a version whose content a power loss tore or
	// dropped reads as held by Unknown and expires on every observer's
	// clock, which is all a lost record could cost after a power loss
	// anyway (its holder died with the machine). Its name is what must
	// not be lost: see syncDir.
	_, err = s.FS.Write(fd, buf)
	if err1 := s.FS.Close(fd); err == nil {
		err = err1
	}
	if err != nil {
		s.FS.Remove(tmp)
		return Record{}, &StepError{Step: "write", Err: err}
	}
	err = s.FS.Link(tmp, s.name(rec.Version))
	s.FS.Remove(tmp) // published or not, the temporary name goes
	switch {
	case errors.Is(err, fs.ErrExist):
		return Record{}, &StepError{Step: "create", Err: ErrConflict}
	case err != nil:
		// link(2) failing otherwise (EIO): the version may or may not exist.
		return Record{}, &StepError{Step: "create", Err: err}
	}
	if startsTerm && s.Boot == nil && !s.NoDirSync {
		if err := syncDir(s.FS, s.Path); err != nil {
			// The version exists but may not survive a power loss: its
			// epoch must not be used. The caller sees a failed write and
			// does not lead; the version expires like any other.
			return Record{}, &StepError{Step: "sync", Err: err}
		}
	}
	s.mu.Lock()
	if rec.Version > s.known {
		s.known, s.cached, s.hasRec = rec.Version, rec, true
	}
	s.mu.Unlock()
	return rec, nil
}

// epochBase is the base of this boot's epochs: 0 without Boot, else that
// of the current boot's record, created durably by the first process of
// the boot to need it.
func (s *VersionedFile) epochBase() (int64, error) {
	if s.Boot == nil {
		return 0, nil
	}
	s.mu.Lock()
	base, ok := s.base, s.hasBase
	s.mu.Unlock()
	if ok {
		return base, nil
	}
	id, err := s.Boot()
	if err != nil {
		return 0, err
	}
	base, err = s.bootBase(id)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.base, s.hasBase = base, true
	s.mu.Unlock()
	return base, nil
}

// syncDir makes the directory of path durable: an fsync of the directory,
// which commits the names linked into it. The reference runs it once per
// boot, for its boot record (see BootStride), or, on a runtime that cannot
// tell its boot, after every link that starts a term, before the caller
// acts on the new epoch: were that name lost to a power loss, the next
// process to acquire after the restart would link the same version and
// lead with the same epoch, which a fenced resource has already accepted
// from the dead leader. Renewals and releases need none: losing one costs
// a lease, never an epoch (the spec's power-loss tests show both, and that
// leaving the needed ones out is caught).
func syncDir(fsys FS, path string) error {
	fd, err := fsys.Open(filepath.Dir(path), O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = fsys.Fsync(fd)
	if err1 := fsys.Close(fd); err == nil {
		err = err1
	}
	return err
}

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
		if !ok || ms <= 0 || ms > MaxTTLMillis {
			return Record{}, bad
		}
		ttl, b = time.Duration(ms)*time.Millisecond, b[n:]
	}
	if len(b) != 1 || b[0] != '}' {
		return Record{}, bad
	}
	return Record{Holder: h, Epoch: e, TTL: ttl}, nil
}
