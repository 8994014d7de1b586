package lease

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"time"
)

// The flock election's own log lines.
const (
	MsgFlockAcquired     Msg = flockBase + iota // [LEADER] Acquired flock, epoch a
	MsgFlockWaiting                             // [WATCHER] Lock held by another process, waiting
	MsgFlockOpenFailed                          // [WATCHER] Could not open lock file, will retry
	MsgFlockLockFailed                          // [WATCHER] Could not lock lock file, will retry
	MsgFlockRecordFailed                        // [WATCHER] Could not read or write lease record, unlocking, will retry
	MsgFlockUnreadable                          // [WATCHER] Lease record unreadable, taking epoch a from the wall clock
	MsgFlockReplaced                            // [LEADER] Lock file removed or replaced at its path, stepping down
	flockEnd
)

var flockMsgs = [...]msgText{
	MsgFlockAcquired - flockBase:     {text: "[LEADER] Acquired flock, epoch %", a: argNum},
	MsgFlockWaiting - flockBase:      {text: "[WATCHER] Lock held by another process, waiting"},
	MsgFlockOpenFailed - flockBase:   {text: "[WATCHER] Could not open lock file, will retry"},
	MsgFlockLockFailed - flockBase:   {text: "[WATCHER] Could not lock lock file, will retry"},
	MsgFlockRecordFailed - flockBase: {text: "[WATCHER] Could not read or write lease record, unlocking, will retry"},
	MsgFlockUnreadable - flockBase:   {text: "[WATCHER] Lease record unreadable, taking epoch % from the wall clock", a: argNum},
	MsgFlockReplaced - flockBase:     {text: "[LEADER] Lock file removed or replaced at its path, stepping down"},
}

// FlockRecordSize is the size of the flock store's record: the whole
// record goes to the kernel in one write(2) at offset 0 of the lock file.
const FlockRecordSize = 64

// ErrUnreadable is wrapped by a Read of a record that exists but cannot be
// parsed: something other than a leaselab process wrote the lock file.
var ErrUnreadable = errors.New("lease record unreadable")

// EpochFile is the store of the flock variant: one fixed-size record,
// {"processId":H,"epoch":E} padded with spaces to [FlockRecordSize] bytes,
// at offset 0 of the lock file, which holders lock with flock(2).
//
// It is a lease register only under the lock: its writes compare nothing,
// because the caller holds the file's flock, which makes its read-then-write
// a compare-and-set (the checker's linearizable-store property verifies
// that it does). Each write is its own open(O_WRONLY|O_NOFOLLOW), one
// write(2) of the whole record, fsync and close, then an fsync of the
// directory (see write): the lock file is never
// truncated, renamed or removed, since a newcomer that opened a different
// inode at the same name would lock that one instead, and lead beside the
// holder. Closing the store's own descriptor does not release the lock,
// which belongs to the locking descriptor (flock, unlike fcntl locks). The
// record stays after its holder stops leading: it is the history of epochs,
// which the next holder continues.
type EpochFile struct {
	FS   FS
	Path string
	// Boot and PID, if Boot is set, number epochs by boot records (see
	// BootStride): epochs are then at least (K-1)*BootStride+1 for the
	// current boot's record K. The record is fsynced before every lead
	// all the same (see EpochFile.write).
	Boot func() (string, error)
	PID  int64
	// TempBase numbers the boot records' temporary files
	// (VersionedFile.TempBase).
	TempBase int64

	buf     []byte // encoding scratch; FS.Write does not retain it
	base    int64
	hasBase bool
	boots   *VersionedFile // the boot records' (and their temporary files')

	mistake mistake // planted by the mutation tests only (mistake.go)
}

