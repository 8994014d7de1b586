package lease

import (
	"errors"
	"path/filepath"
	"syscall"
)

// listLockDir lists dir, the lock's directory, for names that begin with
// prefix (all of them where the FS is no [PrefixLister]). An FS's listing
// follows no symbolic link in its last element (FS.ReadDir: O_NOFOLLOW),
// but every other call of the store's names one in dir (PATH.N), which
// the kernel reaches through a link there as through any directory: a
// lock directory that is a symbolic link (/var/lib/job, a link to
// /srv/data/job) failed every listing with ENOTDIR, for ever, while the
// writes would have followed it, and nobody ever led (a probe,
// helper-112: lease.Run and leaselab run alike). Such a directory is
// listed as dir/., whose last element is the directory itself; a link
// to anything else fails there as it would have, with the error of dir/.
// (The first try keeps dir's own spelling: a directory that is no link
// costs nothing more.)
func listLockDir(fsys FS, dir, prefix string) ([]string, error) {
	names, err := listDir(fsys, dir, prefix)
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
		names, err = listDir(fsys, dir+string(filepath.Separator)+".", prefix)
	}
	return names, err
}

func listDir(fsys FS, dir, prefix string) ([]string, error) {
	if pl, ok := fsys.(PrefixLister); ok {
		return pl.ReadDirPrefix(dir, prefix)
	}
	return fsys.ReadDir(dir)
}
