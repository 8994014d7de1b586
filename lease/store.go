package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"syscall"
	"time"
)

// Store is the substrate that holds the lease record: a lock file, Redis,
// etcd, a SQL row. Its contract is a linearizable register of one lease
// record: create-if-absent, read, compare-and-set (renew, take over) and
// compare-and-delete (release). The store stamps the expiry itself (a file
// store from its process's clock, Redis from its TTL) so each operation takes
// the lease duration rather than a deadline. Whether a record has expired is
// the SeedProgram's judgement, not the store's.
//
// A write (Create, Renew, Takeover) that fails with an error other than
// its outcomes (a create's fs.ErrExist, a conflict) may have taken
// effect all the same: a reply lost, a connection dropped after the
// request went. It returns, with the error, what it sent as far as its
// caller can know it: the write's Nonce, and Holder and TTL where it
// fills them in (the server stores do); Epoch and Version 0 (the store
// assigns them). A caller that later reads a record of that Nonce knows
// it for its own write; with Nonce 0 (a store that names no writes, as
// the file stores, or an error before anything was sent) it cannot
// tell. (A check with the loss of a server's data and shared PIDs as
// faults: a leader whose renewal conflicted took a record of its PID
// and its term's epoch for its own earlier renewal, when after the loss
// another process of its PID had made it, and two led.)
//
// The seed variants' file stores break this contract, which is the point:
// the checker must find where.
type Store interface {
	// Read returns the current record. A missing record is an error for
	// which errors.Is(err, fs.ErrNotExist) holds; an unreadable one is an
	// error too. A versioned store whose latest version exists but cannot
	// be read (EIO, a torn write) returns it with that error, held by
	// Unknown and named by its version: the record is the version,
	// whatever it holds, so that observers can time it and a Takeover of
	// it is a compare-and-set on the version alone.
	Read() (Record, error)
	// Create publishes a record for holder if there is none. When one
	// exists it fails with an error for which errors.Is(err, fs.ErrExist).
	// When it cannot tell (the latest version cannot be read: it may be a
	// release, or a live lease) it fails with an I/O error and publishes
	// nothing: the caller waits the version out and takes it over. A
	// versioned store whose create published its version and found a
	// higher one right after (another write came first) fails with
	// ErrConflict, as any write that lost a race.
	Create(holder int64, ttl time.Duration) (Record, error)
	// Renew extends cur, which the caller holds, if it is still current.
	Renew(cur Record, ttl time.Duration) (Record, error)
	// Takeover replaces stale, an expired record, with one for holder if
	// stale is still current.
	Takeover(stale Record, holder int64, ttl time.Duration) (Record, error)
	// Release deletes cur if it is still current.
	Release(cur Record) error
}

// ErrConflict is returned by a Store whose compare-and-set or
// compare-and-delete found a record other than the expected one.
var ErrConflict = errors.New("lease record changed")

// ErrReleased is what a [Vanishing] store's Read may return for a lease
// its holder released, where it can tell a release from a record gone any
// other way (the SQL store's row of holder 0); errors.Is(err,
// fs.ErrNotExist) holds for it too, so that it reads as no record to a
// caller that does not ask.
var ErrReleased error = releasedError{}

// ErrForeign is what a server store tells its Options.OnError (wrapped,
// with what it found and why) when the lease's key or row holds a value
// that no leaselab writes: another program's, an operator's. Its Read
// returns it as a record held by no one known (Unknown), which the
// reference waits out and takes over by compare-and-set on that very
// value.
var ErrForeign = errors.New("not a lease record")

// ErrVanished is what a [Vanishing] store's Read reports (as a
// *VanishedError, for which errors.Is(err, ErrVanished) holds) where it
// can tell that the last record it had went without a release: its server
// expired it (on a clock that may have stepped) or evicted it, and its
// holder may still lead. A store that cannot tell (it never had a record,
// or lost its data) says fs.ErrNotExist alone.
var ErrVanished = errors.New("the lease record is gone without a release (expired or evicted by its server)")

