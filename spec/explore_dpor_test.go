package spec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// toyVariant is an election small enough that every interleaving of two
// or three processes can be run: each process (the first also starts a
// second activity, which lists the lock's directory) creates the lock
// file (with O_EXCL, or, in the racy toy, after a stat says it is
// absent, with O_TRUNC), closes it and leads for the rest of the run. The racy toy lets two processes lead: the reduced search must
// find that as the full one does.
func toyVariant(name string, racy bool) lease.Variant {
	seed, _ := lease.LookupVariant("seed")
	return lease.Variant{Name: name, Summary: "a toy election for the partial-order reduction's tests",
		Claims:   seed.Claims, // (what the tests of every registered variant expect of the seed)
		NewStore: func(lease.Proc, string) lease.Store { return nil },
		Run: func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
			if p.PID() == 100 { // the first process only: a full search of more is too big
				p.Go("peek", func() { p.ReadDir(filepath.Dir(path)) })
			}
			flag := lease.O_WRONLY | lease.O_CREATE | lease.O_EXCL
			if racy {
				if _, err := p.Stat(path); err == nil {
					return nil
				}
				flag = lease.O_WRONLY | lease.O_CREATE | lease.O_TRUNC
			}
			fd, err := p.Open(path, flag, 0o644)
			if err != nil {
				return nil
			}
			p.Close(fd)
			toyLead(p, cfg)
			return nil
		}}
}

// toyWatch is a toy election over inotify: a process that finds the
// lock taken waits for a change to its directory (from a token taken
// before it tried) until the same instant, logs whether a change woke
// it, and reads the lock; the leader leads, then removes the lock.
func toyWatch(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		n := p.(lease.Notifier)
		dir := filepath.Dir(path)
		tok := n.ChangeToken(dir)
		fd, err := p.Open(path, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
		if err == nil {
			p.Close(fd)
			toyLead(p, cfg)
			p.Remove(path)
			return nil
		}
		woken := int64(0)
		if n.WaitChange(dir, tok, p.Mono()) { // a deadline now: it races with the changes of this instant
			woken = 1
		}
		p.Log(lease.MsgStarted, woken, 0)
		p.ReadFile(path)
		return nil
	}
	return v
}

// toyData is a toy whose outcome hangs on a file's data alone: the first
// process leads if it reads the lock file holding exactly "x"; the second
// creates it, writes "x" and then "y" through one descriptor, and leads.
// Only the order of the read among the writes (one inode, no name
// changed) makes two leaders.
func toyData(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			if b, err := p.ReadFile(path); err == nil && string(b) == "x" {
				toyLead(p, cfg)
			}
			return nil
		}
		fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err != nil {
			return nil
		}
		p.Write(fd, []byte("x"))
		p.Write(fd, []byte("y"))
		p.Close(fd)
		toyLead(p, cfg)
		return nil
	}
	return v
}

// toyFlockQueue queues on flock(2): each process opens the lock, waits
// for LOCK_EX, logs, holds it a moment and closes it. With three, two
// waiters wake at one instant when the holder closes, and which takes the
// lock is the order of their retries.
func toyFlockQueue(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err != nil {
			return nil
		}
		if p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) != nil {
			return nil
		}
		p.Log(lease.MsgStarted, int64(p.PID()), 0)
		p.Sleep(time.Millisecond)
		p.Close(fd)
		return nil
	}
	return v
}

// toyFiles bounds the lock's directory to one name: the first process
// creates a name and removes it; the second creates another after two
// stats. Only the order of the creation among the removal (different
// names, one directory) breaks the bound.
func toyFiles(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Claims.Files = &lease.FileBound{Fixed: 1}
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		dir := filepath.Dir(path)
		if p.PID() == 100 {
			if fd, err := p.Open(dir+"/x", lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
				p.Close(fd)
			}
			p.Remove(dir + "/x")
			return nil
		}
		p.Stat(dir + "/none")
		p.Stat(dir + "/none")
		if fd, err := p.Open(dir+"/y", lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
			p.Close(fd)
		}
		return nil
	}
	return v
}