// epochBase is the current boot's epoch base (0 without Boot). Only a
// caller that holds the lock (use bootSweep: Create and Takeover) makes
// a boot record, and it first removes every temporary file the directory
// holds, which another process made under the lock and left (it died, or
// its unlink failed): under the lock nobody else is writing one. A Read
// (bootLearn) learns the record if it exists and makes nothing.
//
// (Watchers made boot records too, before contending, and nobody swept
// their temporary files: a review's process whose unlinks failed left
// two and made a third, five names against flock's bound of four. A
// sweep outside the lock could remove a temporary file a live watcher
// was writing. Under the lock, only a lock file removed from its path,
// whose holders lock different inodes, lets two make one at once: the
// one swept fails its link, and tries again.)
func (s *EpochFile) epochBase(use bootUse) (int64, error) {
	if s.Boot == nil {
		return 0, nil
	}
	if s.boots == nil {
		s.boots = &VersionedFile{FS: s.FS, Path: s.Path, PID: s.PID, TempBase: s.TempBase}
	}
	if s.hasBase {
		if use == bootSweep && len(s.boots.leftTemps()) > 0 {
			s.boots.removeLeft()
		}
		return s.base, nil
	}
	id, err := s.Boot()
	if err != nil {
		return 0, err
	}
	base, err := s.boots.bootBase(id, use)
	if err != nil {
		return 0, err
	}
	s.base, s.hasBase = base, true
	return base, nil
}

var _ Store = (*EpochFile)(nil)

// Read returns the record. An absent or empty lock file has none: an error
// for which errors.Is(err, fs.ErrNotExist). A record that cannot be parsed,
// or a file too large to be one (EFBIG: someone grew it past MaxReadFile),
// is an error wrapping [ErrUnreadable], with a record held by [Unknown].
func (s *EpochFile) Read() (Record, error) {
	if s.Boot != nil {
		// Learn this boot's record now, before contending, so that no
		// acquisition waits for it (unless it must make it); an error is
		// met again when needed.
		s.epochBase(bootLearn)
	}
	b, err := s.FS.ReadFile(s.Path)
	if errors.Is(err, syscall.EFBIG) {
		// Larger than any record (FS.ReadFile's bound): not ours.
		return Record{Holder: Unknown}, &fs.PathError{Op: "read", Path: s.Path, Err: ErrUnreadable}
	}
	if err != nil {
		return Record{}, err
	}
	if len(b) == 0 {
		return Record{}, &fs.PathError{Op: "read", Path: s.Path, Err: syscall.ENOENT}
	}
	rec, err := ParseFlockRecord(b)
	if err != nil {
		return Record{Holder: Unknown}, &fs.PathError{Op: "read", Path: s.Path, Err: ErrUnreadable}
	}
	return rec, nil
}

// Create writes the first record, epoch 1, for holder. The caller holds the
// lock and has read no record.
func (s *EpochFile) Create(holder int64, ttl time.Duration) (Record, error) {
	base, err := s.epochBase(bootSweep)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	return s.write(Record{Holder: holder, Epoch: base + 1, Version: base + 1})
}

// Renew returns cur: there is nothing to renew, the kernel holds the lock
// until its holder releases it or dies.
func (s *EpochFile) Renew(cur Record, ttl time.Duration) (Record, error) { return cur, nil }

// Takeover writes a record for holder with the epoch after stale's. The
// caller holds the lock and has just read stale.
func (s *EpochFile) Takeover(stale Record, holder int64, ttl time.Duration) (Record, error) {
	base, err := s.epochBase(bootSweep)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	e := max(stale.Epoch, base) + 1
	return s.write(Record{Holder: holder, Epoch: e, Version: e})
}

// Release does nothing: the flock variant releases the kernel's lock
// (LOCK_UN), not the record, which keeps the last epoch for the next
// holder. The flock variant never calls it.
func (s *EpochFile) Release(cur Record) error { return nil }

// write writes rec at offset 0 of the lock file, in one write(2), and
// fsyncs it and then the directory, so that the epoch outlives a power
// loss before the holder acts with it: the data fsync keeps the record,
// the directory's keeps the lock file's name (created by some process's
// O_CREAT, which no one may have synced yet; were the name lost, the next
// holder after the restart would find no file and start again at epoch
// 1). A failure at any step is a "write" (or "sync") StepError; the record
// may or may not have been written, and the caller must not lead with it.
func (s *EpochFile) write(rec Record) (Record, error) {
	s.buf = AppendFlockRecord(s.buf[:0], rec)
	fd, err := s.FS.Open(s.Path, O_WRONLY|O_NOFOLLOW, perm)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	_, err = s.FS.Write(fd, s.buf)
	if err == nil && s.mistake != mNoRecordSync { // (mutant: never)
		// The epoch must be durable before its holder acts. (Boot
		// records were to make a lost record cost nothing, the next
		// boot's epochs being above every epoch of this one; but a
		// process without a boot id beside them takes the epoch after
		// the record that survived, and took a lost one again: a probe.)
		err = s.FS.Fsync(fd)
	}
	if err1 := s.FS.Close(fd); err == nil {
		err = err1
	}
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	// The lock file's name is durable already: the algorithm fsyncs the
	// directory after it opens the file, before it can hold the lock.
	return rec, nil
}

