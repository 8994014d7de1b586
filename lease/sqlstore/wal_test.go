package sqlstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// SQLite checkpoints its write-ahead log when a write statement is stepped
// to its end: renewal after renewal, the log stays at about SQLite's
// checkpoint threshold (1,000 pages), where a store that left its writes
// one step short grew it by a page a write for ever.
func TestWriteAheadLogBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("3,000 writes")
	}
	path := filepath.Join(t.TempDir(), "lease.db")
	s, err := Open(context.Background(), SQLite, path, Options{Name: "wal"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const writes = 3000
	for i := range writes {
		if rec, err = s.Renew(rec, 9*time.Second); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	if err := s.Release(rec); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 pages of 4 KB and a little: 3,000 writes unchecked are 12 MB.
	if fi.Size() > 6<<20 {
		t.Errorf("after %d writes the write-ahead log is %d bytes: it is never checkpointed", writes+2, fi.Size())
	}
	if _, err := s.Read(); !errors.Is(err, lease.ErrReleased) {
		t.Errorf("read after the release: %v, want lease.ErrReleased", err)
	}
}
