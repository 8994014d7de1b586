package lease_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/fstest"
)

func TestOSFS(t *testing.T) {
	fstest.TestFS(t, func(t *testing.T) (lease.FS, string) {
		return lease.OSFS{}, t.TempDir()
	})
}

func ExampleOSFS() {
	dir, err := os.MkdirTemp("", "lease")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "lease")

	var fsys lease.FS = lease.OSFS{}
	fd, err := fsys.Open(name, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
	if err != nil {
		panic(err)
	}
	fsys.Write(fd, []byte("holder 1"))
	fsys.Close(fd)

	// A second claimant finds the name taken.
	_, err = fsys.Open(name, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
	fmt.Println(errors.Is(err, fs.ErrExist))

	b, _ := fsys.ReadFile(name)
	fmt.Printf("%s\n", b)
	// Output:
	// true
	// holder 1
}
