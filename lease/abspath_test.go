package lease_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// A file store over a relative path names the files of the working
// directory it was made in, whatever the process's working directory is
// later: a leader whose process changed it (os.Chdir, in a library)
// renewed in the new directory, while another process took
// the old one over, and both led (a probe).
func TestNewFileStoreRelativePathSurvivesChdir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Chdir(a)
	s := lease.NewFileStore("job.lease")
	up := lease.NewFileStore(filepath.Join("..", filepath.Base(a), "job.lease"))
	t.Chdir(b)
	if _, err := s.Create(1, time.Second); err != nil {
		t.Fatal(err)
	}
	rec, err := lease.NewFileStore(filepath.Join(a, "job.lease")).Read()
	if err != nil || rec.Holder != 1 {
		t.Errorf("the record, read in the directory the store was made in: %+v, %v; want holder 1", rec, err)
	}
	if ents, _ := os.ReadDir(b); len(ents) != 0 {
		t.Errorf("the store wrote %d files in the working directory it was not made in", len(ents))
	}
	if rec, err := up.Read(); err != nil || rec.Holder != 1 {
		t.Errorf("over a path with a leading \"..\", from the directory it was made in: %+v, %v; want holder 1", rec, err)
	}
}
