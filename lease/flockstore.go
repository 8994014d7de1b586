package lease

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// FlockRegister is a lease register on a lock file whose every operation runs
// under the file's flock(2) lock: lock, read the record, compare, write the
// next version, unlock. It is the flock store as a [Store], for the
// reference algorithm or any other (the flock variant instead holds the
// lock for as long as it leads, and uses [EpochFile] under it).
//
// The record is one fixed-size write at offset 0,
// {"processId":H,"epoch":E,"version":V} padded with spaces: the file is
// never truncated, renamed or removed, so every process locks the same
// inode. Versions increase with every write; the epoch is the version of
// the write that acquired; a release writes holder 0 and the next version,
// so epochs are never reused. There is no expiry: the caller judges it.
// Writes are fsynced with the directory, so a power loss keeps them.
type FlockRegister struct {
	FS   FlockFS
	Path string
}

var _ Store = FlockRegister{}

type flockStoreRecord struct {
	Holder  int64 `json:"processId"`
	Epoch   int64 `json:"epoch"`
	Version int64 `json:"version"`
}

// locked runs f with the lock file locked, passing the current record
// (Version 0 if there is none yet).
func (s FlockRegister) locked(f func(cur Record) (Record, error)) (rec Record, err error) {
	fd, err := s.FS.Open(s.Path, O_RDWR|O_CREATE|O_NOFOLLOW, perm)
	if err != nil {
		return Record{}, err
	}
	defer s.FS.Close(fd) // closing the locking descriptor releases the lock
	if err := s.FS.Flock(fd, LOCK_EX); err != nil {
		return Record{}, err
	}
	b, err := s.FS.ReadFile(s.Path)
	if err != nil {
		return Record{}, err
	}
	var cur Record
	if len(b) > 0 {
		var r flockStoreRecord
		if err := json.Unmarshal(b, &r); err != nil || r.Version <= 0 || r.Holder < 0 || r.Epoch < 0 {
			return Record{}, &fs.PathError{Op: "read", Path: s.Path, Err: ErrUnreadable}
		}
		cur = Record{Holder: r.Holder, Epoch: r.Epoch, Version: r.Version}
	}
	return f(cur)
}

func (s FlockRegister) write(rec Record) (Record, error) {
	b, _ := json.Marshal(flockStoreRecord{rec.Holder, rec.Epoch, rec.Version})
	if len(b) > FlockRecordSize {
		return Record{}, fmt.Errorf("record %s longer than %d bytes", b, FlockRecordSize)
	}
	for len(b) < FlockRecordSize {
		b = append(b, ' ')
	}
	fd, err := s.FS.Open(s.Path, O_WRONLY|O_NOFOLLOW, perm)
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	_, err = s.FS.Write(fd, b)
	if err == nil {
		err = s.FS.Fsync(fd)
	}
	if err1 := s.FS.Close(fd); err == nil {
		err = err1
	}
	if err != nil {
		return Record{}, &StepError{Step: "write", Err: err}
	}
	if err := syncDir(s.FS, s.Path); err != nil {
		return Record{}, &StepError{Step: "sync", Err: err}
	}
	return rec, nil
}

func (s FlockRegister) notFound() error {
	return &fs.PathError{Op: "read", Path: s.Path, Err: syscall.ENOENT}
}

// Read returns the record; none, or a released one, is an error for which
// errors.Is(err, fs.ErrNotExist).
func (s FlockRegister) Read() (Record, error) {
	return s.locked(func(cur Record) (Record, error) {
		if cur.Holder == 0 {
			return Record{}, s.notFound()
		}
		return cur, nil
	})
}

// Create writes a record for holder, with a new epoch, if there is no live
// one.
func (s FlockRegister) Create(holder int64, ttl time.Duration) (Record, error) {
	return s.locked(func(cur Record) (Record, error) {
		if cur.Holder != 0 {
			return Record{}, &fs.PathError{Op: "create", Path: s.Path, Err: syscall.EEXIST}
		}
		v := cur.Version + 1
		return s.write(Record{Holder: holder, Epoch: v, Version: v})
	})
}

// compare is the compare of every compare-and-set: the whole record.
func (s FlockRegister) compare(cur, want Record, f func() (Record, error)) (Record, error) {
	if cur.Holder == 0 || cur != want {
		return Record{}, ErrConflict
	}
	return f()
}

// Renew writes the next version of cur if it is still current.
func (s FlockRegister) Renew(cur Record, ttl time.Duration) (Record, error) {
	return s.locked(func(now Record) (Record, error) {
		return s.compare(now, cur, func() (Record, error) {
			return s.write(Record{Holder: cur.Holder, Epoch: cur.Epoch, Version: now.Version + 1})
		})
	})
}

// Takeover writes a record for holder, with a new epoch, if stale is still
// current.
func (s FlockRegister) Takeover(stale Record, holder int64, ttl time.Duration) (Record, error) {
	return s.locked(func(now Record) (Record, error) {
		return s.compare(now, stale, func() (Record, error) {
			v := now.Version + 1
			return s.write(Record{Holder: holder, Epoch: v, Version: v})
		})
	})
}

// Release writes a released record (holder 0, the next version) if cur is
// still current.
func (s FlockRegister) Release(cur Record) error {
	_, err := s.locked(func(now Record) (Record, error) {
		return s.compare(now, cur, func() (Record, error) {
			return s.write(Record{Epoch: cur.Epoch, Version: now.Version + 1})
		})
	})
	return err
}
