package sim

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A full (or failing) disk refuses what needs a new block, inode or name,
// after the checks Linux makes first, and nothing else.
func TestFullDisk(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		f := NewFileSystem()
		f.MkdirAll("/d")
		if err := f.Place("/d/old", []byte("old data"), 0o644); err != nil {
			t.Fatal(err)
		}
		fds := f.NewFDTable()
		wfd, err := f.Open(fds, "/d/old", lease.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.full = diskErrs{errno, errno, errno}
		is := func(what string, err, want error) {
			t.Helper()
			if !errors.Is(err, want) {
				t.Errorf("%v: %s: %v, want %v", errno, what, err, want)
			}
		}
		_, err = f.Open(fds, "/d/new", lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
		is("create", err, errno)
		_, err = f.Open(fds, "/d/old", lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
		is("O_EXCL create of an existing name", err, syscall.EEXIST)
		_, err = f.Open(fds, "/nodir/new", lease.O_WRONLY|lease.O_CREATE, 0o644)
		is("create in a missing directory", err, syscall.ENOENT)
		_, err = f.Write(fds, wfd, []byte("x"))
		is("write", err, errno)
		_, err = f.Write(fds, 99, []byte("x"))
		is("write to a bad descriptor", err, syscall.EBADF)
		is("link", f.Link("/d/old", "/d/other"), errno)
		is("link onto an existing name", f.Link("/d/old", "/d/old"), syscall.EEXIST)
		if _, err := f.Stat("/d/new"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%v: the refused create left a name: %v", errno, err)
		}
		// What needs no new space still works: an open of an existing file
		// with O_CREAT, O_TRUNC (which frees space), a read, a rename, a
		// removal.
		tfd, err := f.Open(fds, "/d/old", lease.O_WRONLY|lease.O_CREATE|lease.O_TRUNC, 0o644)
		is("O_CREAT|O_TRUNC of an existing file", err, nil)
		if b, err := f.ReadFile("/d/old"); err != nil || len(b) != 0 {
			t.Errorf("%v: after O_TRUNC: %q, %v", errno, b, err)
		}
		is("rename", f.Rename("/d/old", "/d/renamed"), nil)
		is("remove", f.Remove("/d/renamed"), nil)
		f.full = diskErrs{}
		if _, err := f.Write(fds, tfd, []byte("y")); err != nil {
			t.Errorf("%v: write after the disk recovered: %v", errno, err)
		}
	}
}

// stretchRun runs the reference, processes 100 and 200, with the given
// faults.
func stretchRun(t *testing.T, variant string, faults ...Fault) *trace.Trace {
	t.Helper()
	cfg := worldCfg(7)
	cfg.Variant = variant
	cfg.Faults = faults
	return mustRun(t, cfg)
}

// faultEvents returns the run's fault events of kind k (End: of stretches
// of kind ended).
func faultEvents(tr *trace.Trace, k, ended trace.FaultKind) []trace.Event {
	var out []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == k && (k != trace.End || e.Ended() == ended) {
			out = append(out, e)
		}
	}
	return out
}

// A disk stretch is one fault event with its length and one end event,
// and every write, create and link of every process between them fails
// with its errno; after it, writes work again.
func TestDiskStretch(t *testing.T) {
	for _, c := range []struct {
		kind  trace.FaultKind
		errno syscall.Errno
	}{{trace.DiskFull, syscall.ENOSPC}, {trace.DiskEIO, syscall.EIO}} {
		// Shorter than a lease: the reference's watchers do not try to take
		// over during it (when they do, they retry at once: the spin that
		// spec's no-busy-loop reports).
		from, dur := 5*time.Second, 3*time.Second
		for _, variant := range []string{"seed", "reference", "flock"} {
			faults := []Fault{{Kind: c.kind, At: from, Dur: dur}}
			if variant == "flock" {
				// A flock leader writes nothing until it leaves: SIGTERM it,
				// so that the next holder writes its epoch during the stretch.
				faults = append(faults, Fault{Kind: trace.Term, Proc: Leader, At: from + time.Second})
			}
			tr := stretchRun(t, variant, faults...)
			starts, ends := faultEvents(tr, c.kind, 0), faultEvents(tr, trace.End, c.kind)
			if len(starts) != 1 || starts[0].T != int64(from) || starts[0].PauseFor() != dur || starts[0].Proc != -1 {
				t.Fatalf("%s %v: start events %+v, want one at %v lasting %v", variant, c.kind, starts, from, dur)
			}
			if len(ends) != 1 || ends[0].T != int64(from+dur) {
				t.Fatalf("%s %v: end events %+v, want one at %v", variant, c.kind, ends, from+dur)
			}
			refused, after := 0, 0
			for _, e := range tr.Events {
				if e.Kind != trace.EvSyscall {
					continue
				}
				needsSpace := e.Op == trace.OpWrite || e.Op == trace.OpLink ||
					e.Op == trace.OpOpen && int(e.Flag)&lease.O_CREATE != 0 && e.Errno.Sys() != syscall.EEXIST
				during := e.T >= int64(from) && e.T < int64(from+dur)
				switch {
				case during && e.Op == trace.OpWrite && e.Errno == 0:
					t.Errorf("%s %v: a write succeeded during the stretch: %s", variant, c.kind, tr.Format(slices.Index(tr.Events, e)))
				case during && e.Errno.Sys() == c.errno:
					refused++
				case !during && e.Errno.Sys() == c.errno:
					t.Errorf("%s %v: %v outside the stretch: %s", variant, c.kind, c.errno, tr.Format(slices.Index(tr.Events, e)))
				case e.T >= int64(from+dur) && needsSpace && e.Errno == 0:
					after++
				}
			}
			if variant == "seed" {
				after = max(after, 1) // its renewal emptied the lock file: it never writes again (empty-after-enospc)
			}
			if refused == 0 || after == 0 {
				t.Errorf("%s %v: %d calls refused during the stretch, %d that need space succeeded after it: want some of each", variant, c.kind, refused, after)
			}
			if s := tr.Setup(); !strings.Contains(s, c.kind.String()+" at 5.000000s for 3s") {
				t.Errorf("%s: the setup line does not name the stretch: %s", variant, s)
			}
		}
	}
}

// During a stall no process takes a step; every process goes on when it
// ends, its timers late; one that was also stopped waits for its SIGCONT;
// one due to start during the stall starts when it ends.
func TestStall(t *testing.T) {
	from, dur := 4*time.Second, 2500*time.Millisecond
	end := int64(from + dur)
	procs := []ProcSpec{{PID: 100}, {PID: 200, Start: 100 * time.Millisecond}, {PID: 300, Start: 5 * time.Second}}
	cfg := worldCfg(3, procs...)
	cfg.Variant = "seed"
	cfg.Faults = []Fault{
		{Kind: trace.Stall, At: from, Dur: dur},
		{Kind: trace.Stop, Proc: 1, At: 3 * time.Second, Dur: 5 * time.Second}, // continued at 8 s, after the stall
	}
	tr := mustRun(t, cfg)
	if ends := faultEvents(tr, trace.End, trace.Stall); len(ends) != 1 || ends[0].T != end {
		t.Fatalf("stall end events %+v, want one at %v", ends, time.Duration(end))
	}
	first := make([]int64, len(procs)) // each process's first step after the stall began
	for i := range first {
		first[i] = -1
	}
	for i, e := range tr.Events {
		if e.Proc < 0 || e.Kind == trace.EvFault || e.T < int64(from) {
			continue
		}
		if e.T > int64(from) && e.T < end {
			t.Errorf("a step during the stall: %s", tr.Format(i))
		}
		if first[e.Proc] < 0 {
			first[e.Proc] = e.T
		}
	}
	// 100's renewal ticker was due at 6 s, during the stall: it fires at its
	// end. 200 was stopped until 8 s. 300 was due to start at 5 s.
	if first[0] != end {
		t.Errorf("process 100 first stepped at %v after the stall began, want at its end %v", time.Duration(first[0]), time.Duration(end))
	}
	if first[1] != int64(8*time.Second) {
		t.Errorf("process 200 (stopped until 8 s) first stepped at %v, want 8s", time.Duration(first[1]))
	}
	if first[2] < end || first[2] > end+int64(cfg.SyscallMax) { // its first event is its first system call
		t.Errorf("process 300 (due at 5 s) started at %v, want at the stall's end %v", time.Duration(first[2]), time.Duration(end))
	}
}

// Overlapping stretches of a kind last until the last one ends; a run
// with stretches is deterministic.
func TestOverlappingStretches(t *testing.T) {
	faults := []Fault{
		{Kind: trace.DiskFull, At: 5 * time.Second, Dur: 10 * time.Second},
		{Kind: trace.DiskFull, At: 8 * time.Second, Dur: 20 * time.Second},
		{Kind: trace.DiskEIO, At: 12 * time.Second, Dur: 2 * time.Second},
		{Kind: trace.Stall, At: 6 * time.Second, Dur: 3 * time.Second},
		{Kind: trace.Stall, At: 7 * time.Second, Dur: 1 * time.Second},
	}
	tr := stretchRun(t, "reference", faults...)
	for i, e := range tr.Events {
		if e.Kind != trace.EvSyscall || e.Errno == 0 {
			continue
		}
		want := syscall.Errno(0)
		switch {
		case e.T >= int64(12*time.Second) && e.T < int64(14*time.Second):
			want = syscall.EIO
		case e.T >= int64(5*time.Second) && e.T < int64(28*time.Second):
			want = syscall.ENOSPC
		}
		if want != 0 && e.Errno.Sys() != want && e.Errno.Sys() != syscall.ENOENT && e.Errno.Sys() != syscall.EEXIST {
			t.Errorf("want %v here: %s", want, tr.Format(i))
		}
		if want == 0 && (e.Errno.Sys() == syscall.ENOSPC || e.Errno.Sys() == syscall.EIO) {
			t.Errorf("no stretch here: %s", tr.Format(i))
		}
		if e.T >= int64(6*time.Second) && e.T < int64(9*time.Second) {
			t.Errorf("a step during the stall: %s", tr.Format(i))
		}
	}
	a, b := traceText(t, tr), traceText(t, stretchRun(t, "reference", faults...))
	if a != b {
		t.Errorf("two runs of one config differ:\n%s", firstLineDiff(a, b))
	}
}

// A machine without a boot id: BootID fails as reading a missing
// /proc/sys/kernel/random/boot_id does, and the setup line says so.
func TestNoBootID(t *testing.T) {
	cfg := worldCfg(1)
	cfg.NoBootID = true
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.procs[0].BootID(); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("BootID without a boot id: %v, want ENOENT", err)
	}
	w.Run()
	if s := w.Trace().Setup(); !strings.Contains(s, " nobootid ") {
		t.Errorf("the setup line does not say the machine has no boot id: %s", s)
	}
	cfg.NoBootID = false
	w, _ = New(cfg)
	if id, err := w.procs[0].BootID(); err != nil || id == "" {
		t.Errorf("BootID: %q, %v", id, err)
	}
}

