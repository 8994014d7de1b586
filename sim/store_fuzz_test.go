package sim

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/leaselab/leaselab/lease"
)

// FuzzVersionedFile drives the reference's store with fuzzed sequences of
// operations by three holders on the simulated file system, each holder
// acting on what it last saw (so stale expectations are common), and
// checks every result against the register it must be: the record is
// the last successful write; Create succeeds exactly when there is no live
// record; Renew, Takeover and Release succeed exactly when their
// expectation is the current version; every write makes the next version;
// epochs strictly increase from term to term and are never reused.
func FuzzVersionedFile(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 0x11, 0x21, 3, 0x13, 0x14, 4, 0x24, 2, 0x12, 0x22})
	f.Fuzz(func(t *testing.T, ops []byte) {
		fsys := NewFileSystem()
		fsys.MkdirAll("/d")
		const path = "/d/lock"
		stores := make([]*lease.VersionedFile, 3)
		seen := make([]lease.Record, 3)
		for i := range stores {
			stores[i] = &lease.VersionedFile{FS: fsys.View(fsys.NewFDTable()), Path: path, PID: int64(i + 1)}
		}
		var cur lease.Record // the model: Version 0 means none yet
		live := false
		usedEpochs := map[int64]bool{}
		for _, b := range ops {
			h, op := int(b>>4)%3, b%5
			s, holder := stores[h], int64(h+1)
			switch op {
			case 0: // read
				r, err := s.Read()
				switch {
				case !live && !errors.Is(err, fs.ErrNotExist):
					t.Fatalf("read with no live record: %+v, %v", r, err)
				case live && (err != nil || r != cur):
					t.Fatalf("read %+v, %v; want %+v", r, err, cur)
				}
				if err == nil {
					seen[h] = r
				}
			case 1: // create
				r, err := s.Create(holder, 0)
				if live != (err != nil) {
					t.Fatalf("create by %d with live=%v: %+v, %v", holder, live, r, err)
				}
				if err == nil {
					if r.Version != cur.Version+1 || r.Epoch != r.Version || r.Holder != holder || usedEpochs[r.Epoch] {
						t.Fatalf("create after %+v wrote %+v", cur, r)
					}
					usedEpochs[r.Epoch] = true
					cur, live, seen[h] = r, true, r
				}
			case 2, 3, 4: // renew, takeover, release of what this holder saw
				exp := seen[h]
				if exp.Version == 0 {
					continue
				}
				var r lease.Record
				var err error
				switch op {
				case 2:
					r, err = s.Renew(exp, 0)
				case 3:
					r, err = s.Takeover(exp, holder, 0)
				case 4:
					err = s.Release(exp)
				}
				ok := exp.Version == cur.Version
				if ok != (err == nil) {
					t.Fatalf("op %d by %d expecting %+v, current %+v: err %v", op, holder, exp, cur, err)
				}
				if err != nil {
					if !errors.Is(err, lease.ErrConflict) {
						t.Fatalf("a failed compare is not ErrConflict: %v", err)
					}
					continue
				}
				switch op {
				case 2:
					if r.Version != cur.Version+1 || r.Epoch != exp.Epoch || r.Holder != exp.Holder {
						t.Fatalf("renew of %+v wrote %+v", exp, r)
					}
				case 3:
					if r.Version != cur.Version+1 || r.Epoch != r.Version || r.Holder != holder || usedEpochs[r.Epoch] {
						t.Fatalf("takeover of %+v wrote %+v", exp, r)
					}
					usedEpochs[r.Epoch] = true
				case 4:
					r = lease.Record{Version: cur.Version + 1, Epoch: cur.Epoch}
				}
				cur, live, seen[h] = r, op != 4 && r.Holder != 0, r
			}
		}
	})
}
