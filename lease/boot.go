package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// BootIDer is an optional ability of a Proc: the identity of the machine's
// current boot (Linux: /proc/sys/kernel/random/boot_id; the simulator:
// the number of power losses so far). With it, the reference store makes
// its epochs unique across power losses with one durable record per boot
// instead of an fsync on every acquisition (see BootStride).
type BootIDer interface {
	BootID() (string, error)
}

// BootStride separates the epochs of successive boots: the reference
// store's epoch is (K-1)*BootStride + version, where K numbers the boot
// record PATH.boot.K of the machine's current boot. A power loss can take
// back version names that were never fsynced, so versions may repeat after
// one; K cannot (its record is fsynced, data and name, before any epoch of
// that boot is used). The link that starts a term is fsynced too: a
// process without a boot id sharing the directory takes the epoch after
// the record that survived, not a boot's base, and took a lost epoch
// again when it was not (a probe). Versions stay far below the stride (a
// renewal a second for thirty years).
const BootStride = 1_000_000_000

// MaxBootRecord is the highest boot record number the reference store
// takes for its own: a billion boots, whose base (K-1)*BootStride leaves
// room below the int64 limit for every version a name can carry (up to
// 18 digits). A name of a boot record's form above it is someone else's
// file: it neither sets the epoch base (where (K-1)*BootStride would
// overflow) nor is removed.
const MaxBootRecord = 1_000_000_000

// bootOf returns p's BootID, or nil if p cannot tell its boot: it has no
// BootIDer, or its machine has no boot id (the file does not exist, as on
// a kernel without /proc/sys/kernel/random/boot_id). Such a machine is
// one without boot records, whose stores fsync what each term's epoch
// needs instead (see BootStride): refusing to lead there would wedge every
// process for ever. Another error reading it (EIO) is met again, and
// waited out, when a store needs the boot.
func bootOf(p Proc) func() (string, error) {
	b, ok := p.(BootIDer)
	if !ok {
		return nil
	}
	if _, err := b.BootID(); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return b.BootID
}

// BootID implements BootIDer for the real runtime.
func (p *osProc) BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// bootUse is what bootBase may do besides learning this boot's record.
type bootUse uint8

const (
	// bootMake makes the record if it is missing (the reference: every
	// process, whenever it needs the boot's base).
	bootMake bootUse = iota
	// bootLearn makes nothing: it learns the record if there is one (a
	// flock process that does not hold the lock), else errNoBootRecord.
	bootLearn
	// bootSweep makes the record if it is missing, after removing the
	// temporary files others left (a flock process holding the lock,
	// under which nobody else makes one: see EpochFile.epochBase).
	bootSweep
)

// errNoBootRecord is bootBase's error, under bootLearn, when the
// directory holds no record of this boot yet.
var errNoBootRecord = errors.New("no boot record of this boot yet")

