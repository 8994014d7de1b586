package lease

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// VersionedFile is the reference variant's store: a compare-and-set
// register built from link(2), which creates a name only if it does not
// exist, in a directory that holds a bounded number of files however long
// it runs.
//
// Every write of the lease (acquisition, renewal, takeover, release) is a
// new version: the record is written to a private temporary file
// (PATH.tmp.PID.SEQ, SEQ counted from the process's TempBase) and linked
// to PATH.N, where N is one more than the
// version the writer read. link fails with EEXIST if PATH.N exists, so of
// all the writers that read version N-1 while it was the latest, at most
// one succeeds: that is the compare-and-set. A version file is complete
// before it has a name (no reader ever sees an empty or half-written
// lease, whatever instant a writer dies at), and it never changes
// afterwards (so no write can overwrite a newer holder's lease). The
// current record is the highest version in the directory, which a reader
// finds by listing the directory (FS.ReadDir), not by probing names:
// versions below the current are removed, so they are not contiguous from
// 1, and a gap is never "no lease".
//
// Removal. After its link, a writer lists the directory again: if PATH.N
// is still the highest version its write stands, and it removes every
// version below N-1 (the versions kept are N-1 and N), every boot record
// but the newest and every temporary file it also saw at its previous
// write (stale: a writer's own lives a few system calls). Otherwise its
// write does not count (see below). Three facts make this safe:
//
//  1. The highest version is never removed: only versions below the
//     highest one the remover has seen, less one, are. So the highest
//     version in the directory never goes down (while the machine runs: a
//     power loss takes every process with it, and the disk comes back as
//     it was at some instant before, where all of this held too).
//  2. A version is removed only once a version two above it exists.
//  3. A writer's link of N succeeds only if PATH.N does not exist. If N
//     was linked before and removed (a writer that read N-1 long ago and
//     was paused: its target was "re-created"), then by 2 a version above
//     N existed before the link and by 1 one still does: the listing
//     after the link shows a higher version. If it does not, N was never
//     removed, so no one else ever linked it: the compare-and-set won.
//
// So a write whose listing shows a higher version than its own is
// reported as superseded (an error for which errors.Is(err, ErrConflict):
// the caller does not lead or renew with it), and the name it linked, if
// below the kept versions, is removed again. A write that did take effect
// and was overtaken at once (a release by the same process's signal
// handler) is reported the same way: it is over either way. The outcome
// is unknown to the register's model, as an I/O error's.
//
// A reader never mistakes a gap for "no lease": it lists the directory
// and reads the highest version; only a directory with no version at all
// is no lease. A version removed between the listing and the read (two
// writes landed in between) is listed again.
//
// The listing must be the directory's content at one instant (FS.ReadDir
// promises it). A real kernel lists a directory with several getdents64
// calls once it holds more than a few dozen names, and a link or unlink
// between two calls may be missed: a writer whose listing after its link
// spans two writes by others can miss every version above its own and
// believe it won. Two writes need not be two renew intervals apart: a
// leader's release on SIGTERM and the next process's acquisition land
// milliseconds apart, so the writer needs no long stall inside its
// listing, only one of a few milliseconds, beside a stall before its link
// long enough for its target to be removed (less than a lease, so its
// deadline has not passed). OSFS on Linux closes it: a listing that took
// several calls is made again under an inotify watch until one saw no
// change (readdir_linux.go, TestReadDirSettles). The simulator's listing is
// one step, as the contract says.
//
// What is removed must be provably the protocol's own: a name of the
// form PATH.N, PATH.boot.K (K at most MaxBootRecord) or
// PATH.tmp.PID.SEQ (decimal, no leading zeros) below what is kept, read
// first, and removed only if it is a regular file holding what the protocol writes there (a record, or what
// a power loss leaves of one: empty, zeros or a prefix; a boot id or
// temporary file of at most 256 bytes); a version this process linked
// itself needs no read. Anything else (a foreign name, a directory or
// FIFO at a version's name, a file of something else) is left alone, and
// counts as a version like any other if it is the highest.
//
// The bound. In the directory at any instant: at most three versions
// (the two kept and the one a writer has just linked), plus one for
// each process that died or failed between its link and its sweep since
// the last write that swept; at most two boot records (the newest and the
// one before it, until a process of the new boot sweeps); at most two
// temporary files per process (its elector's write and its signal
// handler's release can be under way at once), and a dead process's are
// removed at the second write after it died; and a superseded write's name
// until its writer, or the next write, removes it. MaxFiles states it.
//
// The record's epoch is the version at which its holder acquired (plus
// the boot's base, see BootStride): it strictly increases from leader to
// leader. A version number is never reused while the machine runs (by 1:
// every new link is above the highest, except a superseded one, whose
// epoch is never used).
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
	// TempBase is the sequence number below this process's first
	// temporary file's (PATH.tmp.PID.SEQ): processes that share a PID
	// must have bases 2^16 or more apart (TempBase, RandomTempBase), or a
	// paused writer's name, swept as a dead one's, can be made again by
	// another of its PID and published by its link. 0 is safe only where
	// PIDs are unique.
	TempBase int64

	mistake mistake // planted by the mutation tests only (mistake.go)

	// mu guards the cache below. It is never held across a system call:
	// the elector's activities share the store (a renewal and the signal
	// handler's release), and a simulated activity must not block another
	// while it waits to be scheduled.
	mu      sync.Mutex
	base    int64 // this boot's epoch base, once known (hasBase)
	hasBase bool
	// readBootFailed: a Read's attempt to learn or make the boot record
	// failed, and Reads no longer try (Create and Takeover still do).
	readBootFailed bool
	known          int64  // the highest version the last listing showed
	cached         Record // the record of version known, once read
	hasRec         bool
	tempSeq        int64
	// own are the versions this process linked last (0: none), which it
	// may remove without reading them; temps are this process's temporary
	// files under way, and seenTemps the others' its last sweep saw.
	own              [4]int64
	ownNext          int
	temps, seenTemps []string
	left             []string // (bootSweep) this process's temporary files whose removal failed
}