func TestParseStretchFaults(t *testing.T) {
	kinds, err := ParseFaults("stall,nobootid,eio,diskfull")
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.FaultKind{trace.DiskFull, trace.DiskEIO, trace.Stall, trace.NoBootID}
	if !slices.Equal(kinds, want) {
		t.Errorf("ParseFaults = %v, want %v", kinds, want)
	}
	if s := FaultNames(kinds); s != "diskfull,eio,stall,nobootid" {
		t.Errorf("FaultNames = %q", s)
	}
	// "all" is every kind, the stretches, power and nobootid included, and
	// prints as "all" however it was spelt.
	for _, spelt := range []string{"all", "all,diskfull", "all,power", "kill,all"} {
		all, _ := ParseFaults(spelt)
		if !slices.Equal(all, AllFaults) || FaultNames(all) != "all" {
			t.Errorf("%s = %v (%s), want AllFaults (all)", spelt, all, FaultNames(all))
		}
	}
	// Every set of kinds prints as ParseFaults reads it back, those all
	// leaves out (lose) beside all included: a replay line printed
	// "-faults all" for a run of all,lose, which replayed another setup.
	for mask := range 1 << len(namedFaults) {
		var kinds []trace.FaultKind
		for i, k := range namedFaults {
			if mask&(1<<i) != 0 {
				kinds = append(kinds, k)
			}
		}
		back, err := ParseFaults(FaultNames(kinds))
		if err != nil || !slices.Equal(back, kinds) {
			t.Fatalf("%v prints as %q, read back as %v, %v", kinds, FaultNames(kinds), back, err)
		}
	}
	if s := FaultNames(append(slices.Clone(AllFaults), trace.Lose)); s != "all,lose" {
		t.Errorf("all and lose print as %q", s)
	}
	if !slices.Contains(AllFaults, trace.Power) || !slices.Contains(AllFaults, trace.DiskFull) || !slices.Contains(AllFaults, trace.NoBootID) {
		t.Errorf("AllFaults = %v lacks power, diskfull or nobootid", AllFaults)
	}
	_, err = ParseFaults("kill,diskful")
	if err == nil || strings.Count(err.Error(), "\n") > 0 {
		t.Fatalf("unknown name: %v, want one line", err)
	}
	for _, name := range []string{`"diskful"`, "kill", "fserr", "power", "diskfull", "eio", "stall", "nobootid", "all", "none"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error %q does not name %s", err, name)
		}
	}
}