// AppendFlockRecord appends the flock store's record for r: the versioned
// store's JSON ({"processId":H,"epoch":E}), padded with spaces and ended
// with a newline to FlockRecordSize bytes. Every int64 pair fits.
func AppendFlockRecord(b []byte, r Record) []byte {
	start := len(b)
	b = appendVersioned(b, r)
	for len(b)-start < FlockRecordSize-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// ParseFlockRecord decodes what AppendFlockRecord writes: the first
// FlockRecordSize bytes of b, trailing spaces and newline removed, must be
// a versioned record (holder and epoch of at most 18 digits). Bytes after
// the record (left by a foreign longer file that the record overwrote) are
// ignored. Version is set to the epoch.
func ParseFlockRecord(b []byte) (Record, error) {
	if len(b) > FlockRecordSize {
		b = b[:FlockRecordSize]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	rec, err := parseVersioned(b)
	if err != nil {
		return Record{}, err
	}
	rec.Version = rec.Epoch
	return rec, nil
}

// forever is a local deadline that never passes: a flock leader leads
// until it releases the lock or dies.
const forever = time.Duration(1 << 62)

// flockBackoff is the first pause after a failed attempt; it doubles with
// every consecutive failure, up to WatchInterval.
const flockBackoff = time.Millisecond

// FlockElection is the flock variant's algorithm: leadership is the kernel's
// flock(2) lock on the lock file, which the kernel releases the moment its
// holder dies, so failover waits for no lease and no clock: a waiter
// blocked in flock wakes as soon as the holder's descriptors are closed.
//
//   - Open the lock file (O_RDWR|O_CREAT|O_NOFOLLOW) once, and lock it
//     with LOCK_EX, waiting if another process holds it.
//   - Under the lock, read the record and write the next epoch (1 for an
//     absent or empty file): the lock makes the read and write a
//     compare-and-set, so epochs strictly increase from leader to leader.
//     The first holder of a boot makes the boot's record there too
//     (EpochFile.epochBase), sweeping the temporary files others left.
//   - Lead until SIGTERM: nothing to renew, no deadline, nothing a clock
//     can break. A paused leader still holds the lock, so nobody else can
//     lead meanwhile, and nobody does anything for as long as it is paused.
//   - On SIGTERM, stop leading, then unlock, so a waiter takes over at
//     once; a process that is not leading just exits (the kernel releases
//     its lock after any write it has in flight).
//   - After an error (open, lock, read or write), unlock, then wait before
//     the next attempt: 1 ms, doubling with each consecutive failure, up to
//     WatchInterval, so that a transient error delays nobody's failover
//     and a persistent one does not spin.
type FlockElection struct {
	p    Proc
	fl   FlockFS // p, which can flock
	s    Store
	path string
	cfg  Config
	pid  int64

	mu       sync.Mutex // guards the fields below (the signal handler reads them)
	fd       FD         // the locking descriptor; -1 while none is open
	leading  bool
	cancel   context.CancelFunc
	stopping bool // SIGTERM: lead no more
	started  bool // the term was started: OnStartedLeading is called, or being called

	mistake mistake // planted by the mutation tests only (mistake.go)
}

// NewFlockElection returns the flock variant's elector for process p over s, the
// lock file at path.
func NewFlockElection(p Proc, s Store, path string, cfg Config) (*FlockElection, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fl, ok := p.(FlockFS)
	if !ok {
		return nil, errors.New("the flock election needs a Proc that can flock(2) (a FlockFS)")
	}
	return &FlockElection{p: p, fl: fl, s: s, path: path, cfg: cfg, pid: int64(p.PID()), fd: -1}, nil
}

func (f *FlockElection) isStopping() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopping
}

func (f *FlockElection) setFD(fd FD) {
	f.mu.Lock()
	f.fd = fd
	f.mu.Unlock()
}

// Run runs the elector: it returns only through p.Exit.
func (f *FlockElection) Run() {
	f.p.Log(MsgStarted, f.pid, 0)
	f.p.Go("signal", f.handleShutdown)
	f.p.Role(RoleWatcher)
	var backoff time.Duration
	fail := func(m Msg) {
		f.p.Log(m, 0, 0)
		backoff = min(max(2*backoff, flockBackoff), f.cfg.WatchInterval)
		if f.mistake == mNoBackoff { // mutant: retries at once
			return
		}
		f.p.Sleep(backoff)
	}
	fd := FD(-1)
	for {
		if f.isStopping() {
			f.p.Sleep(f.cfg.WatchInterval) // the signal handler ends the process
			continue
		}
		if fd < 0 {
			var err error
			if fd, err = f.p.Open(f.path, O_RDWR|O_CREATE|O_NOFOLLOW, perm); err != nil {
				fd = -1
				fail(MsgFlockOpenFailed)
				continue
			}
			// Whoever created the lock file, its name must survive a power
			// loss before any epoch is written in it (or the file, and the
			// epochs, could start again from nothing): fsync the directory
			// once, here, not on every acquisition.
			if err := syncDir(f.p, f.path); err != nil {
				f.p.Close(fd)
				fd = -1
				fail(MsgFlockOpenFailed)
				continue
			}
			f.setFD(fd)
			// Read the record once before contending: the store learns the
			// boot's epoch base here, off the hand-over's path, if the
			// boot's record exists (only a holder makes it).
			f.s.Read()
		}
		err := f.fl.Flock(fd, LOCK_EX|LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) && f.mistake == mPollLock { // mutant: polls the lock
			f.p.Sleep(f.cfg.WatchInterval)
			continue
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.p.Log(MsgFlockWaiting, 0, 0)
			err = f.fl.Flock(fd, LOCK_EX)
		}
		if err != nil {
			fail(MsgFlockLockFailed)
			continue
		}
		rec, err := f.claim()
		if err != nil {
			// Do not lead: the record may or may not hold our epoch, and the
			// next holder reads whichever it holds and writes the one after.
			f.fl.Flock(fd, LOCK_UN)
			if errors.Is(err, fs.ErrNotExist) {
				// The lock file is gone from its name (removed by someone):
				// the lock we held is on a nameless inode. Open the name
				// afresh, to contend with whoever opened it since.
				f.setFD(-1)
				f.p.Close(fd)
				fd = -1
			}
			fail(MsgFlockRecordFailed)
			continue
		}
		backoff = 0
		if f.lead(rec) {
			// The path names another file now, or none: the lock held is
			// on a nameless inode. Open the name afresh.
			f.fl.Flock(fd, LOCK_UN)
			f.setFD(-1)
			f.p.Close(fd)
			fd = -1
		}
	}
}

// claim writes the next record under the lock.
func (f *FlockElection) claim() (Record, error) {
	rec, err := f.s.Read()
	switch {
	case err == nil:
		return f.s.Takeover(rec, f.pid, f.cfg.LeaseDuration)
	case errors.Is(err, fs.ErrNotExist):
		return f.s.Create(f.pid, f.cfg.LeaseDuration)
	case errors.Is(err, ErrUnreadable):
		// Someone who can write the lock file wrote something else over
		// the record: the last epoch is lost. Continue from the wall clock
		// in microseconds, far above any epoch counted from 1 (the limit:
		// see the README's security notes).
		floor := max(f.p.Now().UnixMicro(), 1)
		if f.mistake == mUnreadableFromOne { // mutant: from 1
			floor = 1
		}
		f.p.Log(MsgFlockUnreadable, floor, 0)
		return f.s.Takeover(Record{Holder: Unknown, Epoch: floor - 1, Version: floor - 1}, f.pid, f.cfg.LeaseDuration)
	}
	return Record{}, err // an I/O error says nothing about the record
}

// lead leads with rec until the process ends, or until the lock file's
// path no longer names the file it locked (then it steps down and returns
// true); it returns false if SIGTERM came first.
//
// The lock is the inode's, not the name's: a lock file removed (a
// cleaner of /tmp; an operator) or replaced at its path is opened afresh
// by the next process, which locks the new inode and leads beside the
// holder, for good (a probe: two commands at once). Every renew
// interval the leader reads the record at its path: another record (the
// newcomer's), or none, ends its term. An I/O error says nothing, and is
// read again next time.
func (f *FlockElection) lead(rec Record) bool {
	term := &Term{clock: f.p, epoch: rec.Epoch, deadline: forever}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), termKey{}, term))
	term.done = ctx.Done() // (Valid is false once the term ends, as Err is non-nil)
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		cancel()
		return false // the signal handler is ending the process: never lead
	}
	f.leading, f.cancel = true, cancel
	f.mu.Unlock()
	f.p.Role(RoleLeader)
	f.p.Lead(rec.Epoch, forever)
	f.p.Log(MsgFlockAcquired, rec.Epoch, 0)
	if cb := f.cfg.Callbacks.OnNewLeader; cb != nil {
		cb(f.pid)
	}
	// One decision, under the lock the SIGTERM handler takes: either the
	// term is started here (and the handler, whenever it runs, tells the
	// user it ended, after OnStartedLeading was called), or the handler
	// came first and the user is told nothing of it.
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return false
	}
	f.started = true
	f.mu.Unlock()
	if cb := f.cfg.Callbacks.OnStartedLeading; cb != nil {
		cb(ctx)
	}
	for {
		// Nothing to renew: the kernel holds the lock. But the name must
		// still be the lock's.
		f.p.Sleep(f.cfg.RenewInterval)
		cur, err := f.s.Read()
		if err == nil && cur.Holder == rec.Holder && cur.Epoch == rec.Epoch ||
			err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrUnreadable) {
			continue
		}
		f.mu.Lock()
		if f.stopping {
			f.mu.Unlock()
			continue // the signal handler is ending the process
		}
		cancel, started := f.cancel, f.started
		f.leading, f.cancel, f.started = false, nil, false
		f.mu.Unlock()
		f.p.Log(MsgFlockReplaced, 0, 0)
		f.p.Role(RoleWatcher)
		cancel()
		if cb := f.cfg.Callbacks.OnStoppedLeading; cb != nil && started {
			cb()
		}
		return true
	}
}

