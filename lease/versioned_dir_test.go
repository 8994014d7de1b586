package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A lock whose directory is a symbolic link to a directory (/var/lib/job,
// a link to a volume) is that directory's lock: Run over it leads, and a
// store that names the directory itself reads its record. Before, every
// listing of the link failed with ENOTDIR (the FS's listing follows no
// link in its last element) and nobody ever led, reporting "readdir
// ...: not a directory" for ever (a probe).
func TestRunLockDirectoryIsASymlink(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "job")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := lease.NewFileStore(filepath.Join(link, "job.lease"))
	cfg := lease.Config{LeaseDuration: 3 * time.Second, RenewInterval: time.Second, WatchInterval: time.Second}
	cb, leading := started()
	var errs lockedBuffer
	cb.OnError = func(op string, err error) { fmt.Fprintf(&errs, "%s: %v\n", op, err) }
	cfg.Callbacks = cb
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, s, cfg, lease.RunOptions{})
	defer func() {
		cancel()
		<-done
	}()
	select {
	case lctx := <-leading:
		term, _ := lease.TermOf(lctx)
		rec, err := lease.NewFileStore(filepath.Join(real, "job.lease")).Read()
		if err != nil || rec.Epoch != term.Epoch() {
			t.Errorf("read through the directory itself: %+v, %v; want the leader's record, epoch %d", rec, err, term.Epoch())
		}
	case <-time.After(5 * time.Second):
		t.Errorf("over a lock directory that is a symbolic link, not leading within 5 s; errors:\n%s", errs.String())
	}
}

// A link to something that is not a directory still fails the listing,
// as ENOTDIR, and a dangling one as a missing directory.
func TestLockDirectorySymlinkToNoDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	toFile, dangling := filepath.Join(dir, "tofile"), filepath.Join(dir, "dangling")
	os.Symlink(file, toFile)
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	if _, err := lease.NewFileStore(filepath.Join(toFile, "job.lease")).Read(); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock in a link to a file: %v, want ENOTDIR", err)
	}
	if _, err := lease.NewFileStore(filepath.Join(dangling, "job.lease")).Read(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock in a dangling link: %v, want a missing directory", err)
	}
}