// toyServer is a toy over the simulator's Redis: the second process
// creates the lease, leads, and releases it; the first reads it and leads
// if the second holds it, which only the order of the three requests (one
// server, no file) decides.
func toyServer(name string) lease.Variant {
	v := toyVariant(name, false)
	redis, _ := lease.LookupVariant("redis")
	v.NewStore = redis.NewStore
	v.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			if r, err := s.Read(); err == nil && r.Holder == 101 {
				toyLead(p, cfg)
			}
			return nil
		}
		r, err := s.Create(101, time.Second)
		if err != nil {
			return nil
		}
		toyLead(p, cfg)
		s.Release(r)
		return nil
	}
	return v
}

// toyExit: the first process starts an activity that installs a SIGTERM
// handler (AwaitShutdown: a step of the simulator's code alone) and
// exits; whether the handler's sigaction is in the trace hangs on the
// order of the exit and that step.
func toyExit(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			p.Go("sig", func() { p.AwaitShutdown() })
			p.Exit(0)
		}
		return nil
	}
	return v
}

// toyExitWaiter: an activity of the first process waits for what a step
// of the second wakes at 1 ms (the flock it holds, closed; a change to
// the lock's directory), and the first process exits at 1 ms: the waiter
// logs only if the wake comes first.
func toyExitWaiter(name, how string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		dir := filepath.Dir(path)
		if p.PID() == 100 {
			p.Go("waiter", func() {
				if how == "flock" {
					p.Sleep(time.Millisecond / 2) // after the other has the lock
					fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
					if err == nil && p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) == nil {
						p.Log(lease.MsgStarted, 1, 0)
					}
					return
				}
				n := p.(lease.Notifier)
				if n.WaitChange(dir, n.ChangeToken(dir), p.Mono()+time.Hour) {
					p.Log(lease.MsgStarted, 1, 0)
				}
			})
			p.Sleep(time.Millisecond)
			p.Exit(0)
		}
		if how == "flock" {
			fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
			if err == nil && p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) == nil {
				p.Sleep(time.Millisecond)
				p.Close(fd)
			}
			return nil
		}
		p.Sleep(time.Millisecond)
		if fd, err := p.Open(dir+"/x", lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
			p.Close(fd)
		}
		return nil
	}
	return v
}

// toyPaths: the second process creates the lock file; the first makes one
// call whose outcome hangs on it through another spelling: a path under
// it (ENOTDIR or ENOENT), the name unclean ("/tmp/./leader.lock"; and
// leading if it exists, which makes two leaders), or a rename of its
// directory.
func toyPaths(name, how string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		dir, unclean := filepath.Dir(path), filepath.Dir(path)+"/./"+filepath.Base(path)
		if p.PID() == 100 {
			switch how {
			case "under":
				p.Stat(path + "/x")
			case "unclean":
				if _, err := p.Stat(unclean); err == nil {
					toyLead(p, cfg)
				}
			case "mvdir":
				p.Rename(dir, dir+"2")
			}
			return nil
		}
		if fd, err := p.Open(path, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
			p.Close(fd)
			if how == "unclean" {
				toyLead(p, cfg)
			}
		}
		return nil
	}
	return v
}

// toyFailover: the first process leads under a kernel lock's claims
// (failover within the slack) and logs at 1 ms; the second stats the lock
// at 1 ms and, unless the stat fails, leads 1 ms later. A SIGKILL of the
// leader and an ENOSPC injected into the stat at one instant: the
// failover-bound verdict must not hang on their order.
func toyFailover(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Claims.Handover, v.Claims.ExpiryLag = lease.KernelLock, 0
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			toyLead(p, cfg)
			p.Sleep(time.Millisecond)
			p.Log(lease.MsgStarted, 0, 0)
			return nil
		}
		p.Sleep(time.Millisecond)
		if _, err := p.Stat(path); !errors.Is(err, syscall.ENOSPC) {
			p.Sleep(time.Millisecond)
			toyLead(p, cfg)
		}
		return nil
	}
	return v
}

// toyTimerWake is a review's (2026-12-06): process 200's waiter sleeps
// on a context a timer cancels at 1 ms, then stats the lock path, while
// its main creates the path and another activity removes it, both at 1
// ms; process 100 only sleeps. The timer fires at the first step of the
// instant, whichever that is, so a SIGKILL of 100 chosen first there
// wakes the waiter: candidates its tie did not have. A prediction that a
// kill's run would be cut short at its next pick (exploreDPOR's doomed)
// that missed the timer lost 30 of 371 traces.
func toyTimerWake(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			p.Sleep(5 * time.Millisecond)
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.(lease.MonoTimer).AfterMono(p.Mono()+time.Millisecond, cancel)
		p.Go("waiter", func() {
			p.(lease.ContextWaiter).SleepContext(ctx, time.Hour)
			p.Stat(path)
		})
		p.Go("aux", func() {
			p.Sleep(time.Millisecond)
			p.Remove(path)
		})
		p.Sleep(time.Millisecond)
		p.Open(path, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644)
		return nil
	}
	return v
}