// What RandomSetup draws for the new names: disk stretches of 1 s to about
// 2 min, stalls of 1 to 3 s, a horizon that leaves two leases and watches
// after every stretch, no boot id in about half the runs; and adding
// "nobootid" to a fault list changes nothing else of any setup.
func TestRandomStretchSetups(t *testing.T) {
	o := SetupOptions{Variant: "reference"}
	o.Faults, _ = ParseFaults("diskfull,eio,stall")
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	after := 2 * (o.Lease.LeaseDuration + o.Lease.WatchInterval)
	var long, short bool
	for seed := range uint64(500) {
		cfg := RandomSetup(o, seed)
		if err := cfg.Normalize(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, f := range cfg.Faults {
			lo, hi := time.Second, 128*time.Second
			if f.Kind == trace.Stall {
				hi = 3 * time.Second
			}
			if !f.Kind.IsStretch() || f.Dur < lo || f.Dur > hi || f.After != "" {
				t.Fatalf("seed %d: %v", seed, f)
			}
			if cfg.Horizon < f.At+f.Dur+after {
				t.Errorf("seed %d: horizon %v leaves less than %v after %v", seed, cfg.Horizon, after, f)
			}
			long = long || f.Dur > time.Minute
			short = short || f.Kind != trace.Stall && f.Dur < 2*time.Second
		}
		if cfg.NoBootID {
			t.Fatalf("seed %d: no boot id without nobootid", seed)
		}
	}
	if !long || !short {
		t.Errorf("disk stretches drawn: some over a minute %v, some under 2 s %v", long, short)
	}
	for _, base := range []string{"none", "kill,term,stop,skew,drift,jump,fserr,power,diskfull,eio,stall", "kill,stall"} {
		o.Faults, _ = ParseFaults(base)
		withOut := o
		o.Faults, _ = ParseFaults(base + ",nobootid")
		if base == "none" {
			o.Faults, _ = ParseFaults("nobootid")
		}
		without, mixed := 0, 0
		for seed := range uint64(200) {
			a, b := RandomSetup(withOut, seed), RandomSetup(o, seed)
			if !b.NoBootID {
				without++
			}
			some, all := false, true
			for _, p := range b.Procs {
				some = some || p.NoBootID
				all = all && p.NoBootID
			}
			if some && !all && !b.NoBootID {
				mixed++ // processes with and without a boot id, on one directory
			}
			b.NoBootID = false
			for i := range b.Procs {
				b.Procs[i].NoBootID = false
			}
			if a.String() != b.String() {
				t.Fatalf("%s: nobootid changed the rest of seed %d's setup:\n%s\n%s", base, seed, a, b)
			}
		}
		if mixed < 15 {
			t.Errorf("%s,nobootid: %d of 200 setups mix processes with and without a boot id, want about a fifth", base, mixed)
		}
		if without < 60 || without > 140 {
			t.Errorf("%s,nobootid: %d of 200 setups kept their boot id, want about half", base, without)
		}
	}
}

// registerSpinner registers, for the test that needs it, the reference
// with a store whose reads fail at once with EIO and a watcher that tries
// again without waiting: a process that spins.
var registerSpinner = sync.OnceFunc(func() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	v.Name, v.Summary = "sim-test-spinner", "reads the lease in a loop, never waiting"
	v.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		for {
			p.Log(lease.MsgStarted, int64(p.PID()), 0)
			s.Read()
		}
	}
	if err := lease.Register(v); err != nil {
		panic(err)
	}
})

