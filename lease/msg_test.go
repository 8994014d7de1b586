package lease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

func TestMsgFormat(t *testing.T) {
	at := time.Date(2025, 10, 14, 21, 14, 56, 0, time.UTC).Unix()
	later := time.Date(2025, 10, 14, 21, 15, 5, 0, time.UTC).Unix()
	cases := []struct {
		m      lease.Msg
		a, b   int64
		want   string
		stderr bool
	}{
		{lease.MsgStarted, 60217, 0, "Process started with id:  60217", true},
		{lease.MsgAcquired, at, later, "[LEADER] Acquired lease at 21:14:56, valid until 21:15:05", false},
		{lease.MsgWatchUnreadable, 0, 0, "[WATCHER] Could not read lease file, will retry", false},
		{lease.MsgExpired, 60217, at, "[WATCHER] Lease held by 60217 expired at 21:14:56, attempting takeover", false},
		{lease.MsgRemoveFailed, 0, 0, "[WATCHER] Failed to remove expired lease, will retry", false},
		{lease.MsgLostRace, 0, 0, "[WATCHER] Lost takeover race, another process acquired first", false},
		{lease.MsgWriteFailed, 0, 0, "[WATCHER] Failed to write new lease, will retry", false},
		{lease.MsgTakeover, later, 0, "[WATCHER] Takeover successful, now leader until 21:15:05", false},
		{lease.MsgHeld, 60217, at, "[WATCHER] Lease held by 60217, valid until 21:14:56", false},
		{lease.MsgStepDown, 0, 0, "[LEADER] Lease file unreadable, stepping down", false},
		{lease.MsgRenewUnreadable, 0, 0, "[LEADER] Could not read lease file, will retry", false},
		{lease.MsgTaken, 60218, 0, "[LEADER] Lease taken by 60218, stepping down to watcher", false},
		{lease.MsgRenewFailed, 0, 0, "[LEADER] Failed to renew lease, will retry", false},
		{lease.MsgRenewed, later, 0, "[LEADER] Lease renewed, valid until 21:15:05", false},
		{lease.MsgShutdown, 0, 0, "Received shutdown signal, releasing lease", false},
		{lease.MsgReleased, 0, 0, "Lease released", false},
		{lease.MsgRefAcquired, 7, 7, "[LEADER] Acquired lease, epoch 7 (version 7)", false},
		{lease.MsgRefRenewed, 9, 0, "[LEADER] Lease renewed, version 9", false},
		{lease.MsgRefDeadline, 0, 0, "[LEADER] Local deadline passed without a renewal, stepping down", false},
		{lease.MsgRefLost, 10, 0, "[LEADER] Lease version 10 replaced by another write, stepping down", false},
		{lease.MsgRefHeld, 60217, 4, "[WATCHER] Lease held by 60217, version 4", false},
		{lease.MsgRefExpired, 60217, 0, "[WATCHER] Lease held by 60217 unchanged for the lease duration, taking over", false},
		{lease.MsgRefTakeover, 11, 0, "[WATCHER] Takeover successful, epoch 11", false},
		{lease.MsgRefUnreadable, 5, 0, "[WATCHER] Lease version 5 unreadable, waiting it out", false},
		{lease.MsgRefVanished, 1001, 7, "[WATCHER] The store lost the lease held by 1001, version 7: waiting it out", false},
		{lease.MsgRefVanishedUnknown, 7, 0, "[WATCHER] The store lost lease version 7, its holder unknown: waiting it out", false},
		{lease.MsgRefReleaseFailed, 0, 0, "Could not release the lease: it expires at its lease's end", false},
		{lease.MsgRefReleaseSkipped, 0, 0, "Lease no longer ours, nothing to release", false},
		{lease.MsgRefReleaseLate, 0, 0, "Local deadline passed before the release: the lease expires at its lease's end", false},
		{lease.MsgRefNotLeading, 0, 0, "Not leading, nothing to release", false},
		{lease.MsgRefWriteFailed, 640, 0, "[WATCHER] Could not write the lease, trying again in 640 ms", false},
		{lease.MsgRefOwn, 7, 0, "[WATCHER] Lease version 7 is still our own last write, taking it back", false},
		{lease.MsgStopping, 0, 0, "Stopping, releasing lease", false},
		{lease.MsgFlockAcquired, 3, 0, "[LEADER] Acquired flock, epoch 3", false},
		{lease.MsgFlockWaiting, 0, 0, "[WATCHER] Lock held by another process, waiting", false},
		{lease.MsgFlockOpenFailed, 0, 0, "[WATCHER] Could not open lock file, will retry", false},
		{lease.MsgFlockLockFailed, 0, 0, "[WATCHER] Could not lock lock file, will retry", false},
		{lease.MsgFlockRecordFailed, 0, 0, "[WATCHER] Could not read or write lease record, unlocking, will retry", false},
		{lease.MsgFlockUnreadable, 1760476478000000, 0, "[WATCHER] Lease record unreadable, taking epoch 1760476478000000 from the wall clock", false},
		{lease.MsgFlockReplaced, 0, 0, "[LEADER] Lock file removed or replaced at its path, stepping down", false},
	}
	seen := map[lease.Msg]bool{}
	for _, tc := range cases {
		seen[tc.m] = true
		if got := tc.m.Format(tc.a, tc.b, time.UTC); got != tc.want {
			t.Errorf("Msg %d .Format(%d, %d, UTC) = %q, want %q", tc.m, tc.a, tc.b, got, tc.want)
		}
		if got := tc.m.Stderr(); got != tc.stderr {
			t.Errorf("Msg %d (%q).Stderr() = %v, want %v", tc.m, tc.want, got, tc.stderr)
		}
	}
	// Every message of every algorithm has a case: each number that does
	// not format as an unknown one is a message.
	n := 0
	for m := range 256 {
		if strings.HasPrefix(lease.Msg(m).Format(0, 0, time.UTC), "Msg(") {
			continue
		}
		n++
		if !seen[lease.Msg(m)] {
			t.Errorf("Msg %d (%q) has no case in this test", m, lease.Msg(m).Format(0, 0, time.UTC))
		}
	}
	if n != len(cases) {
		t.Errorf("%d messages, %d cases", n, len(cases))
	}
	if got := lease.Msg(200).Format(1, 2, time.UTC); got != "Msg(200)" {
		t.Errorf("Msg(200).Format = %q, want \"Msg(200)\"", got)
	}
	if lease.Msg(200).Stderr() {
		t.Error("Msg(200).Stderr() = true")
	}
	// Times are rendered in the given location.
	cet := time.FixedZone("CET", 3600)
	if got, want := lease.MsgHeld.Format(60217, at, cet), "[WATCHER] Lease held by 60217, valid until 22:14:56"; got != want {
		t.Errorf("MsgHeld.Format(..., CET) = %q, want %q", got, want)
	}
	// The reference names a record no leaselab wrote (lease.Unknown) as
	// such, not as PID -1; the seed prints the -1 it read, as the post's
	// program does (below).
	for _, tc := range []struct {
		m    lease.Msg
		b    int64
		want string
	}{
		{lease.MsgRefHeld, 4, "[WATCHER] Lease held by an unknown holder, version 4"},
		{lease.MsgRefExpired, 0, "[WATCHER] Lease held by an unknown holder unchanged for the lease duration, taking over"},
		{lease.MsgRefVanished, 3, "[WATCHER] The store lost the lease held by an unknown holder, version 3: waiting it out"},
	} {
		if got := tc.m.Format(lease.Unknown, tc.b, time.UTC); got != tc.want {
			t.Errorf("Msg %d .Format(Unknown, %d, UTC) = %q, want %q", tc.m, tc.b, got, tc.want)
		}
	}
	// A pid is a plain integer, a time is not reduced to a pid.
	if got, want := lease.MsgExpired.Format(-1, 0, time.UTC), "[WATCHER] Lease held by -1 expired at 00:00:00, attempting takeover"; got != want {
		t.Errorf("MsgExpired.Format(-1, 0) = %q, want %q", got, want)
	}
}

func TestRoleString(t *testing.T) {
	for r, want := range map[lease.Role]string{lease.RoleStarting: "starting", lease.RoleWatcher: "watcher",
		lease.RoleLeader: "leader", lease.Role(7): "Role(7)"} {
		if got := r.String(); got != want {
			t.Errorf("Role(%d).String() = %q, want %q", r, got, want)
		}
	}
}
