package spec

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// What the lock's directory holds when the run ends is judged by name: a
// dead process's temporary file that a live process's two writes since
// should have swept, and boot records past the variant's once a process
// has written since the last boot (a probe's mutants, one a crash and one
// a boot, passed the count's bound, which allows five names for every
// process that ever ran).
func TestLeftBehind(t *testing.T) {
	const s = int64(time.Second)
	bound := lease.FileBound{Fixed: 5, PerProc: 5, Boots: 1, Sweeps: true}
	at := func(t int64, e trace.Event) trace.Event { e.T = t; return e }
	write := func(p int16, t int64) []trace.Event {
		return []trace.Event{at(t, trace.StoreCall(p, 0, trace.StoreRenew, lease.Record{}, 0)),
			at(t+1, trace.StoreReturn(p, 0, trace.StoreRenew, trace.ResOK, lease.Record{Holder: 1}, 0))}
	}
	died := at(2*s, trace.Exit(1, trace.ExitKilled))
	files := func(names ...string) []trace.File {
		var fs []trace.File
		for _, n := range names {
			fs = append(fs, trace.File{Name: "/var/lock/" + n})
		}
		return fs
	}
	for _, c := range []struct {
		name   string
		events []trace.Event
		files  []trace.File
		want   string
	}{
		{"swept", append(append([]trace.Event{died}, write(0, 3*s)...), write(0, 6*s)...), files("leader.lock.7", "leader.lock.8", "leader.lock.boot.1"), ""},
		{"a dead process's, two writes since", append(append([]trace.Event{died}, write(0, 3*s)...), write(0, 6*s)...), files("leader.lock.8", "leader.lock.tmp.200.3"), "leader.lock.tmp.200.3"},
		{"a dead process's, one write since", append([]trace.Event{died}, write(0, 3*s)...), files("leader.lock.8", "leader.lock.tmp.200.3"), ""},
		// (explore found the correct reference's second sweep failing
		// to read the file it would remove: an injected ENOSPC)
		{"a dead process's, the second sweep hindered", append(append(append([]trace.Event{died}, write(0, 3*s)...),
			trace.Event{T: 6*s - 1, Proc: 0, Kind: trace.EvSyscall, Op: trace.OpRead, Errno: trace.Errno(syscall.ENOSPC)}), write(0, 6*s)...),
			files("leader.lock.8", "leader.lock.tmp.200.3"), ""},
		{"a live process's", append(write(0, 3*s), write(0, 6*s)...), files("leader.lock.8", "leader.lock.tmp.200.3"), ""},
		{"two boot records, written since", write(0, 3*s), files("leader.lock.8", "leader.lock.boot.1", "leader.lock.boot.2"), "2 boot records"},
		{"two boot records, nothing written since the loss", append(write(0, 3*s), at(4*s, trace.Fault(-1, trace.Power, 0, 0, false, trace.Str{}))), files("leader.lock.8", "leader.lock.boot.1", "leader.lock.boot.2"), ""},
		{"a foreign name", nil, files("leader.lock.tmp.x", "leader.lock.bootleg", "other.tmp.200.3"), ""},
	} {
		tr := &trace.Trace{Run: trace.Run{LockPath: "/var/lock/leader.lock"}, Procs: []trace.ProcInfo{{PID: 100}, {PID: 200}},
			Acts: [][]string{{"main"}, {"main"}}, Events: c.events, Files: c.files, End: 10 * time.Second}
		v := checkLeftBehind(tr, bound)
		switch {
		case c.want == "" && v != nil:
			t.Errorf("%s: %v", c.name, v)
		case c.want != "" && (v == nil || !strings.Contains(v.Detail, c.want)):
			t.Errorf("%s: %v, want a violation saying %q", c.name, v, c.want)
		}
	}
}
