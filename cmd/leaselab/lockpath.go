package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"golang.org/x/sys/unix"
)

// checkLockPath refuses, before anything is written, a lock path the
// daemon cannot use safely: in a directory that does not exist or that it
// cannot write, a directory or anything but a regular file at the path, a
// symbolic link (never followed: it could point the lease's writes
// anywhere another local user chose), or a lock file another user owns
// (that user could rewrite or remove the lease at will).
func checkLockPath(path string) error {
	// A path naming no file (a name ending in "/" that does not exist yet
	// passes the checks below) made the stores loop for ever.
	if err := lease.CheckLockPath(path); err != nil {
		return usagef("-path: %v", err)
	}
	// The stores derive names from the lock's: PATH.N, PATH.boot.N and
	// PATH.tmp.ID.SEQ, the longest, ID and SEQ up to 19 digits each. A
	// name whose derived names pass NAME_MAX (255 bytes) fails every
	// write with ENAMETOOLONG, for ever (a probe: a 245-byte name was
	// accepted, and nobody ever led).
	if base, max := filepath.Base(path), 255-len(".tmp.")-19-1-19; len(base) > max {
		return usagef("-path %s: the file name is %d bytes; at most %d leave room for the names derived from it (PATH.tmp.ID.SEQ within 255)", path, len(base), max)
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("-path %s: directory %s does not exist", path, dir)
	case err != nil:
		return usagef("-path %s: %v", path, err)
	case !di.IsDir():
		return usagef("-path %s: %s is not a directory", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return usagef("-path %s: cannot create files in %s: %v", path, dir, err)
	}
	// access(2) answers for root without asking the file system: a probe
	// ran -path /proc/x as root, passed, and nobody ever led. So a file is
	// made and removed (a full disk or quota is no refusal: space may come
	// back, and a leader steps down and recovers as it does).
	probe := filepath.Join(dir, fmt.Sprintf(".%s.probe.%d", filepath.Base(path), os.Getpid()))
	if f, err := os.OpenFile(probe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
		f.Close()
		os.Remove(probe)
	} else if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) && !errors.Is(err, fs.ErrExist) {
		return usagef("-path %s: cannot create files in %s: %v", path, dir, err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usagef("-path %s: %v", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return usagef("-path %s is a symbolic link: refusing to follow it", path)
	case fi.IsDir():
		return usagef("-path %s is a directory", path)
	case !fi.Mode().IsRegular():
		return usagef("-path %s is not a regular file (%v)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return usagef("-path %s is owned by uid %d, not by this user (uid %d): another user controls that lease", path, st.Uid, os.Geteuid())
	}
	return nil
}

// checkOneStore refuses to start variant v (with lease d) on a lock path
// that a live process of another file store uses: the reference's
// versions (PATH.N), flock's lock on PATH itself and the seed variants'
// record at PATH do not exclude each other, so two would lead at once (a
// probe, 2026-12-05: a -store file runner, a -store flock runner and a
// seed on one path, three commands at once; a deployment probe,
// 2026-12-07: a reference and a -variant seed, both leading for good). It
// sees a flock leader (its lock on PATH held), a reference writing
// versions (one made within two leases) and a seed's lease (its record's
// leaseUntil not yet past); what it cannot see, both started at once or a
// flock lease nobody holds, it leaves. A lock file counts as flock's only
// if it holds flock's record, and a version file as the reference's only
// if it holds a version record (a review: a flock(1) wrapper's lock on the
// same file, or dated files beside it, were refused).
func checkOneStore(v string, path string, d time.Duration) error {
	one := "; run every process of one lease with one store (or wait until those processes are gone)"
	if v != "flock" && flockLeader(path) {
		return usagef("-path %s: a flock leader holds this lock file (-store flock): its lock and the %s do not exclude each other%s", path, storeName(v), one)
	}
	if v != "reference" {
		if name, age, ok := recentVersion(path, d); ok {
			return usagef("-path %s: the reference (-store file) wrote version %s %v ago: its versions and the %s do not exclude each other%s", path, name, age.Round(time.Millisecond), storeName(v), one)
		}
	}
	if !strings.HasPrefix(v, "seed") {
		if until, ok := seedLease(path, d); ok {
			return usagef("-path %s: a seed variant's record (-variant seed...) holds this lock file until %s: its record and the %s do not exclude each other%s", path, until.Format(time.RFC3339), storeName(v), one)
		}
	}
	return nil
}

// storeName says what variant v keeps its lease in.
func storeName(v string) string {
	switch {
	case v == "reference":
		return "reference's versions (-store file)"
	case v == "flock":
		return "flock's lock (-store flock)"
	}
	return "-variant " + v + "'s record"
}

// flockLeader says whether a flock leader holds path: its lock taken,
// flock's record in it.
func flockLeader(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false // no lock file: no flock store here
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		if b, err := os.ReadFile(path); err == nil {
			if _, err := lease.ParseFlockRecord(b); err == nil {
				return true
			}
		}
	} // (a shared lock taken is released by the close)
	return false
}

// recentVersion is a version record of the reference's beside path made
// within two leases of d: its name and age.
func recentVersion(path string, d time.Duration) (string, time.Duration, bool) {
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return "", 0, false
	}
	base := filepath.Base(path) + "."
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), base)
		if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), e.Name())); err != nil {
			continue
		} else if _, err := lease.ParseVersioned(b); err != nil {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) < 2*d {
			return e.Name(), time.Since(fi.ModTime()), true
		}
	}
	return "", 0, false
}

// seedLease is the end of a seed variant's lease at path: a record of the
// post's {processId, leaseUntil}, written within two leases of d, whose
// leaseUntil (whole seconds of the wall clock) has not passed. (A record
// left there long ago, whatever it says, is no live seed's: the
// reference elects over whatever is left at the path.)
func seedLease(path string, d time.Duration) (time.Time, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return time.Time{}, false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) >= 2*d {
		return time.Time{}, false
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	rec, err := lease.ParseRecord(b[:n])
	if err != nil || rec.Holder <= 0 || rec.Until < time.Now().Unix() {
		return time.Time{}, false
	}
	return time.Unix(rec.Until, 0), true
}