// VanishedError is a Read's error for a record that went without a
// release: errors.Is finds both ErrVanished and fs.ErrNotExist in it.
type VanishedError struct {
	Version int64 // the version of the record that went (0: not known)
	// TTL is the lease that record stated (0: not known). A process that
	// never saw the record waits at least that long: a holder of a longer
	// lease than its own (a rolling change of -lease) may lead that long
	// (a search found a 9 s watcher leading beside the 27 s holder whose
	// record a clock step had dropped before it was ever read).
	TTL time.Duration
	// Nonce is that record's nonce (0: not known): versions repeat after
	// a loss of the server's data, nonces do not (Record.Nonce).
	Nonce uint64
}

func (e *VanishedError) Error() string {
	return fmt.Sprintf("%v: version %d", ErrVanished, e.Version)
}

// Is makes a VanishedError ErrVanished, and a missing record as well.
func (e *VanishedError) Is(target error) bool {
	return target == ErrVanished || target == fs.ErrNotExist
}

type releasedError struct{}

func (releasedError) Error() string { return "the lease was released" }

// Is makes ErrReleased a missing record as well.
func (releasedError) Is(target error) bool { return target == fs.ErrNotExist }

// StepError reports which step of a multi-step store operation failed.
type StepError struct {
	Step string // "remove", "create" or "write"
	Err  error
}

func (e *StepError) Error() string { return e.Step + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *StepError) Unwrap() error { return e.Err }

// FailedStep returns the failed step of a store operation, or "" when err
// is not a *StepError.
func FailedStep(err error) string {
	if se, ok := errors.AsType[*StepError](err); ok {
		return se.Step
	}
	return ""
}

// SeedFile is the lock-file store of the post's committed program,
// system call by system call, bugs included. Every method documents the
// bug it carries at the step that has it.
type SeedFile struct {
	FS    FS
	Clock Clock
	Path  string
	// Naive replaces every O_EXCL create with the post's first attempt:
	// stat, then open(O_CREATE|O_WRONLY).
	Naive bool
	// Publish applies the post's proposed fix, literally: "" keeps the
	// seed's create-then-write; "rename" writes the lease to a temporary
	// file and renames it onto the lock path wherever the seed creates or
	// writes it; "link" publishes a new lease with link(2), which fails if
	// the lock exists, and renews with a temporary file and rename.
	Publish string

	buf []byte // encoding scratch; FS.Write does not retain it
	pid int64  // names the temporary file
}

// perm is the mode the post's program creates the lock file with.
const perm = 0o644

// Read is getLeaseContent: os.ReadFile then json.Unmarshal.
func (s *SeedFile) Read() (Record, error) {
	b, err := s.FS.ReadFile(s.Path)
	if err != nil {
		return Record{}, err
	}
	return ParseRecord(b)
}

// create is the first half of acquisition: make the lock file exist.
func (s *SeedFile) create() error {
	if s.Naive {
		// BUG (the post's first attempt): check, then act. Two processes can
		// both see no file and both create it; neither open fails.
		if _, err := s.FS.Stat(s.Path); !errors.Is(err, fs.ErrNotExist) {
			if err == nil {
				err = &fs.PathError{Op: "stat", Path: s.Path, Err: syscall.EEXIST}
			}
			return err
		}
		fd, err := s.FS.Open(s.Path, O_CREATE|O_WRONLY, perm)
		if err != nil {
			return nil // the post ignores this error: f, _ := os.OpenFile(...)
		}
		s.FS.Close(fd)
		return nil
	}
	fd, err := s.FS.Open(s.Path, O_CREATE|O_EXCL|O_WRONLY, perm)
	if err != nil {
		return err
	}
	s.FS.Close(fd)
	// BUG (the post's empty-file bug): the lock file now exists and is
	// empty. A crash before the write below leaves it so forever: every
	// watcher fails to parse it, fails O_EXCL, and retries; nobody leads.
	return nil
}