var _ Store = (*VersionedFile)(nil)

// MaxFiles is the most names the reference's store keeps in its lock
// directory at any instant, for procs processes (every process that
// ran, the dead included): three versions, two boot records, and for
// each process two temporary files (its elector's and its signal
// handler's), a version it left unswept (it died, or its listing failed,
// between its link and its sweep) and two superseded writes' names. The
// directory's own foreign files come on top; the lock path itself is
// never touched.
func MaxFiles(procs int) int { return referenceFiles.Of(procs) }

func (s *VersionedFile) name(v int64) string { return s.Path + "." + strconv.FormatInt(v, 10) }

// MaxVersion is the highest version the store writes: the highest a
// name's 18 digits carry, which is what a listing reads as a version
// (decimal). Versions count writes (a billion is a renewal a second for
// thirty years), so only a name someone else linked gets near it.
const MaxVersion = 999_999_999_999_999_999

// ErrNoVersionLeft is the error of every write over a version at
// MaxVersion: there is no name above it that a listing would show. The
// name is someone else's; it must be removed. (A store that wrote the
// next number anyway, of 19 digits, left every process losing its writes
// as races, at once and for ever: a probe's planted PATH.999999999999999999.)
var ErrNoVersionLeft = errors.New("the lock directory's highest version is the highest a name can carry: remove it")

// listing is what the lock directory held at one instant, as the
// protocol reads its names.
type listing struct {
	max      int64   // the highest version (0: none)
	versions []int64 // every version, ascending
	boots    []int64 // every boot record's number, ascending
	temps    []string
}

// list reads the lock directory's names.
func (s *VersionedFile) list() (listing, error) {
	// Over a path that names no file in a directory the listing never
	// shows the names the store writes (bootBase would link boot records
	// for ever).
	if err := CheckLockPath(s.Path); err != nil {
		return listing{}, err
	}
	prefix := filepath.Base(s.Path) + "."
	names, err := listLockDir(s.FS, filepath.Dir(s.Path), prefix)
	if err != nil {
		return listing{}, err
	}
	var l listing
	for _, n := range names {
		if len(n) <= len(prefix) || n[:len(prefix)] != prefix {
			continue
		}
		rest := n[len(prefix):]
		if v, ok := decimal(rest); ok {
			l.versions = append(l.versions, v)
			l.max = max(l.max, v)
			continue
		}
		if k, ok := strings.CutPrefix(rest, "boot."); ok {
			if v, ok := decimal(k); ok && v <= MaxBootRecord {
				l.boots = append(l.boots, v)
			}
			continue
		}
		if t, ok := strings.CutPrefix(rest, "tmp."); ok {
			pid, seq, ok := strings.Cut(t, ".")
			if _, ok1 := decimal(pid); ok1 && ok {
				if _, ok2 := decimal(seq); ok2 {
					l.temps = append(l.temps, s.Path+"."+rest)
				}
			}
		}
	}
	slices.Sort(l.versions)
	slices.Sort(l.boots)
	return l, nil
}

// latest finds the highest version by listing the directory (0: none).
func (s *VersionedFile) latest() (int64, error) {
	if s.mistake == mProbeFromOne { // mutant: the old probing reader
		return s.probeFromOne()
	}
	l, err := s.list()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.max != s.known {
		s.known, s.hasRec = l.max, false
	}
	return l.max, nil
}