// handleShutdown steps down on SIGTERM and, if this process led, unlocks
// so that a waiter takes over at once, then exits.
func (f *FlockElection) handleShutdown() {
	f.p.AwaitShutdown()
	f.mu.Lock()
	f.stopping = true
	lead, cancel, fd, started := f.leading, f.cancel, f.fd, f.started
	f.leading, f.cancel = false, nil
	f.mu.Unlock()
	if lead && f.mistake == mUnlockBeforeCancel && f.fl.Flock(fd, LOCK_UN) == nil { // mutant: unlocks first
		f.p.Log(MsgReleased, 0, 0)
	}
	if lead && f.mistake != mUnlockBeforeCancel {
		// The user's term ends first, before even the log line: the
		// process has been told to stop (spec's stopped-callback).
		f.p.Role(RoleWatcher)
		cancel()
	}
	f.p.Log(MsgShutdown, 0, 0)
	if lead {
		if f.mistake == mUnlockBeforeCancel {
			f.p.Role(RoleWatcher)
			cancel()
		}
		// Only for a term started (lead): a SIGTERM between the lock and
		// OnStartedLeading used to stop a term the user had not been told
		// of, and the user was told of it after, with a context already
		// done (spec's stopped-callback).
		if cb := f.cfg.Callbacks.OnStoppedLeading; cb != nil && started {
			cb()
		}
		// The leader's main activity only sleeps: no record write is in
		// flight, so the lock can go before the process does.
		if !f.mistake.in(mUnlockBeforeCancel, mNoUnlockOnTerm) && f.fl.Flock(fd, LOCK_UN) == nil {
			f.p.Log(MsgReleased, 0, 0)
		}
	}
	// A process that is not leading may be writing a record under the
	// lock right now: unlocking would let another process write beside
	// it. Its exit releases the lock, after that write.
	f.p.Exit(0)
}
