package sim

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// flockCfg is a run of the flock variant: process 100 at 0 leads, the
// others start later and wait in flock.
func flockCfg(seed uint64, procs ...ProcSpec) Config {
	cfg := worldCfg(seed, procs...)
	cfg.Variant = "flock"
	return cfg
}

// flockCalls returns process proc's completed flock calls and the ones
// that blocked.
func flockCalls(tr *trace.Trace, proc int) (done, blocked []trace.Event) {
	for _, e := range tr.Events {
		if int(e.Proc) != proc || e.Op != trace.OpFlock {
			continue
		}
		switch e.Kind {
		case trace.EvSyscall:
			done = append(done, e)
		case trace.EvBlock:
			blocked = append(blocked, e)
		}
	}
	return done, blocked
}

// The kernel releases a dead process's lock at once: CloseAll releases
// the locks its descriptors hold, and tells the file system's listener.
func TestFlockCloseAllReleases(t *testing.T) {
	f := NewFileSystem()
	f.MkdirAll("/d")
	var released int
	f.unlocked = func(*inode) { released++ }
	p, q := f.NewFDTable(), f.NewFDTable()
	a, _ := f.Open(p, "/d/lock", lease.O_RDWR|lease.O_CREATE, 0o644)
	other, _ := f.Open(p, "/d/other", lease.O_RDWR|lease.O_CREATE, 0o644)
	b, _ := f.Open(q, "/d/lock", lease.O_RDWR, 0)
	if err := f.Flock(p, a, lease.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := f.Flock(p, other, lease.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := f.Flock(q, b, lease.LOCK_EX|lease.LOCK_NB); !isErrno(err, syscall.EWOULDBLOCK) {
		t.Fatalf("Flock of a held lock: %v, want EWOULDBLOCK", err)
	}
	p.CloseAll()
	if released != 2 {
		t.Errorf("CloseAll released %d locks, want 2", released)
	}
	if err := f.Flock(q, b, lease.LOCK_EX|lease.LOCK_NB); err != nil {
		t.Errorf("Flock after the holder's CloseAll: %v", err)
	}
	// A blocking LOCK_EX through a View cannot wait: it says so.
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "wait forever") {
			t.Errorf("a blocking flock on a View: recovered %v, want a panic", r)
		}
	}()
	c, _ := f.Open(p, "/d/lock", lease.O_RDWR, 0)
	f.Flock(p, c, lease.LOCK_EX)
}

func isErrno(err error, e syscall.Errno) bool { return errno(err).Sys() == e }

