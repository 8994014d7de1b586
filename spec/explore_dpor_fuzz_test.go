package spec

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

var (
	dporFuzz      = flag.Int("dpor-fuzz", 0, "TestDPORSoundRandomToys: random toys to try (0: 12, or 6 with -short)")
	dporFuzzBase  = flag.Int("dpor-fuzz-base", 0, "TestDPORSoundRandomToys: the first toy's seed")
	dporFuzzOps   = flag.Int("dpor-fuzz-ops", 2, "TestDPORSoundRandomToys: steps of each process's script")
	dporFuzzCap   = flag.Int("dpor-fuzz-cap", 5000, "TestDPORSoundRandomToys: skip a bound whose full search passes this many schedules")
	dporFuzzProcs = flag.Int("dpor-fuzz-procs", 2, "TestDPORSoundRandomToys: processes of each toy")
	dporFuzzExtra = flag.Bool("dpor-fuzz-extra", false, "TestDPORSoundRandomToys: other fault budgets (powers, jumps, two of a kind)")
)

// toyOp is one step of a random toy's script: a system call or two, a
// leadership, an activity spawned, a wait, an exit.
type toyOp struct {
	name string
	run  func(p lease.Proc, cfg lease.Config, a, b string)
}

// toyOps are what random toys are made of: every kind of step whose
// dependence the reduction reasons about (paths, a flock, a directory's
// notices, a signal handler, activities, exits, leadership and the
// clock).
var toyOps = []toyOp{
	{"stat-a", func(p lease.Proc, _ lease.Config, a, _ string) { p.Stat(a) }},
	{"stat-b", func(p lease.Proc, _ lease.Config, _, b string) { p.Stat(b) }},
	{"create-a", func(p lease.Proc, _ lease.Config, a, _ string) {
		if fd, err := p.Open(a, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
			p.Close(fd)
		}
	}},
	{"excl-lead-a", func(p lease.Proc, cfg lease.Config, a, _ string) {
		if fd, err := p.Open(a, lease.O_WRONLY|lease.O_CREATE|lease.O_EXCL, 0o644); err == nil {
			p.Close(fd)
			toyLead(p, cfg)
		}
	}},
	{"write-a", func(p lease.Proc, _ lease.Config, a, _ string) {
		if fd, err := p.Open(a, lease.O_WRONLY|lease.O_CREATE|lease.O_TRUNC, 0o644); err == nil {
			p.Write(fd, []byte{byte('0' + p.PID()/100)})
			p.Close(fd)
		}
	}},
	{"read-lead-a", func(p lease.Proc, cfg lease.Config, a, _ string) {
		if b, err := p.ReadFile(a); err == nil && len(b) > 0 {
			toyLead(p, cfg)
		}
	}},
	{"remove-a", func(p lease.Proc, _ lease.Config, a, _ string) { p.Remove(a) }},
	{"rename-ab", func(p lease.Proc, _ lease.Config, a, b string) { p.Rename(a, b) }},
	{"link-ab", func(p lease.Proc, _ lease.Config, a, b string) { p.Link(a, b) }},
	{"readdir", func(p lease.Proc, _ lease.Config, a, _ string) { p.ReadDir(filepath.Dir(a)) }},
	{"lead", func(p lease.Proc, cfg lease.Config, _, _ string) { toyLead(p, cfg) }},
	{"follow", func(p lease.Proc, _ lease.Config, _, _ string) { p.Role(lease.RoleWatcher) }},
	{"sleep", func(p lease.Proc, _ lease.Config, _, _ string) { p.Sleep(time.Millisecond) }},
	{"mono-lead", func(p lease.Proc, cfg lease.Config, _, _ string) {
		if p.Mono() >= time.Millisecond {
			toyLead(p, cfg)
		}
	}},
	{"log", func(p lease.Proc, _ lease.Config, _, _ string) { p.Log(lease.MsgStarted, int64(p.PID()), 0) }},
	{"on-term", func(p lease.Proc, _ lease.Config, _, _ string) {
		p.Go("sig", func() {
			p.AwaitShutdown()
			p.Log(lease.MsgStarted, 1, 0)
			p.Exit(0)
		})
	}},
	{"spawn-create-b", func(p lease.Proc, _ lease.Config, _, b string) {
		p.Go("sub", func() {
			if fd, err := p.Open(b, lease.O_WRONLY|lease.O_CREATE, 0o644); err == nil {
				p.Close(fd)
			}
		})
	}},
	{"exit", func(p lease.Proc, _ lease.Config, _, _ string) { p.Exit(0) }},
	{"flock-hold", func(p lease.Proc, _ lease.Config, a, _ string) {
		fd, err := p.Open(a, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err == nil && p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) == nil {
			p.Sleep(time.Millisecond)
		}
		if err == nil {
			p.Close(fd)
		}
	}},
	{"flock-lead", func(p lease.Proc, cfg lease.Config, a, _ string) {
		fd, err := p.Open(a, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err == nil && p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) == nil {
			toyLead(p, cfg)
		}
		if err == nil {
			p.Close(fd)
		}
	}},
	{"watch", func(p lease.Proc, _ lease.Config, a, _ string) {
		n := p.(lease.Notifier)
		dir := filepath.Dir(a)
		if n.WaitChange(dir, n.ChangeToken(dir), p.Mono()+time.Millisecond) {
			p.Log(lease.MsgStarted, 3, 0)
		}
	}},
}