// probeFromOne is the reader before versions were removed, kept for the
// mutant that plants it: doubling then bisecting from version 1, as if
// versions were contiguous from 1. Once version 1 is gone it finds no
// lease at all.
func (s *VersionedFile) probeFromOne() (int64, error) {
	exists := func(v int64) (bool, error) {
		_, err := s.FS.Stat(s.name(v))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		}
		return false, err
	}
	known, hi := int64(0), int64(1)
	for {
		ok, err := exists(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		known, hi = hi, hi*2
	}
	lo := known
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := exists(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lo != s.known {
		s.known, s.hasRec = lo, false
	}
	return lo, nil
}

// Read returns the highest version's record; a released lease (or none)
// is an error for which errors.Is(err, fs.ErrNotExist). A version whose
// content cannot be parsed (a foreign or damaged file) is a record held by
// Unknown with its Version and no error: it expires on the observer's
// clock like any other. One whose content cannot be read this time (EIO)
// is a record held by Unknown with its Version and that error: the
// version exists, but what it holds, and for how long, is not known.
//
// Such a record is named by its version alone: it may be a lease or (when
// the content could not be read) a release. Renew, Takeover and Release
// compare versions only, so a Takeover of it replaces whatever that
// version holds, if it is still the latest. (The linearizability model,
// model.Register, reads it so.)
func (s *VersionedFile) Read() (Record, error) {
	if s.Boot != nil {
		// Learn (or make) this boot's record now, while watching, so that
		// no acquisition waits for it; an error is met again when needed,
		// by a Create or Takeover, after its back-off. Once only: a Read
		// that writes, on a disk that takes a new file but not its data,
		// changed the directory at every try, and a watcher waiting for a
		// change was woken by its own (a new disk fault, a full disk with
		// inodes to spare: 20,000 system calls in a second).
		s.mu.Lock()
		try := !s.readBootFailed || s.mistake == mReadRetriesBoot // mutant: every Read
		s.mu.Unlock()
		if try {
			if _, err := s.epochBase(); err != nil {
				s.mu.Lock()
				s.readBootFailed = true
				s.mu.Unlock()
			}
		}
	}
	rec, err := s.readLatest()
	ue, unread := errors.AsType[*unreadError](err)
	switch {
	case unread:
		return rec, ue.err
	case err == nil && rec.Holder == 0:
		return Record{}, &fs.PathError{Op: "read", Path: s.name(rec.Version), Err: syscall.ENOENT}
	}
	return rec, err
}

// notARecord reports whether a read's error says that what is at a
// version's name is no record of this protocol, for good: a directory,
// a name that is not a regular file (a FIFO, a socket, a symbolic link),
// a file larger than any record. Every other error (an I/O error, a
// shortage of descriptors, memory or space, a permission, a stale NFS
// handle, whatever comes next) says only that the content could not be
// read this time. (The other way round, a list of the errors that may
// pass, made an error it lacked, ENOSPC, EACCES or ESTALE, garbage held
// by no one, cached for the version's life: a watcher with a 3 s lease
// took over a 9 s lease it could not read after 3 s, and two led; a
// probe, 2026-12-05.)
func notARecord(err error) bool {
	for _, e := range [...]syscall.Errno{syscall.EISDIR, syscall.EINVAL, syscall.EFBIG, syscall.ELOOP, syscall.ENXIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	for try := 0; ; try++ {
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
		if errors.Is(err, fs.ErrNotExist) && try < 2 {
			// Removed since the listing: two newer versions exist. (By
			// the third try, an Unknown record of v: a directory that
			// changes that fast is not the protocol's alone.)
			continue
		}
		unread := err != nil && !notARecord(err) && !errors.Is(err, fs.ErrNotExist)
		if s.mistake == mReadErrorIsGarbage { // mutant: the errors that may pass listed, as before 2026-12-05
			unread = false
			for _, e := range [...]syscall.Errno{syscall.EIO, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EINTR, syscall.EAGAIN, syscall.EBUSY, syscall.ETIMEDOUT} {
				unread = unread || errors.Is(err, e)
			}
		}
		if unread {
			// The version exists (its name is there) but its content could
			// not be read this time: Read reports the version, held by
			// Unknown, with the error, so that the observer's clock for it
			// starts now; the content is read again next time, and only
			// what it says (how long a lease) lets the version be taken
			// over.
			return Record{Holder: Unknown, Version: v}, &unreadError{err}
		}
		// Anything else at a version's name (a directory, a FIFO, a
		// symlink to nowhere, a file larger than any record, a name that
		// vanished three times) holds no record of this protocol: it
		// reads as garbage does, held by Unknown with no error.
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
}

// Create publishes a lease for holder if the latest version is released
// or there is none. When the latest version's content cannot be read (EIO)
// it returns that error: it cannot tell a release from a lease, and must
// not say a record exists when the version may be a release.
func (s *VersionedFile) Create(holder int64, ttl time.Duration) (Record, error) {
	cur, err := s.readLatest()
	ue, unread := errors.AsType[*unreadError](err)
	switch {
	case unread:
		// (First: an unreadable version is not an absent lease.)
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
	rec, err := s.publish(Record{Holder: holder, Epoch: nextEpoch(s.epochFloor(base+v), cur), Version: v, TTL: ttl}, true)
	if errors.Is(err, ErrConflict) && !Superseded(err) {
		err = &fs.PathError{Op: "create", Path: s.name(v), Err: syscall.EEXIST}
	}
	return rec, err
}

// Renew writes the next version for cur's holder if cur is still the latest.
func (s *VersionedFile) Renew(cur Record, ttl time.Duration) (Record, error) {
	if s.mistake == mVersionSkip { // mutant: the next version counted twice
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
	if s.mistake == mStaleEpoch { // mutant: the epoch not incremented
		return s.publish(Record{Holder: holder, Epoch: stale.Epoch, Version: v, TTL: ttl}, true)
	}
	return s.publish(Record{Holder: holder, Epoch: nextEpoch(s.epochFloor(base+v), stale), Version: v, TTL: ttl}, true)
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

func (e errSuperseded) Error() string {
	return "version " + strconv.FormatInt(e.v, 10) + " superseded by version " + strconv.FormatInt(e.max, 10)
}

// Is makes errSuperseded an ErrConflict.
func (e errSuperseded) Is(target error) bool { return target == ErrConflict }

// publish writes rec to a temporary file and links it to its version's
// name, lists the directory to learn whether the write stands, removes
// what is no longer needed, then, for a version that starts a term, fsyncs
// the directory. EEXIST at the link is a lost compare-and-set:
// ErrConflict; a higher version in the listing after it, errSuperseded.
func (s *VersionedFile) publish(rec Record, startsTerm bool) (Record, error) {
	if rec.Version > MaxVersion {
		// (Its name would be one the listing does not read as a version:
		// the write would stand unseen, every later one lost as a race.)
		return Record{}, &StepError{Step: "create", Err: ErrNoVersionLeft}
	}
	rec.TTL = StatedTTL(rec.TTL) // as readers will parse it
	buf := appendVersioned(make([]byte, 0, 48), rec)
	if s.mistake == mRemoveBeforeLink { // mutant: the old versions removed before the new one exists
		for v := rec.Version - 1; v >= max(rec.Version-3, 1); v-- {
			s.FS.Remove(s.name(v))
		}
	}
	tmp, fd, err := s.openTemp()
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	defer s.doneTemp(tmp)
	// No fsync of the data: a version whose content a power loss tore or
	// dropped reads as held by Unknown and expires on every observer's
	// clock, which is all a lost record could cost after a power loss
	// anyway (its holder died with the machine). Its name is what must
	// not be lost: see syncDir.
	_, err = s.FS.Write(fd, buf)
	if s.mistake == mWriteErrorIgnored { // mutant: the write's error unchecked
		err = nil
	}
	if err1 := s.FS.Close(fd); err == nil {
		err = err1
	}
	if err != nil {
		if s.mistake != mLeakTempOnWriteError {
			s.FS.Remove(tmp)
		}
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
	s.noteOwn(rec.Version)
	l, err := s.list()
	if err != nil {
		// The write may have been re-creating a removed version: it cannot
		// stand until a listing says so. Its outcome is unknown.
		return Record{}, &StepError{Step: "verify", Err: err}
	}
	if l.max != rec.Version && s.mistake != mNoVerify {
		if rec.Version < l.max-1 {
			s.remove(s.name(rec.Version), rec.Version, true)
		}
		return Record{}, &StepError{Step: "verify", Err: errSuperseded{rec.Version, l.max}}
	}
	s.sweep(l, rec.Version)
	if startsTerm && !s.NoDirSync {
		// (With boot records too: an epoch a process with a boot id
		// took without this fsync, lost to a power loss, was taken
		// again by a process without one, whose epochs follow the
		// record that survived (nextEpoch) and not a boot's base: a
		// probe, with containers of both kinds on one directory.)
		if err := syncDir(s.FS, s.Path); err != nil {
			// The version exists but may not survive a power loss: its
			// epoch must not be used. The caller sees a failed write and
			// does not lead; the version expires like any other.
			return Record{}, &StepError{Step: "sync", Err: err}
		}
	}
	s.mu.Lock()
	if rec.Version >= s.known {
		s.known, s.cached, s.hasRec = rec.Version, rec, true
	}
	s.mu.Unlock()
	return rec, nil
}
