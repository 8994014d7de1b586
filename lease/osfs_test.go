package lease_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// A blocking LOCK_EX on the real kernel waits until the holder unlocks,
// which the conformance suite cannot check on the simulator's file system
// (a View has no scheduler; sim's own tests check its waiting).
func TestOSFSFlockWaits(t *testing.T) {
	var fsys lease.FlockFS = lease.OSFS{}
	name := filepath.Join(t.TempDir(), "lock")
	open := func() lease.FD {
		fd, err := fsys.Open(name, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	a, b := open(), open()
	defer fsys.Close(a)
	defer fsys.Close(b)
	if err := fsys.Flock(a, lease.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- fsys.Flock(b, lease.LOCK_EX) }()
	select {
	case err := <-got:
		t.Fatalf("LOCK_EX of a held lock returned %v without waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	released := time.Now()
	if err := fsys.Flock(a, lease.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("LOCK_EX after the release: %v", err)
		}
		t.Logf("the waiter got the lock %v after the release", time.Since(released))
	case <-time.After(5 * time.Second):
		t.Fatal("LOCK_EX still waits 5 s after the release")
	}
}