// toyWeights makes the steps that race on the lock path twice as likely
// as the rest: the reduction's mistakes show in races.
var toyWeights = func() []int {
	var idx []int
	for i, op := range toyOps {
		idx = append(idx, i)
		if strings.HasSuffix(op.name, "-a") && op.name != "flock-hold" {
			idx = append(idx, i)
		}
	}
	return idx
}()

// randomToy is a toy whose processes run random scripts of toyOps
// (process i the script i), drawn from seed.
func randomToy(seed uint64, procs, ops int) (lease.Variant, string) {
	r := rand.New(rand.NewPCG(seed, 0x746f79))
	scripts := make([][]string, procs)
	for i := range scripts {
		for range ops {
			scripts[i] = append(scripts[i], toyOps[toyWeights[r.IntN(len(toyWeights))]].name)
		}
	}
	return scriptToy(fmt.Sprintf("toy-random-%d-%d-%d", seed, procs, ops), scripts)
}

// scriptToy is a toy whose process i runs the toyOps named by scripts[i],
// and its description.
func scriptToy(name string, scripts [][]string) (lease.Variant, string) {
	byName := map[string]toyOp{}
	for _, op := range toyOps {
		byName[op.name] = op
	}
	var desc strings.Builder
	for i, script := range scripts {
		fmt.Fprintf(&desc, " p%d:%s", i, strings.Join(script, ","))
	}
	v := toyVariant(name, false)
	v.Summary = "a random toy (a test of explore -dpor):" + desc.String()
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		i := min(p.PID()/100-1, len(scripts)-1)
		a, b := path, filepath.Join(filepath.Dir(path), "b")
		for _, n := range scripts[i] {
			byName[n].run(p, cfg, a, b)
		}
		return nil
	}
	return v, desc.String()
}

// pinnedToys found the reduction unsound once, and are searched on
// every run, by their scripts (a change to the random draw cannot lose
// them).
var pinnedToys = []struct {
	name    string
	scripts [][]string
	why     string
}{
	{"toy-pinned-297", [][]string{{"on-term", "rename-ab"}, {"lead", "flock-hold"}},
		"random toy 297 when found, 1 SIGTERM: the handler's exit disabled p0's rename, asleep at the exit's tie; " +
			"the schedule where p1's open, then the rename, came before the exit was never run (1 of 48 traces)"},
}

