package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkLockPath refuses, before anything is written, a lock path the
// daemon cannot use safely: in a directory that does not exist or that it
// cannot write, a directory or anything but a regular file at the path, a
// symbolic link (never followed: it could point the lease's writes
// anywhere another local user chose), or a lock file another user owns
// (that user could rewrite or remove the lease at will).
func checkLockPath(path string) error {
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