// write stamps a record for holder on the process's clock, after the file
// exists, as the program does, and writes it with os.WriteFile.
func (s *SeedFile) write(holder int64, ttl time.Duration) (Record, error) {
	rec := Record{Holder: holder, Until: s.Clock.Now().Add(ttl).Unix()}
	// BUG: os.WriteFile truncates at open, then writes. Between the two the
	// file is empty (a reader sees a parse error), and a crash there leaves
	// it empty: the empty-file wedge again, reached from a renewal.
	s.buf = rec.AppendJSON(s.buf[:0])
	return rec, WriteFile(s.FS, s.Path, s.buf, perm)
}

// Create is tryAcquireLease without its log line.
func (s *SeedFile) Create(holder int64, ttl time.Duration) (Record, error) {
	rec, err := s.publish(holder, ttl)
	if err != nil && FailedStep(err) == "write" {
		// The program's cleanup of its empty file; the error is ignored.
		// With Publish set, nothing of ours is at the lock path: this
		// removes whoever's lease is there (kept: the fix changes nothing
		// else).
		s.FS.Remove(s.Path)
	}
	return rec, err
}

// publish makes a new lease exist at the lock path: the seed's create and
// write, or the proposed fix's temporary file and rename or link.
func (s *SeedFile) publish(holder int64, ttl time.Duration) (Record, error) {
	switch s.Publish {
	case "rename":
		// The fix: the lock file never exists incomplete. But rename
		// replaces whatever is there: acquisition is no longer exclusive.
		return s.viaTemp(holder, ttl, s.FS.Rename)
	case "link":
		rec, err := s.viaTemp(holder, ttl, s.FS.Link)
		s.FS.Remove(s.temp()) // the temporary name, published or not
		return rec, err
	}
	if err := s.create(); err != nil {
		return Record{}, &StepError{Step: "create", Err: err}
	}
	rec, err := s.write(holder, ttl)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	return rec, nil
}

// temp is the process's temporary file beside the lock.
func (s *SeedFile) temp() string {
	return s.Path + ".tmp." + strconv.FormatInt(s.pid, 10)
}

// viaTemp writes the lease to the temporary file and publishes it with
// put (rename or link). A failed put is the "create" step: with link,
// EEXIST means another process's lease is there.
func (s *SeedFile) viaTemp(holder int64, ttl time.Duration, put func(oldname, newname string) error) (Record, error) {
	rec := Record{Holder: holder, Until: s.Clock.Now().Add(ttl).Unix()}
	s.buf = rec.AppendJSON(s.buf[:0])
	if err := WriteFile(s.FS, s.temp(), s.buf, perm); err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	if err := put(s.temp(), s.Path); err != nil {
		return Record{}, &StepError{Step: "create", Err: err}
	}
	return rec, nil
}

// Renew is the renewal routine's rewrite.
func (s *SeedFile) Renew(cur Record, ttl time.Duration) (Record, error) {
	// BUG: no compare. The caller read the file and saw its own pid, but
	// the lease may have expired and been taken over since; this write then
	// overwrites the new holder's lease with ours. (The proposed fix keeps
	// it: a rename replaces whatever is there.)
	if s.Publish != "" {
		return s.viaTemp(cur.Holder, ttl, s.FS.Rename)
	}
	return s.write(cur.Holder, ttl)
}

// Takeover is the watcher's takeover: remove, then publish as at start.
func (s *SeedFile) Takeover(stale Record, holder int64, ttl time.Duration) (Record, error) {
	// BUG: remove by name, not by content. A watcher that read the stale
	// record, then was delayed, removes whatever lease is there now: a lease
	// another watcher has just taken over. Both then lead. (The post calls
	// this race safe because O_EXCL decides the create; it does not decide
	// the remove.)
	if err := s.FS.Remove(s.Path); err != nil {
		return Record{}, &StepError{Step: "remove", Err: err}
	}
	// BUG: unlike Create, a failed write is not cleaned up: the empty file
	// stays and wedges everyone, this process included.
	return s.publish(holder, ttl)
}

// Release is the signal handler's os.Remove.
func (s *SeedFile) Release(cur Record) error {
	// BUG: removes by name. The handler only asks whether its role is
	// "renewal", not whether the file still holds its lease.
	return s.FS.Remove(s.Path)
}

var _ Store = (*SeedFile)(nil)