// toyHandoff is a review's too: process 100 hands off to an activity
// that then creates a second file, process 200 stats that file and
// creates the lock. Which of the handoff's two sides comes first decides
// which blocks, and so where the receiver's later steps begin: a
// receiver that blocked in its first step touched nothing, and was taken
// for independent of the send (1 of 8 traces lost without faults, 7 of
// 27 with a SIGKILL).
func toyHandoff(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		b := path + ".b"
		if p.PID() == 100 {
			h := p.NewHandoff()
			p.Go("rx", func() {
				h.Recv()
				if fd, err := p.Open(b, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
					p.Close(fd)
				}
			})
			h.Send()
			return nil
		}
		p.Stat(b)
		if fd, err := p.Open(path, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
			p.Close(fd)
		}
		return nil
	}
	return v
}

// toyErrLead: the first process creates the lock file and leads; the
// second exits. An error injected into the create moves the lead into
// the create's step, where it depends on the other's exit. (A review's
// row: with a SIGKILL too, the reduced search missed 1 of 27 traces while
// a sleeping step stood only for its error-free self.)
func toyErrLead(name string) lease.Variant {
	v := toyVariant(name, false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 100 {
			if fd, err := p.Open(path, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
				p.Close(fd)
			}
			toyLead(p, cfg)
			return nil
		}
		p.Exit(0)
		return nil
	}
	return v
}

func toyLead(p lease.Proc, cfg lease.Config) {
	p.Role(lease.RoleLeader)
	if f := cfg.Callbacks.OnStartedLeading; f != nil {
		f(context.Background())
	}
}

// outcomes are what a search reached: each schedule's trace up to the
// reordering of independent steps (sim.World.Fingerprint), and the
// properties violated.
type outcomes struct {
	traces     map[uint64]bool
	violated   map[string]bool
	schedules  int
	incomplete bool
}

// fullSearch runs every schedule: every order of every tie, every fault
// at every step within the budgets.
func fullSearch(t *testing.T, o ExploreOptions) outcomes {
	t.Helper()
	out, ok := cappedFullSearch(t, o, 400000)
	if !ok {
		t.Fatalf("the full search of %+v passed %d schedules: too big for this test", o, out.schedules)
	}
	return out
}

// cappedFullSearch is fullSearch that gives up (false) at limit
// schedules.
func cappedFullSearch(t *testing.T, o ExploreOptions, limit int) (outcomes, bool) {
	t.Helper()
	out := outcomes{traces: map[uint64]bool{}, violated: map[string]bool{}}
	verdicts := map[uint64]string{}
	complete := runEvery(t, o, limit, func(cfg *sim.Config) {
		// Every tie asked, the steps recorded; no reduction, every kill
		// offered (the reduced search's are fewer: a kill after a quiet
		// step is one before it, as KillFingerprint hashes it).
		cfg.Explore.DPOR, cfg.Explore.EveryKill = true, true
	}, func(w *sim.World) {
		out.schedules++
		fp := w.KillFingerprint()
		out.traces[fp] = true
		var bad []string
		for _, v := range Check(w.Trace()) {
			if v.Violation != nil {
				out.violated[v.Property] = true
				bad = append(bad, v.Property)
			}
		}
		// Schedules equivalent up to the order of independent steps are
		// judged alike: the verdicts are a function of the fingerprint.
		if was, ok := verdicts[fp]; ok && was != fmt.Sprint(bad) {
			t.Errorf("%+v: one fingerprint, two verdicts: %s and %v", o, was, bad)
		}
		verdicts[fp] = fmt.Sprint(bad)
	})
	return out, complete
}