// bootBase returns (K-1)*BootStride for the boot record of the current
// boot, id, creating it durably if the newest record is another boot's
// (unless use is bootLearn). K is the highest boot record's number in the
// directory (records below it are removed once it is durable, so they
// need not be contiguous).
func (s *VersionedFile) bootBase(id string, use bootUse) (int64, error) {
	name := func(k int64) string { return s.Path + ".boot." + strconv.FormatInt(k, 10) }
	// linked is the record this pass found existing (EEXIST) when it tried
	// to link it: the next listing must show it, or one above it. One that
	// does not (the listing and the names disagree: a path naming no file,
	// or a record number past MaxBootRecord) would have this loop link
	// temporary files and fail for ever, so it is an error; and the loop
	// ends after bootPasses passes whatever happens.
	linked := int64(0)
	for pass := 0; ; pass++ {
		if pass == bootPasses {
			return 0, fmt.Errorf("boot record of %s: no record of this boot after %d attempts", s.Path, bootPasses)
		}
		l, err := s.list()
		if err != nil {
			return 0, err
		}
		if use == bootSweep {
			s.sweepBootTemps(l)
		}
		k := int64(0)
		if n := len(l.boots); n > 0 {
			k = l.boots[n-1]
		}
		if linked > k {
			return 0, fmt.Errorf("boot record %s exists, but a listing of %s does not show it", name(linked), filepath.Dir(s.Path))
		}
		if k > 0 {
			b, err := s.FS.ReadFile(name(k))
			switch {
			case err == nil && string(b) == id:
				// Ours, or linked by another process of this boot, which may
				// have died (or failed) before it fsynced the directory: make
				// the name durable before any epoch depends on it.
				if !s.NoDirSync {
					if err := syncDir(s.FS, s.Path); err != nil {
						return 0, err
					}
				}
				// Durable: the older records are no longer needed (a power
				// loss may bring them back, below this one).
				for _, old := range l.boots[:len(l.boots)-1] {
					if s.mistake == mKeepBootRecords { // mutant: a record a boot, for ever
						break
					}
					s.remove(name(old), 0, false)
				}
				return (k - 1) * BootStride, nil
			case errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.ENOMEM):
				// The disk failed this read: that says nothing about the
				// record, and a new one would give this process a base the
				// others of this boot do not share. Try again later.
				return 0, err
			}
			// Another boot's record (or one that is not a record at all).
		}
		switch left := s.leftTemps(); {
		case use == bootLearn:
			return 0, errNoBootRecord
		case len(left) > 0:
			// One temporary file a process at most (flock's bound counts
			// one): a new one waits until the last one's removal works.
			return 0, fmt.Errorf("boot record of %s: temporary file %s could not be removed", s.Path, left[0])
		}
		tmp, err := s.publishDurably(name(k+1), []byte(id))
		if tmp != "" && use == bootSweep {
			s.mu.Lock()
			s.left = append(s.left, tmp)
			s.mu.Unlock()
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return 0, err
		}
		linked = k + 1
		// Ours, or another process of this boot linked it first: read it.
	}
}

// bootPasses bounds bootBase's passes: each pass that goes on finds a
// higher record than the last (one that another process of this boot, or
// this one, linked), so a few suffice unless others keep linking.
const bootPasses = 16

// publishDurably links a file holding data at name (EEXIST if it exists),
// with the data and the name fsynced before it returns. It returns the
// temporary file's name too if its removal failed (it is left behind).
func (s *VersionedFile) publishDurably(name string, data []byte) (left string, _ error) {
	tmp, fd, err := s.openTemp()
	if err != nil {
		return "", err
	}
	defer s.doneTemp(tmp)
	_, err = s.FS.Write(fd, data)
	if err == nil && !s.NoDirSync {
		err = s.FS.Fsync(fd)
	}
	if err1 := s.FS.Close(fd); err == nil {
		err = err1
	}
	if err == nil {
		err = s.FS.Link(tmp, name)
	}
	if err := s.FS.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		left = tmp
	}
	if err != nil || s.NoDirSync {
		return left, err
	}
	return left, syncDir(s.FS, s.Path)
}

// sweepBootTemps removes, for a flock process holding the lock, every
// temporary file the listing l shows but its own under way. Flock makes
// them under the lock only (EpochFile.epochBase), so another's is a dead
// process's, or one's that left it behind: nobody is writing it (a
// review found flock sweeping none, and a process whose unlinks failed
// left its temporary files past flock's file bound). This process's own
// left ones need no read; another's is removed only if it is the
// protocol's (remove). What fails stays for the next sweep.
func (s *VersionedFile) sweepBootTemps(l listing) {
	s.mu.Lock()
	left, under := s.left, slices.Clone(s.temps)
	s.left = nil
	s.mu.Unlock()
	var still []string
	for _, t := range left {
		if slices.Contains(l.temps, t) && !s.remove(t, 0, true) {
			still = append(still, t)
		}
	}
	for _, t := range l.temps {
		if !slices.Contains(left, t) && !slices.Contains(under, t) {
			s.remove(t, 0, false)
		}
	}
	s.mu.Lock()
	s.left = append(s.left, still...)
	s.mu.Unlock()
}

// removeLeft removes this process's left temporary files, for a flock
// process holding the lock that needs no listing (it knows its boot's
// base): none was being written, and under the lock nobody makes one.
func (s *VersionedFile) removeLeft() {
	for _, t := range s.leftTemps() {
		if s.remove(t, 0, true) {
			s.mu.Lock()
			if i := slices.Index(s.left, t); i >= 0 {
				s.left = slices.Delete(s.left, i, i+1)
			}
			s.mu.Unlock()
		}
	}
}

// leftTemps returns this process's temporary files whose removal failed.
func (s *VersionedFile) leftTemps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.left)
}