// A run whose processes spin stops at the system-call limit, its trace
// ending there and its setup line saying so.
func TestSyscallLimit(t *testing.T) {
	registerSpinner()
	cfg := worldCfg(1)
	cfg.Variant = "sim-test-spinner"
	tr := mustRun(t, cfg)
	limit := DefaultMaxSyscallsPerProc * len(cfg.Procs)
	calls := 0
	for _, e := range tr.Events {
		if e.Proc >= 0 && (e.Kind == trace.EvSyscall || e.Kind == trace.EvLog || e.Op == trace.OpFence || e.Op == trace.OpSigaction) {
			calls++
		}
	}
	if tr.End >= cfg.Horizon || calls != limit {
		t.Errorf("run ended at %v (horizon %v) after %d calls, want stopped at %d", tr.End, cfg.Horizon, calls, limit)
	}
	if s := tr.Setup(); !strings.Contains(s, "stopped=[at ") || !strings.Contains(s, "after 40000 system calls") {
		t.Errorf("the setup line does not say the run stopped: %s", s)
	}
	cfg.MaxSyscalls = 1000
	if tr := mustRun(t, cfg); tr.End >= time.Second/10 {
		t.Errorf("MaxSyscalls 1000: ran to %v", tr.End)
	}
	// A run that does not spin is not stopped.
	cfg = worldCfg(1)
	cfg.Variant = "reference"
	if tr := mustRun(t, cfg); tr.End != cfg.Horizon || strings.Contains(tr.Setup(), "stopped") {
		t.Errorf("a quiet run ended at %v: %s", tr.End, tr.Setup())
	}
}