// SIGKILL of the holder wakes the waiter a system-call latency later, and
// it leads with the next epoch. The trace shows the wait and the flock.
func TestFlockKillWakesWaiter(t *testing.T) {
	cfg := flockCfg(3)
	cfg.Faults = []Fault{{Kind: trace.Kill, Proc: 0, At: 5 * time.Second}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	done, blocked := flockCalls(tr, 1)
	if len(blocked) != 1 || len(done) != 2 {
		t.Fatalf("process 200: %d flock calls blocked, %d returned; want 1 and 2", len(blocked), len(done))
	}
	got := done[1]
	if got.Errno != 0 || got.T < int64(5*time.Second+cfg.SyscallMin) || got.T > int64(5*time.Second+cfg.SyscallMax) {
		t.Errorf("the waiter's flock returned %v at %v; want ok a system-call latency after the kill at 5s",
			got.Errno.String(), time.Duration(got.T))
	}
	if ls := leaderEvents(tr, 1); len(ls) != 1 || ls[0] > int64(5*time.Second+time.Millisecond) {
		t.Errorf("process 200 led at %v, want once within a millisecond of the kill", ls)
	}
	if ls := logsOf(tr, 1, lease.MsgFlockAcquired); len(ls) != 1 || ls[0].A != 2 {
		t.Errorf("process 200's acquisitions: %v, want one with epoch 2", ls)
	}
	text := traceText(t, tr)
	for _, want := range []string{"flock fd 3 LOCK_EX|LOCK_NB = EWOULDBLOCK", "flock fd 3 LOCK_EX blocks", "flock fd 3 LOCK_EX = ok"} {
		if !strings.Contains(text, want) {
			t.Errorf("the trace has no %q", want)
		}
	}
	if d, _ := fileData(tr, DefaultLockPath); d != string(lease.AppendFlockRecord(nil, lease.Record{Holder: 200, Epoch: 2})) {
		t.Errorf("lock file = %q", d)
	}
}

// A paused holder keeps its lock: nobody else leads during the pause, and
// it leads on when continued.
func TestFlockPausedHolderKeepsLock(t *testing.T) {
	cfg := flockCfg(4)
	cfg.Faults = []Fault{{Kind: trace.Stop, Proc: 0, At: 2 * time.Second, Dur: 30 * time.Second}}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	if ls := leaderEvents(tr, 1); len(ls) != 0 {
		t.Errorf("process 200 led at %v while the holder was paused", ls)
	}
	iv := tr.Leadership()
	if len(iv) != 1 || iv[0].Proc != 0 || !iv[0].Open {
		t.Errorf("leadership = %+v, want process 100 throughout", iv)
	}
}

// The waiters of a released lock are all woken at one instant; which of
// them takes it is the scheduler's choice, so seeds differ, and a seed
// always makes the same one.
func TestFlockWinnerIsScheduled(t *testing.T) {
	winners := map[int]int{}
	for seed := uint64(0); seed < 40; seed++ {
		cfg := flockCfg(seed, ProcSpec{PID: 100}, ProcSpec{PID: 200, Start: time.Second}, ProcSpec{PID: 300, Start: time.Second})
		cfg.SyscallMin, cfg.SyscallMax = 10*time.Microsecond, 10*time.Microsecond // every tie is the scheduler's
		cfg.Faults = []Fault{{Kind: trace.Kill, Proc: 0, At: 5 * time.Second}}
		winner := func() int {
			tr := mustRun(t, cfg)
			for _, x := range tr.Leadership() {
				if x.From > int64(5*time.Second) {
					return x.Proc
				}
			}
			t.Fatalf("seed %d: nobody led after the kill", seed)
			return -1
		}
		w := winner()
		if again := winner(); again != w {
			t.Fatalf("seed %d: process %d won, then %d", seed, w, again)
		}
		winners[w]++
	}
	if winners[1] == 0 || winners[2] == 0 {
		t.Errorf("winners over 40 seeds: %v; want both waiters to win sometimes", winners)
	}
}

// A process killed while it waits never gets the lock; SIGTERM while it
// waits ends it through its handler; the last waiter takes over.
func TestFlockSignalsWhileWaiting(t *testing.T) {
	cfg := flockCfg(5, ProcSpec{PID: 100}, ProcSpec{PID: 200, Start: time.Second}, ProcSpec{PID: 300, Start: time.Second}, ProcSpec{PID: 400, Start: 2 * time.Second})
	cfg.Faults = []Fault{
		{Kind: trace.Kill, Proc: 1, At: 3 * time.Second},
		{Kind: trace.Term, Proc: 2, At: 4 * time.Second},
		{Kind: trace.Kill, Proc: 0, At: 5 * time.Second},
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.Run()
	tr := w.Trace()
	defer dump(t, tr)
	for _, p := range []int{1, 2} {
		if done, blocked := flockCalls(tr, p); len(blocked) != 1 || len(done) != 1 {
			t.Errorf("process %d: %d flock calls blocked, %d returned; want 1 and 1 (the failed LOCK_NB)", p, len(blocked), len(done))
		}
	}
	if ex := exitsOf(tr, 2); len(ex) != 1 || ex[0].N != 0 {
		t.Errorf("process 300's exits: %v, want exit 0 from its SIGTERM handler", ex)
	}
	if ls := leaderEvents(tr, 3); len(ls) != 1 || ls[0] < int64(5*time.Second) || ls[0] > int64(5*time.Second+time.Millisecond) {
		t.Errorf("process 400 led at %v, want once, right after the kill at 5s", ls)
	}
	if len(w.lockWaiters) != 0 {
		t.Errorf("%d waiters left at the end", len(w.lockWaiters))
	}
}

// A crash point right after the flock that took the lock: the lock goes
// with the process, the waiter leads, and no epoch is written twice.
func TestFlockCrashAfterLock(t *testing.T) {
	// Process 200's calls: at start, the lock file's open (#1) and the
	// directory's open (#2), fsync (#1) and close (#1), then a read of the
	// record (#1) with the boot record's stats, read (#2) and adoption
	// (the directory's open #3, fsync #2, close #2); once 100 dies, flock
	// #2 (after its LOCK_NB) takes the lock, then read (#3), the store's
	// open (#4), write and close (#3): no fsync on the hand-over.
	for after, nth := range map[string]int{"flock": 2, "read": 3, "open": 4, "write": 1, "close": 3} {
		cfg := flockCfg(6)
		cfg.Faults = []Fault{{Kind: trace.Kill, Proc: 1, After: after, Nth: nth}, {Kind: trace.Kill, Proc: 0, At: 2 * time.Second}}
		cfg.Procs = append(cfg.Procs, ProcSpec{PID: 300, Start: time.Second})
		tr := mustRun(t, cfg)
		ls := logsOf(tr, 2, lease.MsgFlockAcquired)
		if len(ls) != 1 {
			t.Errorf("after %s: process 300 acquired %d times, want once", after, len(ls))
			dump(t, tr)
			continue
		}
		want := int64(2)
		if after == "write" || after == "close" {
			want = 3 // 200 wrote epoch 2 before it died
		}
		if ls[0].A != want {
			t.Errorf("after %s: process 300 led with epoch %d, want %d", after, ls[0].A, want)
		}
	}
}

// Whatever sits at the lock path before the processes start, the flock
// variant elects a leader at once: an empty file has no record (epoch 1),
// anything else unreadable is written over with an epoch from the wall
// clock, above any counted one; a valid record is continued.
func TestFlockHostileFiles(t *testing.T) {
	clockEpoch := DefaultWallBase.UnixMicro()
	for name, c := range map[string]struct {
		data  string
		epoch int64 // 0: from the wall clock
	}{
		"empty":      {"", 1},
		"record":     {string(lease.AppendFlockRecord(nil, lease.Record{Holder: 7, Epoch: 41})), 42},
		"unpadded":   {`{"processId":7,"epoch":41}`, 42},
		"truncated":  {`{"processId":12`, 0},
		"seed-style": {`{"processId":1,"leaseUntil":1760476487}`, 0},
		"garbage":    {"\x00\xff\xfe binary \x01", 0},
		"big":        {strings.Repeat("a", 3<<20), 0},
	} {
		cfg := flockCfg(1)
		cfg.Horizon = 5 * time.Second
		cfg.Files = []File{{Path: DefaultLockPath, Data: c.data}}
		tr := mustRun(t, cfg)
		ls := logsOf(tr, 0, lease.MsgFlockAcquired)
		if len(ls) != 1 || ls[0].T > int64(time.Millisecond) {
			t.Errorf("%s: process 100 acquired %v, want once at start", name, ls)
			continue
		}
		if got := ls[0].A; c.epoch != 0 && got != c.epoch || c.epoch == 0 && (got < clockEpoch || got > clockEpoch+int64(time.Second/time.Microsecond)) {
			t.Errorf("%s: epoch %d, want %d (0: the wall clock in µs, %d)", name, got, c.epoch, clockEpoch)
		}
	}
}

// removingStore removes the lock file at its first Read, as someone
// deleting it while a process holds its lock would.
type removingStore struct {
	lease.Store
	fs      lease.FS
	path    string
	removed bool
}

func (s *removingStore) Read() (lease.Record, error) {
	if !s.removed {
		s.removed = true
		s.fs.Remove(s.path)
	}
	return s.Store.Read()
}

func init() {
	v, err := lease.LookupVariant("flock")
	if err != nil {
		panic(err)
	}
	v.Name = "flock-file-removed"
	v.NewStore = func(p lease.Proc, path string) lease.Store {
		return &removingStore{Store: &lease.EpochFile{FS: p, Path: path}, fs: p, path: path}
	}
	if err := lease.Register(v); err != nil {
		panic(err)
	}
}

// A process whose lock file is removed under it finds the record gone and
// cannot write one (the store never creates the file): it closes the
// descriptor of the nameless file, opens the name afresh and leads on the
// new file, instead of failing on the old one forever.
func TestFlockFileRemovedUnderHolder(t *testing.T) {
	cfg := flockCfg(1, ProcSpec{PID: 100})
	cfg.Variant = "flock-file-removed"
	cfg.Horizon = 5 * time.Second
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	if n := len(logsOf(tr, 0, lease.MsgFlockRecordFailed)); n != 1 {
		t.Errorf("%d failed record writes, want 1", n)
	}
	if opens := syscallsOf(tr, 0, trace.OpOpen); len(opens) != 6 { // lock file, directory, store (fails), lock file again, directory, store
		t.Errorf("%d opens, want 6", len(opens))
	}
	if ls := logsOf(tr, 0, lease.MsgFlockAcquired); len(ls) != 1 || ls[0].A != 1 || ls[0].T > int64(10*time.Millisecond) {
		t.Errorf("acquisitions %v, want one, epoch 1, within 10 ms", ls)
	}
}
