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
// that a live process of the other file store uses: the reference's
// versions (PATH.N) and flock's lock on PATH itself do not exclude each
// other, so the two would lead at once (a probe, 2026-12-05: a -store
// file runner, a -store flock runner and a seed on one path, three
// commands at once). It sees a flock leader (its lock on PATH held) and a
// reference writing versions (one made within two leases); what it cannot
// see, both started at once or a flock lease nobody holds, it leaves. A
// lock file counts as flock's only if it holds flock's record, and a
// version file as the reference's only if it holds a version record (a
// review: a flock(1) wrapper's lock on the same file, or dated files
// beside it, were refused).
func checkOneStore(v string, path string, d time.Duration) error {
	switch v {
	case "reference":
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil // no lock file: no flock store here
		}
		defer unix.Close(fd)
		if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
			if b, err := os.ReadFile(path); err == nil {
				if _, err := lease.ParseFlockRecord(b); err == nil {
					return usagef("-path %s: a flock leader holds this lock file (-store flock): its lock and the reference's versions (-store file) do not exclude each other; run every process of one lease with one store", path)
				}
			}
		} // (a shared lock taken is released by the close)
	case "flock":
		ents, err := os.ReadDir(filepath.Dir(path))
		if err != nil {
			return nil
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
				return usagef("-path %s: the reference (-store file) wrote version %s %v ago: its versions and flock's lock (-store flock) do not exclude each other; run every process of one lease with one store (or wait until those processes are gone)", path, e.Name(), time.Since(fi.ModTime()).Round(time.Millisecond))
			}
		}
	}
	return nil
}