func TestStretchValidation(t *testing.T) {
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: trace.DiskFull, At: time.Second}, "positive duration"},
		{Fault{Kind: trace.Stall, Proc: 0, After: "write", Dur: time.Second}, "starts at a time"},
		{Fault{Kind: trace.NoBootID, At: time.Second}, "unknown kind"},
		{Fault{Kind: trace.End, At: time.Second}, "unknown kind"},
		{Fault{Kind: trace.FSError, Proc: Leader, Call: "write", Errno: syscall.EIO}, "not the leader"},
	} {
		cfg := worldCfg(1)
		cfg.Faults = []Fault{c.f}
		if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
	cfg := worldCfg(1)
	cfg.Faults = []Fault{{Kind: trace.Stall, Proc: 17, At: time.Second, Dur: time.Second}} // Proc is ignored
	if err := cfg.Normalize(); err != nil {
		t.Error(err)
	}
}

// An emfile stretch hits one process: every open, whole-file read and
// directory listing it makes fails with EMFILE from the stretch's start to its end, and no
// call of the other processes does; aimed at the leader, it hits whoever
// leads then. The leader that cannot renew loses its lease to a watcher.
func TestEMFileStretch(t *testing.T) {
	from, dur := 5*time.Second, 20*time.Second
	for _, variant := range []string{"seed", "reference", "flock"} {
		tr := stretchRun(t, variant, Fault{Kind: trace.EMFile, Proc: Leader, At: from, Dur: dur})
		starts, ends := faultEvents(tr, trace.EMFile, 0), faultEvents(tr, trace.End, trace.EMFile)
		if len(starts) != 1 || starts[0].T != int64(from) || starts[0].PauseFor() != dur || starts[0].Proc < 0 {
			t.Fatalf("%s: start events %+v, want one of a process at %v lasting %v", variant, starts, from, dur)
		}
		victim := starts[0].Proc
		if len(ends) != 1 || ends[0].T != int64(from+dur) || ends[0].Proc != victim {
			t.Fatalf("%s: end events %+v, want one of process %d at %v", variant, ends, victim, from+dur)
		}
		leading := false
		for _, x := range tr.Leadership() {
			leading = leading || x.Proc == int(victim) && x.From < int64(from) && x.To >= int64(from)
		}
		if !leading {
			t.Errorf("%s: process %d was not leading when the stretch aimed at the leader hit it", variant, victim)
		}
		refused := 0
		for i, e := range tr.Events {
			if e.Kind != trace.EvSyscall {
				continue
			}
			during := e.T >= int64(from) && e.T < int64(from+dur)
			emfile := e.Errno.Sys() == syscall.EMFILE
			switch {
			case emfile && (e.Proc != victim || !during):
				t.Errorf("%s: EMFILE outside the victim's stretch: %s", variant, tr.Format(i))
			case during && e.Proc == victim && (e.Op == trace.OpOpen || e.Op == trace.OpRead || e.Op == trace.OpReadDir) && !emfile:
				t.Errorf("%s: the victim's %v worked during its stretch: %s", variant, e.Op, tr.Format(i))
			case emfile:
				refused++
			}
		}
		if refused == 0 && variant != "flock" { // a flock leader holds its descriptor and opens nothing
			t.Errorf("%s: no call refused during the stretch", variant)
		}
		if s := tr.Setup(); !strings.Contains(s, "emfile leader at 5.000000s for 20s") {
			t.Errorf("%s: the setup line does not name the stretch: %s", variant, s)
		}
		if variant == "reference" {
			next, ok := tr.FirstLeaderAfter(int64(from))
			if !ok || next >= int64(from+dur) {
				t.Errorf("reference: the leader that could not renew kept the lease for the whole stretch (next leader %v, %v)", time.Duration(next), ok)
			}
		}
	}
	cfg := worldCfg(2)
	cfg.Faults = []Fault{{Kind: trace.EMFile, Proc: 0, After: "write", Dur: time.Second}}
	if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), "starts at a time") {
		t.Errorf("an emfile stretch after a call: %v, want an error", err)
	}
	cfg.Faults = []Fault{{Kind: trace.EMFile, Proc: 5, At: time.Second, Dur: time.Second}}
	if err := cfg.Normalize(); err == nil || !strings.Contains(err.Error(), "no process 5") {
		t.Errorf("an emfile stretch of process 5 of 2: %v, want an error", err)
	}
}

