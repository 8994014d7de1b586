package trace_test

import (
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// The checker's reading of the Store contract's outcomes, by operation:
// what a caller is owed word of (errors-reported).
func TestOwedError(t *testing.T) {
	path := func(op string, errno syscall.Errno) error { return &fs.PathError{Op: op, Path: "/d/lock", Err: errno} }
	wrapped := fmt.Errorf("renew: %w", lease.ErrConflict)
	for _, c := range []struct {
		op   trace.StoreOp
		err  error
		owed bool
	}{
		{trace.StoreRead, nil, false},
		{trace.StoreRead, path("open", syscall.ENOENT), false},   // no record
		{trace.StoreRead, path("readdir", syscall.ENOENT), true}, // no directory
		{trace.StoreRead, path("read", syscall.EIO), true},
		{trace.StoreRead, lease.ErrConflict, true},
		{trace.StoreCreate, path("link", syscall.EEXIST), false},
		{trace.StoreCreate, wrapped, false}, // a superseded create lost a race
		{trace.StoreCreate, path("link", syscall.ENOENT), true},
		{trace.StoreCreate, path("write", syscall.ENOSPC), true},
		{trace.StoreRenew, wrapped, false},
		{trace.StoreRenew, path("link", syscall.ENOENT), true}, // its temporary file removed
		{trace.StoreRenew, path("link", syscall.EEXIST), true},
		{trace.StoreTakeover, lease.ErrConflict, false},
		{trace.StoreTakeover, path("rpc", syscall.ECONNRESET), true},
		{trace.StoreRelease, lease.ErrConflict, false},
		{trace.StoreRelease, path("remove", syscall.ENOENT), true},
	} {
		if got := trace.OwedError(c.op, c.err); got != c.owed {
			t.Errorf("OwedError(%v, %v) = %v, want %v", c.op, c.err, got, c.owed)
		}
	}
}