// The reduction's soundness on programs nobody wrote by hand: random
// toys of two processes, two steps each by default (TestDPORSound's
// toys are each built around one rule; these mix them), under every
// small budget of faults, reach the same traces and violations reduced
// as in full. A bound whose full search passes -dpor-fuzz-cap schedules
// is skipped (counted). The default: 12 toys and the pinned ones, 122
// of their 156 bounds searched, 25 s. Longer searches: see the README
// (DPOR).
func TestDPORSoundRandomToys(t *testing.T) {
	n := *dporFuzz
	if n == 0 {
		n = 12
		if testing.Short() {
			n = 6
		}
	}
	budgets := []ExploreOptions{
		{Crashes: 1}, {Terms: 1}, {Pauses: 1}, {FSErrors: 1},
		{Crashes: 1, Pauses: 1}, {Terms: 1, Pauses: 1}, {Crashes: 1, Terms: 1}, {Crashes: 2},
		{Crashes: 1, FSErrors: 1}, {Terms: 1, FSErrors: 1}, {Pauses: 1, FSErrors: 1}, {Crashes: 1, Terms: 1, Pauses: 1},
	}
	if *dporFuzzExtra {
		budgets = []ExploreOptions{
			{Powers: 1}, {Jumps: 1}, {Crashes: 1, Jumps: 1}, {Crashes: 1, Powers: 1}, {Jumps: 1, FSErrors: 1},
			{Terms: 2}, {Pauses: 2}, {Crashes: 1, Pauses: 1, FSErrors: 1}, {Crashes: 2, FSErrors: 1}, {Crashes: 3}, {FSErrors: 2},
			{Crashes: 1, Terms: 2},
		}
	}
	searched, skipped, fullSchedules, reducedSchedules := 0, 0, 0, 0
	var pruned DPORStats // what the predictions skipped, over every bound
	type toy struct {
		v      lease.Variant
		desc   string
		procs  int
		pinned bool
	}
	var toys []toy
	for _, p := range pinnedToys {
		v, desc := scriptToy(p.name, p.scripts)
		toys = append(toys, toy{v, desc, len(p.scripts), true})
	}
	for s := *dporFuzzBase; s < *dporFuzzBase+n; s++ {
		v, desc := randomToy(uint64(s), *dporFuzzProcs, *dporFuzzOps)
		toys = append(toys, toy{v, desc, *dporFuzzProcs, false})
	}
	for _, toy := range toys {
		registerOnce(t, toy.v)
		for _, b := range budgets {
			o := b
			o.Variant, o.Procs, o.Horizon = toy.v.Name, toy.procs, 10*time.Millisecond
			if o.Pauses > 0 {
				// Two pause lengths that end within the run (pauseDoomed
				// stands one length for another: a review asked for runs
				// in which both resume).
				o.Horizon = PauseLengths(lease.DefaultConfig())[1] + 5*time.Millisecond
			}
			limit := *dporFuzzCap
			if toy.pinned {
				limit = max(limit, 5000) // (their bounds that found a hole take fewer)
			}
			full, ok := cappedFullSearch(t, o, limit)
			if !ok {
				skipped++
				continue
			}
			searched++
			red, res := reducedSearch(t, o)
			fullSchedules += full.schedules
			reducedSchedules += red.schedules
			pruned.Pruned += res.DPOR.Pruned
			pruned.Pauses += res.DPOR.Pauses
			if red.incomplete || !maps.Equal(full.traces, red.traces) || !maps.Equal(full.violated, red.violated) {
				missing := 0
				for fp := range full.traces {
					if !red.traces[fp] {
						missing++
					}
				}
				t.Errorf("%s (%s), crashes %d terms %d pauses %d fserrs %d: full %d schedules, %d traces, violated %v; reduced %d schedules (%d cut short), %d traces, violated %v; %d traces missing",
					toy.v.Name, toy.desc, o.Crashes, o.Terms, o.Pauses, o.FSErrors, full.schedules, len(full.traces), slices.Sorted(maps.Keys(full.violated)),
					red.schedules, res.DPOR.Blocked, len(red.traces), slices.Sorted(maps.Keys(red.violated)), missing)
			}
		}
	}
	if searched == 0 {
		t.Fatalf("no bound small enough to search in full (%d skipped)", skipped)
	}
	if *dporFuzz == 0 && !*dporFuzzExtra && (pruned.Pruned == 0 || pruned.Pauses == 0) {
		t.Errorf("the default toys skipped %d SIGKILLs and %d pauses: a prediction no longer held to the full search", pruned.Pruned, pruned.Pauses)
	}
	t.Logf("%d toys: %d bounds searched in full (%d schedules) and reduced (%d; %d SIGKILLs and %d pauses not run), %d skipped (over %d schedules)",
		len(toys), searched, fullSchedules, reducedSchedules, pruned.Pruned, pruned.Pauses, skipped, *dporFuzzCap)
}