// readdir is a call kind like the others: an fserr fault fails the Nth
// listing of its process, a crash point kills its process right after
// its Nth listing.
func TestReadDirFaults(t *testing.T) {
	cfg := worldCfg(7)
	cfg.Variant = "reference"
	cfg.Faults = []Fault{
		{Kind: trace.FSError, Proc: 0, Call: "readdir", Nth: 2, Errno: syscall.EIO},
		{Kind: trace.Kill, Proc: 1, After: "readdir", Nth: 3},
	}
	tr := mustRun(t, cfg)
	defer dump(t, tr)
	lists := syscallsOf(tr, 0, trace.OpReadDir)
	if len(lists) < 3 {
		t.Fatalf("process 100 listed the directory %d times, want at least 3", len(lists))
	}
	for i, e := range lists {
		if want := map[bool]syscall.Errno{true: syscall.EIO}[i == 1]; e.Errno.Sys() != want {
			t.Errorf("process 100's listing #%d: errno %v, want %v", i+1, e.Errno.Sys(), want)
		}
	}
	ex := exitsOf(tr, 1)
	if len(ex) != 1 || ex[0].N != -9 {
		t.Fatalf("process 200 exits: %+v, want one, killed (-9)", ex)
	}
	var last trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.EvSyscall && e.Proc == 1 && e.T <= ex[0].T {
			last = e
		}
	}
	if n := len(syscallsOf(tr, 1, trace.OpReadDir)); last.Op != trace.OpReadDir || n != 3 {
		t.Errorf("process 200 died after %v, having listed %d times; want right after its third listing", last.Op, n)
	}
}