// runEvery runs every schedule of o's tree of choices, depth first, each
// run's config set by adjust, and calls f with each run's world; it
// gives up (false) after limit schedules.
func runEvery(t *testing.T, o ExploreOptions, limit int, adjust func(*sim.Config), f func(*sim.World)) bool {
	t.Helper()
	var prefix []int
	for n := 1; ; n++ {
		d := &dfs{prefix: prefix}
		cfg, err := ExploreConfig(o, d)
		if err != nil {
			t.Fatal(err)
		}
		adjust(&cfg)
		w, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		f(w)
		i := len(d.log) - 1
		for i >= 0 && d.log[i].V+1 >= d.log[i].N {
			i--
		}
		if i < 0 {
			return true
		}
		if n >= limit {
			return false
		}
		prefix = prefix[:0]
		for _, c := range d.log[:i] {
			prefix = append(prefix, c.V)
		}
		prefix = append(prefix, d.log[i].V+1)
	}
}

func reducedSearch(t *testing.T, o ExploreOptions) (outcomes, ExploreResult) {
	t.Helper()
	out := outcomes{traces: map[uint64]bool{}, violated: map[string]bool{}}
	o.DPOR = true
	res, err := exploreDPORWith(o, 0, nil, func(w *sim.World) {
		out.traces[w.KillFingerprint()] = true
		for _, v := range Check(w.Trace()) {
			if v.Violation != nil {
				out.violated[v.Property] = true
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	out.schedules, out.incomplete = res.Schedules, !res.Complete
	return out, res
}

// The reduced search is sound: on bounds small enough to run every
// schedule, it reaches the same traces (up to the order of independent
// steps) and the same violations as the full search, in fewer schedules.
// registerToys registers the toys, each built around one rule of the
// dependency relation.
func registerToys(t *testing.T) {
	registerOnce(t, toyVariant("toy-excl", false))
	registerOnce(t, toyVariant("toy-racy", true))
	registerOnce(t, toyWatch("toy-watch"))
	registerOnce(t, toyData("toy-data"))
	registerOnce(t, toyFlockQueue("toy-flockq"))
	registerOnce(t, toyFiles("toy-files"))
	registerOnce(t, toyServer("toy-server"))
	registerOnce(t, toyExit("toy-exit"))
	registerOnce(t, toyExitWaiter("toy-exitwait-flock", "flock"))
	registerOnce(t, toyExitWaiter("toy-exitwait-watch", "watch"))
	for _, how := range []string{"under", "unclean", "mvdir"} {
		registerOnce(t, toyPaths("toy-paths-"+how, how))
	}
	registerOnce(t, toyFailover("toy-failover"))
	registerOnce(t, toyErrLead("toy-errlead"))
	registerOnce(t, toyTimerWake("toy-timerwake"))
	registerOnce(t, toyHandoff("toy-handoff"))
}

func TestDPORSound(t *testing.T) {
	registerToys(t)
	for _, o := range []ExploreOptions{
		{Variant: "toy-errlead", Procs: 2, FSErrors: 1},
		{Variant: "toy-errlead", Procs: 2, Crashes: 1, FSErrors: 1},
		{Variant: "toy-timerwake", Procs: 2, Crashes: 1},
		{Variant: "toy-handoff", Procs: 2},
		{Variant: "toy-handoff", Procs: 2, Crashes: 1},
		{Variant: "toy-exit", Procs: 1},
		{Variant: "toy-exit", Procs: 2, Crashes: 1},
		{Variant: "toy-exitwait-flock", Procs: 2},
		{Variant: "toy-exitwait-watch", Procs: 2},
		{Variant: "toy-paths-under", Procs: 2},
		{Variant: "toy-paths-unclean", Procs: 2},
		{Variant: "toy-paths-mvdir", Procs: 2},
		{Variant: "toy-failover", Procs: 2, Crashes: 1, FSErrors: 1, Horizon: 300 * time.Millisecond},
		{Variant: "toy-server", Procs: 2},
		{Variant: "toy-data", Procs: 2},
		{Variant: "toy-flockq", Procs: 3},
		{Variant: "toy-files", Procs: 2},
		{Variant: "toy-excl", Procs: 2},
		{Variant: "toy-watch", Procs: 2},
		{Variant: "toy-watch", Procs: 3},
		{Variant: "toy-racy", Procs: 2},
		{Variant: "toy-racy", Procs: 2, Crashes: 1},
		{Variant: "toy-excl", Procs: 3},
		{Variant: "toy-excl", Procs: 3, Crashes: 1},
		{Variant: "toy-racy", Procs: 2, Pauses: 1, Terms: 1},
		// A real variant: the seed's first 100 ms, two processes (its
		// start and first acquisition, every interleaving: 177,012).
		{Variant: "seed", Procs: 2, Horizon: 100 * time.Millisecond},
	} {
		if (o.Variant == "seed" || o.Procs == 3 && o.Variant == "toy-watch") && testing.Short() {
			continue
		}
		if o.Horizon == 0 {
			o.Horizon = 10 * time.Millisecond
		}
		full := fullSearch(t, o)
		red, res := reducedSearch(t, o)
		t.Logf("%s procs %d crashes %d pauses %d terms %d: full %d schedules, %d traces, violated %v; reduced %d schedules (%d cut short, %d SIGKILLs and %d pauses not run, %d races), %d traces",
			o.Variant, o.Procs, o.Crashes, o.Pauses, o.Terms, full.schedules, len(full.traces), slices.Sorted(maps.Keys(full.violated)),
			red.schedules, res.DPOR.Blocked, res.DPOR.Pruned, res.DPOR.Pauses, res.DPOR.Races, len(red.traces))
		if red.incomplete {
			t.Errorf("%+v: the reduced search did not complete", o)
		}
		if !maps.Equal(full.traces, red.traces) {
			t.Errorf("%+v: the reduced search reached %d traces, the full one %d; %d of the full search's missing", o, len(red.traces), len(full.traces), missing(full.traces, red.traces))
		}
		if !maps.Equal(full.violated, red.violated) {
			t.Errorf("%+v: violated %v in the reduced search, %v in the full one", o, red.violated, full.violated)
		}
		if red.schedules >= full.schedules && full.schedules > len(full.traces) {
			t.Errorf("%+v: the reduced search ran %d schedules, the full one %d: nothing was reduced", o, red.schedules, full.schedules)
		}
	}
	for _, c := range []struct{ variant, property string }{
		{"toy-racy", ExclusiveLeadership},
		{"toy-data", ExclusiveLeadership},
		{"toy-files", BoundedFiles},
		{"toy-server", ExclusiveLeadership},
		{"toy-paths-unclean", ExclusiveLeadership},
	} {
		if !fullFound(t, ExploreOptions{Variant: c.variant, Procs: 2, Horizon: 10 * time.Millisecond}, c.property) {
			t.Errorf("%s: the full search does not find %s: the test shows nothing", c.variant, c.property)
		}
	}
}

// missing counts the traces of full that got lacks.
func missing(full, got map[uint64]bool) int {
	n := 0
	for k := range full {
		if !got[k] {
			n++
		}
	}
	return n
}

func fullFound(t *testing.T, o ExploreOptions, property string) bool {
	return fullSearch(t, o).violated[property]
}

// A reduced search is a function of its bounds: run twice, the same
// schedules, races, cut-short runs and violations with the same decisions.
func TestDPORDeterministic(t *testing.T) {
	o := ExploreOptions{Variant: "seed", Procs: 2, Crashes: 1, Horizon: 4 * time.Second, DPOR: true}
	a, err := Explore(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Explore(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Complete || a.Schedules != b.Schedules || a.DPOR != b.DPOR || len(a.Violations) == 0 || len(a.Violations) != len(b.Violations) {
		t.Fatalf("two runs: %d/%d schedules, %+v/%+v, %d/%d violations (complete %v)", a.Schedules, b.Schedules, a.DPOR, b.DPOR, len(a.Violations), len(b.Violations), a.Complete)
	}
	for i := range a.Violations {
		if !slices.Equal(a.Violations[i].Decisions, b.Violations[i].Decisions) {
			t.Errorf("%s: the kept counterexample differs between two runs", a.Violations[i].Property)
		}
	}
}

// BenchmarkDPORTraces measures how far a complete reduced search is from
// its floor, the number of distinct traces (up to where among its quiet
// steps a process was killed: sim.World.KillFingerprint): flock, 2
// processes, 1 SIGKILL at any instant, the first second. Run with
// -benchtime 1x (one op is the whole search: minutes; with -short, as CI
// runs every benchmark once, without the SIGKILL, whose first
// milliseconds alone hold most of the traces).
func BenchmarkDPORTraces(b *testing.B) {
	o := ExploreOptions{Variant: "flock", Procs: 2, Crashes: 1, Horizon: time.Second, DPOR: true}
	if testing.Short() {
		o.Crashes = 0
	}
	for b.Loop() {
		fps := map[uint64]bool{}
		res, err := exploreDPORWith(o, 0, nil, func(w *sim.World) { fps[w.KillFingerprint()] = true })
		if err != nil {
			b.Fatal(err)
		}
		if !res.Complete {
			b.Fatal("incomplete")
		}
		b.ReportMetric(float64(res.Schedules), "schedules")
		b.ReportMetric(float64(res.DPOR.Blocked), "cut-short")
		b.ReportMetric(float64(res.DPOR.Pruned), "kills-not-run")
		b.ReportMetric(float64(len(fps)), "traces")
	}
}

// TestDPORRacesSinceBranch holds each run's races, taken from the step
// its new choice could change on (sim.World.Races with a StepMark), to
// all of them: a search that takes every race of every run makes the
// same schedules, cuts and prunes the same runs and keeps the same
// counterexamples, with more races counted.
func TestDPORRacesSinceBranch(t *testing.T) {
	// Random toys with a power loss, whose outcomes are chosen inside
	// its step: the mark is then that step's (a review's mutant that
	// took the next one lost half their traces and passed the rest).
	var bounds []ExploreOptions
	for s := uint64(11); s <= 14; s++ {
		v, _ := randomToy(s, 2, 2)
		registerOnce(t, v)
		bounds = append(bounds, ExploreOptions{Variant: v.Name, Procs: 2, Powers: 1, Horizon: 10 * time.Millisecond})
	}
	bounds = append(bounds, []ExploreOptions{
		{Variant: "seed", Procs: 2, Crashes: 1, Horizon: 4 * time.Second},
		{Variant: "seed-rename", Procs: 2, Pauses: 1, Horizon: 2 * time.Second},
		{Variant: "seed", Procs: 2, Terms: 1, Horizon: 2 * time.Second},
		{Variant: "seed", Procs: 2, FSErrors: 1, Horizon: time.Second},
		// (Incomplete: both stop after as many schedules.)
		{Variant: "reference", Procs: 2, Powers: 1, Horizon: time.Millisecond, Limit: 3000},
		{Variant: "reference", Procs: 2, Crashes: 1, Horizon: time.Millisecond, Limit: 3000},
		{Variant: "flock", Procs: 2, Crashes: 1, Horizon: 20 * time.Millisecond},
	}...)
	if testing.Short() {
		bounds = bounds[:10]
	}
	sinceRaces, everyRaces := 0, 0
	defer func() {
		if !t.Failed() && sinceRaces >= everyRaces {
			t.Errorf("races since the branch %d, every race %d: nothing left out", sinceRaces, everyRaces)
		}
	}()
	for _, o := range bounds {
		o.DPOR = true
		name := fmt.Sprintf("%s/%d/%d/%d/%d/%d/%d/%v", o.Variant, o.Procs, o.Crashes, o.Pauses, o.Terms, o.FSErrors, o.Powers, o.Horizon)
		t.Run(name, func(t *testing.T) {
			// Each schedule's trace, in the order run.
			search := func(o ExploreOptions) (ExploreResult, []uint64) {
				var fps []uint64
				res, err := exploreDPORWith(o, o.Limit, nil, func(w *sim.World) { fps = append(fps, w.KillFingerprint()) })
				if err != nil {
					t.Fatal(err)
				}
				return res, fps
			}
			since, sinceFPs := search(o)
			o.everyRace = true
			every, everyFPs := search(o)
			if !slices.Equal(sinceFPs, everyFPs) {
				t.Errorf("the schedules' traces differ (%d and %d schedules)", len(sinceFPs), len(everyFPs))
			}
			if since.Schedules != every.Schedules || since.Complete != every.Complete || since.DPOR.Blocked != every.DPOR.Blocked || since.DPOR.Pruned != every.DPOR.Pruned {
				t.Fatalf("since the branch: %d schedules %+v; every race: %d schedules %+v", since.Schedules, since.DPOR, every.Schedules, every.DPOR)
			}
			sinceRaces += since.DPOR.Races
			everyRaces += every.DPOR.Races
			if len(since.Violations) != len(every.Violations) {
				t.Fatalf("%d violations against %d", len(since.Violations), len(every.Violations))
			}
			for i := range since.Violations {
				if !slices.Equal(since.Violations[i].Decisions, every.Violations[i].Decisions) {
					t.Errorf("%s: a different counterexample", since.Violations[i].Property)
				}
			}
			t.Logf("%d schedules, %+v; every race: %d races", since.Schedules, since.DPOR, every.DPOR.Races)
		})
	}
}
