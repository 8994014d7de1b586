package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// unreadable is what the reference's store (lease.VersionedFile) returns
// for version v when it found v's name but could not read its content (an
// EIO): a record held by lease.Unknown with v's version and nothing else.
func unreadable(v int64) lease.Record { return lease.Record{Holder: lease.Unknown, Version: v} }

// A versioned store's record is named by its version, and a read that
// found the version but not its content (EIO) still names it: a takeover
// of that record is a compare-and-set on the version, whatever the version
// holds, a live lease or a release. The recorders (sim/recstore.go,
// cmd/leaselab/history.go, storetest) record such a read as ResUnknown;
// the model reads the record it returned all the same (and takes ResOK
// alike).
//
// "takeover of a released version read as unknown" is run 4007 of
// `leaselab check -variant reference -faults all,power -runs 20000 -seed
// 7` (spec's TestUnreadableReleaseTakeover replays it), which the model
// used to reject: it had no record for a release to compare with.
func TestUnreadableVersion(t *testing.T) {
	b3 := lease.Record{Holder: 200, Epoch: 3, Version: 3}
	c3 := lease.Record{Holder: 300, Epoch: 3, Version: 3}
	c4 := lease.Record{Holder: 300, Epoch: 3, Version: 4}
	b2 := lease.Record{Holder: 200, Epoch: 2, Version: 2}
	b6 := lease.Record{Holder: 200, Epoch: 6, Version: 6}
	unk := func(r lease.Record) Output { return Output{Res: trace.ResUnknown, Rec: r} }
	tests := []history{
		// 100 acquires (version 1) and releases (version 2); 200's reads of
		// version 2 fail with EIO; it waits version 2 out and takes it over
		// with version 3.
		{"takeover of a released version read as unknown", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 40, 50, read(), unk(unreadable(2))),
			op(1, 60, 70, read(), unk(unreadable(2))),
			op(1, 80, 90, takeover(unreadable(2), 200), ok(b3)),
			op(2, 100, 110, read(), ok(b3)),
		}, true},
		{"takeover of a released version read as ok with holder unknown", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 40, 50, read(), ok(unreadable(2))),
			op(1, 80, 90, takeover(unreadable(2), 200), ok(b3)),
		}, true},
		// The same with 100's lease live: the version is the compare.
		{"takeover of a live version read as unknown", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(1, 40, 50, read(), unk(unreadable(1))),
			op(1, 80, 90, takeover(unreadable(1), 200), ok(b2)),
			op(0, 100, 110, renew(v1), res(trace.ResConflict)),
		}, true},
		// Two watchers read version 2 unreadable; one takeover wins.
		{"two takeovers of an unreadable version, one conflicts", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 40, 50, read(), unk(unreadable(2))),
			op(2, 40, 50, read(), unk(unreadable(2))),
			op(1, 80, 100, takeover(unreadable(2), 200), ok(b3)),
			op(2, 85, 105, takeover(unreadable(2), 300), res(trace.ResConflict)),
		}, true},
		// The compare is still a compare.
		{"two takeovers of an unreadable version both succeed", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 40, 50, read(), unk(unreadable(2))),
			op(2, 40, 50, read(), unk(unreadable(2))),
			op(1, 80, 100, takeover(unreadable(2), 200), ok(b3)),
			op(2, 85, 105, takeover(unreadable(2), 300), ok(c3)),
		}, false},
		{"takeover of an unreadable version conflicts while it is current", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(1, 40, 50, read(), unk(unreadable(1))),
			op(1, 80, 90, takeover(unreadable(1), 200), res(trace.ResConflict)),
		}, false},
		{"takeover of an unreadable version after a renewal", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(1, 40, 50, read(), unk(unreadable(1))),
			op(0, 60, 70, renew(v1), ok(v2)),
			op(1, 80, 90, takeover(unreadable(1), 200), ok(b3)),
		}, false},
		{"takeover of an unreadable version after a renewal conflicts", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(1, 40, 50, read(), unk(unreadable(1))),
			op(0, 60, 70, renew(v1), ok(v2)),
			op(1, 80, 90, takeover(unreadable(1), 200), res(trace.ResConflict)),
		}, true},
		// A released version read as unknown, then acquired and released
		// again by 300 (versions 3, 4, 5): version 2 is long gone.
		{"takeover of a released version after another term", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 40, 50, read(), unk(unreadable(2))),
			op(2, 60, 70, create(300), ok(c3)),
			op(2, 70, 75, renew(c3), ok(c4)),
			op(2, 80, 90, release(c4), ok(lease.Record{})),
			op(1, 100, 110, takeover(unreadable(2), 200), ok(b6)),
		}, false},
		// Nor can a never-written record be taken over.
		{"takeover of an unreadable version never read", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, release(v1), ok(lease.Record{})),
			op(1, 80, 90, takeover(unreadable(2), 200), ok(b3)),
		}, false},
		// The read names a version: it must be the current one.
		{"read of an unreadable version that is not current", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, renew(v1), ok(v2)),
			op(1, 40, 50, read(), unk(unreadable(1))),
		}, false},
		{"read of an unreadable version concurrent with its renewal", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 50, renew(v1), ok(v2)),
			op(1, 30, 40, read(), unk(unreadable(1))),
		}, true},
		// A read that failed outright (its record zero) still says nothing.
		{"read that failed with no record", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, renew(v1), ok(v2)),
			op(1, 40, 50, read(), res(trace.ResUnknown)),
		}, true},
		// After a renewal whose outcome is unknown, the version may be
		// either.
		{"takeover of an unreadable version after an unknown renewal", []porcupine.Operation{
			op(0, 0, 10, create(100), ok(v1)),
			op(0, 20, 30, renew(v1), res(trace.ResUnknown)),
			op(1, 40, 50, read(), unk(unreadable(2))),
			op(1, 80, 90, takeover(unreadable(2), 200), ok(b3)),
		}, true},
	}
	checkHistories(t, tests)
}

// The records and states of an unreadable version print as such.
func TestDescribeUnreadable(t *testing.T) {
	if got, want := Register.DescribeOperation(takeover(unreadable(2), 200), ok(lease.Record{Holder: 200, Epoch: 3, Version: 3})),
		"takeover({? version 2}) by 200 → ok {200 epoch 3 version 3}"; got != want {
		t.Errorf("DescribeOperation = %q, want %q", got, want)
	}
	named := State{Rec: lease.Record{Version: 2}}
	if got, want := describeState(named), "empty, version 2"; got != want {
		t.Errorf("describeState = %q, want %q", got, want)
	}
	m := nondeterministic
	if m.Equal(named, empty) || m.Hash(named) == m.Hash(empty) {
		t.Error("an empty register named by a version equals (or hashes as) an unnamed one")
	}
}