// The reference's random setups aim crash points and I/O errors at its
// directory listings too; the other file variants', which list nothing,
// never do.
func TestRandomSetupsListings(t *testing.T) {
	for _, variant := range []string{"reference", "seed", "flock"} {
		o := SetupOptions{Variant: variant}
		o.Faults, _ = ParseFaults("kill,fserr")
		if err := o.Normalize(); err != nil {
			t.Fatal(err)
		}
		crash, fail := 0, 0
		for seed := range uint64(1000) {
			for _, f := range RandomSetup(o, seed).Faults {
				if f.After == "readdir" {
					crash++
				}
				if f.Call == "readdir" {
					fail++
				}
			}
		}
		if reference := variant == "reference"; (crash > 0) != reference || (fail > 0) != reference {
			t.Errorf("%s: %d crash points after a listing and %d failed listings in 1,000 setups; want some only for the reference", variant, crash, fail)
		}
	}
}

// The system-call cap grows with the horizon, a DefaultMaxSyscallsPerProc
// a process for each SyscallSpan begun, and every setup RandomSetup draws
// without a horizon of its own fits in one span, as it always did.
func TestSyscallLimitScalesWithHorizon(t *testing.T) {
	cfg := worldCfg(1)
	for _, c := range []struct {
		horizon time.Duration
		spans   int
	}{{40 * time.Second, 1}, {SyscallSpan, 1}, {SyscallSpan + 1, 2}, {2 * time.Hour, 12}} {
		cfg.Horizon = c.horizon
		if got, want := cfg.syscallLimit(), c.spans*DefaultMaxSyscallsPerProc*len(cfg.Procs); got != want {
			t.Errorf("horizon %v: limit %d, want %d", c.horizon, got, want)
		}
	}
	cfg.MaxSyscalls = 7
	if got := cfg.syscallLimit(); got != 7 {
		t.Errorf("MaxSyscalls 7 with a 2 h horizon: limit %d", got)
	}
	o := SetupOptions{Variant: "reference", Scheduler: "mixed"}
	o.Faults = AllFaults
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	longest := time.Duration(0)
	for seed := range uint64(5000) {
		longest = max(longest, RandomSetup(o, seed).Horizon)
	}
	if longest >= SyscallSpan {
		t.Errorf("a drawn setup's horizon of %v: over one SyscallSpan", longest)
	}
	o.Horizon = 2 * time.Hour
	if h := RandomSetup(o, 1).Horizon; h != 2*time.Hour {
		t.Errorf("SetupOptions.Horizon 2h: setup horizon %v", h)
	}
	for _, bad := range []time.Duration{-time.Second, MaxHorizon + 1} {
		o.Horizon = bad
		if err := o.Normalize(); err == nil || !strings.Contains(err.Error(), "-horizon") {
			t.Errorf("horizon %v: %v, want an error naming -horizon", bad, err)
		}
	}
}

