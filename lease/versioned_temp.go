package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
)

// errSuperseded is a write whose listing after its link showed a higher
// version: it does not stand (see VersionedFile). It is ErrConflict to
// the caller, and an unknown outcome to the register's model: the write
// may have taken effect and been overtaken at once.
type errSuperseded struct{ v, max int64 }

// Superseded reports whether err is a versioned write that linked its
// version but found a higher one right after: ErrConflict to the caller,
// whose outcome the register's model cannot know.
func Superseded(err error) bool {
	// (errors.As, walked by hand: its target escapes, and this is asked of
	// every failed store call of every simulated run.)
	for err != nil {
		switch x := err.(type) {
		case errSuperseded:
			return true
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if Superseded(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// An Instancer is an optional ability of a Proc: it tells the processes
// of one PID apart (containers in PID namespaces of their own sharing the
// lock's directory). Instance is a number that no other process of the
// same PID uses while this one lives; the simulator's is 0 for the first
// process of its PID and the process's index for any other. Without it
// the reference store draws one at random (NewFileStore).
type Instancer interface {
	Instance() uint64
}

// TempBase returns the sequence number below the first temporary file
// of p's process (VersionedFile.TempBase): its Instance times 2^32 if p
// is an Instancer, else a random multiple of 2^16 below 2^56.
func TempBase(p Proc) int64 {
	if in, ok := p.(Instancer); ok {
		return int64(in.Instance()%(1<<24)) << 32
	}
	return RandomTempBase()
}

// RandomTempBase is a random multiple of 2^16 below 2^56: two processes
// of one PID start their temporary names' sequences 2^16 or more apart,
// the same with probability 2^-40.
//
// (NewNonce's 63 bits shifted by 7: by 24, as first written, the base
// was below 2^39, one of 2^23, not 2^40, as said here and in the README.)
func RandomTempBase() int64 { return int64(NewNonce()>>7) &^ (1<<16 - 1) }

// newTemp names a new temporary file of this process and notes it as
// under way. Its sequence starts at TempBase, which no other process of
// the PID shares: a name this process made, removed by another's sweep
// while it was paused (it looked like a dead writer's), is never made
// again by another process of its PID before this one's link, which
// would then publish that process's file as its own version (found
// 2026-12-07 by a check of three processes of PID 1: a leader paused
// between its temporary file's create and its link, and the name's
// second maker's content linked).
func (s *VersionedFile) newTemp() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tempSeq == 0 {
		s.tempSeq = s.TempBase
	}
	s.tempSeq++
	tmp := s.Path + ".tmp." + strconv.FormatInt(s.PID, 10) + "." + strconv.FormatInt(s.tempSeq, 10)
	s.temps = append(s.temps, tmp)
	return tmp
}

// maxTempTries is how many temporary names openTemp tries.
const maxTempTries = 64

// openTemp makes a new temporary file of this process, O_EXCL, and notes
// it as under way. A name that exists is another process's of the same
// PID (a container's, in a PID namespace of its own, sharing the lock's
// directory) or a dead process's of this PID, not a record: the next
// name is tried. (A check with shared PIDs: a create reported "a lease
// exists" because another process of its PID had made the same
// temporary name, and no lease did.)
func (s *VersionedFile) openTemp() (string, FD, error) {
	for range maxTempTries {
		tmp := s.newTemp()
		fd, err := s.FS.Open(tmp, O_WRONLY|O_CREATE|O_EXCL, perm)
		if err == nil {
			if m, ok := s.FS.(ModeSetter); ok {
				// Readable by every participant, whatever the umask (see
				// ModeSetter). Should it fail, the umask's mode stands:
				// those who can read it still can.
				_ = m.Fchmod(fd, perm)
			}
			return tmp, fd, nil
		}
		s.doneTemp(tmp)
		if !errors.Is(err, fs.ErrExist) || s.mistake == mTempExistIsRecord { // mutant: the name's EEXIST taken for the record's
			return "", 0, err
		}
	}
	return "", 0, fmt.Errorf("%s.tmp.%d.*: %d temporary names in a row exist (left by processes of pid %d)", s.Path, s.PID, maxTempTries, s.PID)
}

// doneTemp notes that temporary file tmp is no longer under way.
func (s *VersionedFile) doneTemp(tmp string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.temps, tmp); i >= 0 {
		s.temps = slices.Delete(s.temps, i, i+1)
	}
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
	base, err = s.bootBase(id, bootMake)
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
// boot, for its boot record (see BootStride), and after every link that
// starts a term, before the caller acts on the new epoch: were that name
// lost to a power loss, the next
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
