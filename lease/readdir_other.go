//go:build !linux

package lease

import (
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// ReadDir lists directory dir with os.ReadDir's getdirentries: one call
// for a small directory, but, unlike on Linux, with nothing to tell a
// listing of several calls that a link or unlink landed half way through
// it: FS.ReadDir's one instant holds only for a directory one call lists
// (keep the lock in a directory of its own).
func (OSFS) ReadDir(dir string) ([]string, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, normalise("readdir", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: syscall.ELOOP}
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, normalise("readdir", dir, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, normalise("readdir", dir, err)
	}
	slices.Sort(names)
	return names, nil
}

// ReadDirPrefix implements PrefixLister: ReadDir's names that begin with
// prefix.
func (f OSFS) ReadDirPrefix(dir, prefix string) ([]string, error) {
	names, err := f.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	kept := names[:0]
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			kept = append(kept, n)
		}
	}
	return kept, nil
}