// A full disk may lack blocks alone (a file can be created, not written),
// inodes alone (written, not created), or both; a failing disk fails all
// three kinds of call, full or not; the errors last until the last
// stretch of their kind ends.
func TestDiskSpaces(t *testing.T) {
	type outcome struct{ create, write, link syscall.Errno }
	const enospc, eio = syscall.ENOSPC, syscall.EIO
	for _, c := range []struct {
		name                 string
		full, blocks, inodes int
		eio                  int
		want                 outcome
	}{
		{"none", 0, 0, 0, 0, outcome{}},
		{"both", 1, 0, 0, 0, outcome{enospc, enospc, enospc}},
		{"blocks", 0, 1, 0, 0, outcome{0, enospc, 0}},
		{"inodes", 0, 0, 1, 0, outcome{enospc, 0, 0}},
		{"blocks and inodes", 0, 2, 1, 0, outcome{enospc, enospc, 0}},
		{"eio over blocks", 0, 1, 0, 1, outcome{eio, eio, eio}},
	} {
		w := &World{fs: NewFileSystem()}
		w.stretches = stretchState{full: c.full, blocks: c.blocks, inodes: c.inodes, eio: c.eio}
		w.setDisk()
		f := w.fs
		p := f.NewFDTable()
		// A file that exists before the stretch, to write and link.
		f.full = diskErrs{}
		old, err := f.Open(p, "/old", lease.O_WRONLY|lease.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w.setDisk()
		var got outcome
		errnoOf := func(err error) syscall.Errno {
			var e syscall.Errno
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("%s: %v is no errno", c.name, err)
			}
			return e
		}
		_, err = f.Open(p, "/new", lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
		got.create = errnoOf(err)
		_, err = f.Write(p, old, []byte("x"))
		got.write = errnoOf(err)
		got.link = errnoOf(f.Link("/old", "/old.1"))
		if got != c.want {
			t.Errorf("%s: create, write, link fail with %v, want %v", c.name, got, c.want)
		}
		// A failed call has no effect.
		_, errNew := f.Stat("/new")
		_, errLink := f.Stat("/old.1")
		if got.create != 0 && errNew == nil || got.link != 0 && errLink == nil {
			t.Errorf("%s: a failed call left a name", c.name)
		}
	}
}

// For a server variant a full disk is a full server: every write request
// fails with ENOSPC and takes no effect, while reads succeed; a failing
// disk is the server unreachable: every request fails with EIO.
func TestServerStretches(t *testing.T) {
	from, dur := 5*time.Second, 12*time.Second
	for _, kind := range ServerKinds {
		for _, c := range []struct {
			stretch       trace.FaultKind
			reads, writes syscall.Errno
		}{{trace.DiskFull, 0, syscall.ENOSPC}, {trace.DiskEIO, syscall.EIO, syscall.EIO}} {
			tr := stretchRun(t, kind, Fault{Kind: c.stretch, At: from, Dur: dur})
			reads, writes, after := 0, 0, 0
			for i, e := range tr.Events {
				if e.Kind != trace.EvSyscall || e.Op != trace.OpRPC {
					continue
				}
				write := e.Flag&trace.RPCWrite != 0
				if e.T < int64(from) || e.T >= int64(from+dur) {
					if e.T >= int64(from+dur) && write && e.Errno == 0 {
						after++
					}
					continue
				}
				want := c.reads
				if write {
					want, writes = c.writes, writes+1
				} else {
					reads++
				}
				got := e.Errno.Sys()
				if !write && want == 0 && got == syscall.ENOENT {
					got = 0 // a read that found no lease (it expired meanwhile) worked
				}
				if got != want {
					t.Errorf("%s %v: %s, want %v", kind, c.stretch, tr.Format(i), want)
				}
			}
			if reads == 0 || writes == 0 || after == 0 {
				t.Errorf("%s %v: %d reads and %d writes during the stretch, %d writes that worked after it: want some of each", kind, c.stretch, reads, writes, after)
			}
		}
	}
}
