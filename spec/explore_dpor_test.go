package spec

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
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
			p.Role(lease.RoleLeader)
			if f := cfg.Callbacks.OnStartedLeading; f != nil {
				f(context.Background())
			}
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
			p.Role(lease.RoleLeader)
			if f := cfg.Callbacks.OnStartedLeading; f != nil {
				f(context.Background())
			}
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
	out := outcomes{traces: map[uint64]bool{}, violated: map[string]bool{}}
	var prefix []int
	for {
		d := &dfs{prefix: prefix}
		cfg, err := ExploreConfig(o, d)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Explore.DPOR = true // every tie asked, the steps recorded; no reduction
		w, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.Run()
		out.schedules++
		out.traces[w.Fingerprint()] = true
		for _, v := range Check(w.Trace()) {
			if v.Violation != nil {
				out.violated[v.Property] = true
			}
		}
		i := len(d.log) - 1
		for i >= 0 && d.log[i].V+1 >= d.log[i].N {
			i--
		}
		if i < 0 {
			return out
		}
		if out.schedules == 400000 {
			t.Fatalf("the full search of %+v passed %d schedules: too big for this test", o, out.schedules)
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
		out.traces[w.Fingerprint()] = true
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
func TestDPORSound(t *testing.T) {
	registerOnce(t, toyVariant("toy-excl", false))
	registerOnce(t, toyVariant("toy-racy", true))
	registerOnce(t, toyWatch("toy-watch"))
	registerOnce(t, toyData("toy-data"))
	registerOnce(t, toyFlockQueue("toy-flockq"))
	registerOnce(t, toyFiles("toy-files"))
	registerOnce(t, toyServer("toy-server"))
	for _, o := range []ExploreOptions{
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
		t.Logf("%s procs %d crashes %d pauses %d terms %d: full %d schedules, %d traces, violated %v; reduced %d schedules (%d cut short, %d races), %d traces",
			o.Variant, o.Procs, o.Crashes, o.Pauses, o.Terms, full.schedules, len(full.traces), slices.Sorted(maps.Keys(full.violated)),
			red.schedules, res.DPOR.Blocked, res.DPOR.Races, len(red.traces))
		if red.incomplete {
			t.Errorf("%+v: the reduced search did not complete", o)
		}
		if !maps.Equal(full.traces, red.traces) {
			missing := 0
			for k := range full.traces {
				if !red.traces[k] {
					missing++
				}
			}
			t.Errorf("%+v: the reduced search reached %d traces, the full one %d; %d of the full search's missing", o, len(red.traces), len(full.traces), missing)
		}
		if !maps.Equal(full.violated, red.violated) {
			t.Errorf("%+v: violated %v in the reduced search, %v in the full one", o, red.violated, full.violated)
		}
		if red.schedules >= full.schedules && full.schedules > 1 {
			t.Errorf("%+v: the reduced search ran %d schedules, the full one %d: nothing was reduced", o, red.schedules, full.schedules)
		}
	}
	for _, c := range []struct{ variant, property string }{
		{"toy-racy", ExclusiveLeadership},
		{"toy-data", ExclusiveLeadership},
		{"toy-files", BoundedFiles},
		{"toy-server", ExclusiveLeadership},
	} {
		if !fullFound(t, ExploreOptions{Variant: c.variant, Procs: 2, Horizon: 10 * time.Millisecond}, c.property) {
			t.Errorf("%s: the full search does not find %s: the test shows nothing", c.variant, c.property)
		}
	}
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
