package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// tortureFaults are the faults a harness can inflict on real processes
// with kill(2). Clock faults would need root or a time namespace.
var tortureFaults = map[string]trace.FaultKind{"kill": trace.Kill, "stop": trace.Stop, "term": trace.Term, "stall": trace.Stall}

// cmdTorture is a Jepsen-style harness: real processes of leaselab run (or
// any program that prints the post's log lines), real signals at instants
// drawn from a seed, and the simulator's checks on what really happened.
func cmdTorture(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("torture", flag.ContinueOnError)
	variant := fs.String("variant", "reference", "variant the processes run, and that the run is judged as (valid: "+lease.VariantNames()+")")
	store := fs.String("store", "file", "the processes' store: file or flock (the lock file), or a server: redis, etcd, sqlite, postgres (with -dsn; -variant is then the reference over it)")
	dsn := fs.String("dsn", "", "the server store's address, as leaselab run takes it")
	procs := fs.Int("procs", 5, "processes contending at any time (killed ones are replaced)")
	trials := fs.Int("trials", 0, "instead of a torture run: this many trials in which -procs processes start at once on a fresh lock file, counting how many became leader (the post's experiment)")
	duration := fs.Duration("duration", 30*time.Second, "how long the torture run lasts")
	faults := fs.String("faults", "kill,stop,term", "signals to send: comma list of kill,stop,term,stall (stall: every process stopped at once, for a ninth to a third of a lease), or none")
	seed := fs.Uint64("seed", 1, "seed of the fault plan: which signal, to whom, when")
	singleton := fs.Bool("singleton", false, "every process runs a command (leaselab run -- CMD) that reports its own start and stop, and the property singleton fails if two commands ever ran at once")
	execCmd := fs.String("exec", "", "run `CMD` (a shell command line; {lock} is the lock path) instead of leaselab run; its standard output is followed for the post's log lines")
	asJSON := fs.Bool("json", false, "print one JSON object")
	keep := fs.Bool("keep", false, "keep the processes' logs and histories (kept anyway when a violation is found)")
	bin := fs.String("bin", "", "the leaselab binary the processes run (default: this one)")
	outPath := fs.String("o", "", "also write the run as an HTML timeline to `FILE` (one is always written beside the logs)")
	crashAfter := fs.String("crash-after", "", "the first process started SIGKILLs itself right after its Nth system call of a kind, `KIND:N` (open, open-excl, open-trunc, open-create, write, fsync, close, remove, rename, link): a crash point aimed as the simulator aims them, inside a renewal, say")
	emptyLock := fs.Bool("empty-lock", false, "create the lock file empty before the first process starts (the post's experiment: touch the lock file)")
	var cfg lease.Config
	intervalFlags(fs, &cfg, scaledConfig)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("torture takes flags only (got %s)", strings.Join(pos, " "))
	}
	if *procs < 1 || *procs > 256 {
		return usagef("-procs %d: want 1 to 256", *procs)
	}
	if *trials < 0 {
		return usagef("-trials %d: want at least 0", *trials)
	}
	if *duration <= 0 {
		return usagef("-duration %v: want a positive duration", *duration)
	}
	var kinds []trace.FaultKind
	if *faults != "none" && *faults != "" {
		for _, f := range strings.Split(*faults, ",") {
			k, ok := tortureFaults[strings.TrimSpace(f)]
			if !ok {
				return usagef("-faults: %q is not a fault torture inflicts (valid: kill, stop, term, stall; clock faults need the simulator: leaselab check)", f)
			}
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	var extra []string
	switch kind, ok := serverStores[*store]; {
	case ok:
		if *dsn == "" {
			return usagef("-store %s needs -dsn", *store)
		}
		*variant = kind
		// A fresh lease name, so that runs against one server never meet.
		extra = []string{"-store", *store, "-dsn", *dsn, "-name", fmt.Sprintf("torture-%d-%d", os.Getpid(), *seed)}
	case *store == "flock":
		*variant = "flock"
	case *store != "file":
		return usagef("-store %q: valid: file, flock, redis, etcd, sqlite, postgres", *store)
	}
	v, err := lease.LookupVariant(*variant)
	if err != nil {
		return usagef("%v", err)
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	if *singleton && (*execCmd != "" || *trials > 0) {
		return usagef("-singleton runs leaselab run with a command through a torture run: not with -exec or -trials")
	}
	if *execCmd != "" && !strings.Contains(*execCmd, "{lock}") {
		return usagef("-exec %q: the command needs {lock} where the lock path goes", *execCmd)
	}
	if *crashAfter != "" {
		if _, _, err := lease.ParseCrashPoint(*crashAfter); err != nil {
			return usagef("-crash-after: %v", err)
		}
		if *execCmd != "" {
			return usagef("-crash-after aims at leaselab's own processes, not at an -exec program")
		}
	}
	if *bin == "" {
		if *bin, err = os.Executable(); err != nil {
			return err
		}
	} else if _, err := exec.LookPath(*bin); err != nil {
		// Every process failed to start, and the run reported that as
		// violations, exit 1 (a probe).
		return usagef("-bin %s: not a program torture can run: %v", *bin, err)
	}
	if len(extra) > 0 {
		// An unreachable server failed every process at start, and the
		// run reported "2 properties violated: no-own-exit", exit 1 (a
		// probe). A bad address is bad input: connect once first.
		if err := refuseInMemory(*store, *dsn); err != nil {
			return err
		}
		if err := probeServer(*store, *dsn); err != nil {
			return usagef("-store %s -dsn %s: cannot reach the server: %v", *store, *dsn, err)
		}
	}
	if *outPath != "" {
		// Fail now, not after the run.
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return usagef("-o: cannot write the timeline: %v", err)
		}
		f.Close()
	}
	dir, err := os.MkdirTemp("", "leaselab-torture-")
	if err != nil {
		return err
	}
	if *emptyLock {
		if err := os.WriteFile(filepath.Join(dir, "leader.lock"), nil, 0o644); err != nil {
			os.RemoveAll(dir)
			return err
		}
	}
	t := torture{bin: *bin, exec: *execCmd, variant: v, cfg: cfg, procs: *procs, kinds: kinds, seed: *seed, dir: dir, out: *outPath, extra: extra, singleton: *singleton, crashAfter: *crashAfter,
		remote: len(extra) > 0 && *store != "sqlite", emptyLock: *emptyLock}
	if *trials > 0 {
		t.bar = newProgress(stderr, int64(*trials), "trials", *asJSON)
	} else {
		t.bar = newProgress(stderr, int64((*duration + 2*spec.RecordedBounds(v, cfg).Wedge).Seconds()), "s", *asJSON)
	}
	var rep any
	var repDir *string // the report's dir, set when the directory is kept
	var found bool
	if *trials > 0 {
		var r *trialsReport
		if r, found, err = t.trials(*trials, stdout, !*asJSON); err == nil {
			rep, repDir = r, &r.Dir
		}
	} else {
		var r *tortureReport
		if r, found, err = t.run(*duration, stdout, !*asJSON); err == nil {
			rep, repDir = r, &r.Dir
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	if *keep || found {
		*repDir = dir
		if !*asJSON {
			fmt.Fprintf(stdout, "# logs, histories and timeline kept in %s\n", dir)
		}
	} else {
		os.RemoveAll(dir)
		if !*asJSON {
			fmt.Fprintf(stdout, "# logs, histories and timeline removed with %s (-keep keeps them; a violation always does)\n", dir)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	}
	if found {
		return errViolation
	}
	return nil
}

type torture struct {
	bin, exec  string
	variant    lease.Variant
	cfg        lease.Config
	procs      int
	kinds      []trace.FaultKind
	seed       uint64
	dir        string
	out        string   // -o: the timeline's path
	extra      []string // more flags for leaselab run (a server store)
	remote     bool     // the store is a server across the network: Redis, etcd, PostgreSQL
	singleton  bool     // -singleton: run's command is the probe (singleton_torture.go)
	crashAfter string   // -crash-after: the first process's crash point
	emptyLock  bool     // -empty-lock: each trial's lock file starts empty (a torture run's is made by cmdTorture)
	bar        *progress
	// members, when set, are the servers of the replicated store the
	// processes use, and memberKinds the faults inflicted on them
	// (MemberKill, MemberStop) beside the signals: torture_members.go.
	members     []member
	memberKinds []trace.FaultKind
}

// run is one torture run: procs processes for d, signals from the seed's
// plan, every property checked on the merged history.
func (t torture) run(d time.Duration, w io.Writer, text bool) (*tortureReport, bool, error) {
	c := newCluster(t.bin, t.exec, t.variant.Name, t.cfg, t.dir)
	c.extra, c.remote = t.extra, t.remote
	c.crashAfter = t.crashAfter
	if t.singleton {
		c.command = probeCommand(t.bin, t.dir)
	}
	rng := rand.New(rand.NewPCG(t.seed, 0x746f727475726521))
	lease := float64(t.cfg.LeaseDuration)
	// between draws a time of lo to hi leases.
	between := func(lo, hi float64) int64 { return int64((lo + rng.Float64()*(hi-lo)) * lease) }

	type action struct {
		at int64
		do func()
	}
	var queue []action
	push := func(at int64, f func()) {
		i, _ := slices.BinarySearchFunc(queue, at, func(a action, t int64) int {
			if a.at <= t {
				return -1
			}
			return 1
		})
		queue = slices.Insert(queue, i, action{at, f})
	}
	var spawnErr error
	var stallEnd int64 // the end of the machine-wide stall under way
	replenish := func() {
		if c.now() < stallEnd {
			return // (the next tick starts them: none runs during a stall)
		}
		for n := len(c.alive()); n < t.procs && spawnErr == nil; n++ {
			_, spawnErr = c.spawn(0)
		}
	}
	counts := map[string]int{}
	// The run ends with a recovery phase, as Jepsen's final heal: no
	// signal for twice the no-wedge bound, so that a wedge (no leader
	// while processes run) is judged at least once, however the faults
	// fell before it. And half the signals that hit the leader leave the
	// failover bound (and a tenth of a lease) without another, so that
	// failover-bound is judged on those.
	b := spec.RecordedBounds(t.variant, t.cfg) // what the run is judged by
	if t.singleton {
		b.Term += stopGrace // (as the trace says: trace.Run.StopGrace)
	}
	recovery := 2 * b.Wedge
	var fault func()
	fault = func() {
		now := c.now()
		if now >= int64(d) {
			return // the recovery phase
		}
		next := now + between(0.3, 2)
		if now < stallEnd {
			push(stallEnd, fault) // every process is stopped: nothing to signal
			return
		}
		if len(t.kinds) > 0 {
			kind := t.kinds[rng.IntN(len(t.kinds))]
			if kind == trace.Stall {
				// Every process stopped at once for a ninth to a third of a
				// lease (the simulator's 1 to 3 s at the post's 9 s).
				dur := between(1.0/9, 1.0/3)
				ks := c.stall(time.Duration(dur))
				stallEnd = now + dur
				counts["stall"]++
				push(stallEnd, func() { c.unstall(ks) })
				push(stallEnd+between(0.3, 2), fault)
				return
			}
			var cands []*child
			for _, k := range c.alive() {
				if kind == trace.Kill || !k.stopped && !k.termed {
					cands = append(cands, k)
				}
			}
			var k *child
			if l := c.leader(); l != nil && slices.Contains(cands, l) && rng.Float64() < 0.7 {
				k = l
			} else if len(cands) > 0 {
				k = cands[rng.IntN(len(cands))]
			}
			if k != nil {
				counts[kind.String()]++
				if k == c.leader() && kind != trace.Stop && rng.IntN(2) == 0 {
					bound := b.Kill
					if kind == trace.Term {
						bound = b.Term
					}
					next = max(next, now+int64(bound)+int64(lease/10))
				}
				switch kind {
				case trace.Stop:
					// From a third of a lease (nothing should happen) to four
					// (every watcher has given up on the paused process).
					dur := between(0.3, 4)
					c.signal(k, trace.Stop, time.Duration(dur))
					var cont func()
					cont = func() {
						if c.now() < stallEnd {
							push(stallEnd, cont) // a SIGCONT during a stall lands when it ends
							return
						}
						c.signal(k, trace.Cont, 0)
					}
					push(now+dur, cont)
				default:
					c.signal(k, kind, 0)
					push(now+between(0.1, 1), replenish)
				}
			}
		}
		push(next, fault)
	}
	replenish()
	if spawnErr != nil {
		c.shutdown()
		return nil, false, spawnErr
	}
	push(between(0.5, 2), fault)
	type memberResult struct {
		reps []memberReport
		err  error
	}
	memberDone := make(chan memberResult, 1)
	if len(t.members) > 0 && len(t.memberKinds) > 0 {
		go func() {
			reps, err := c.memberFaults(t.members, t.memberKinds, t.seed, d)
			memberDone <- memberResult{reps, err}
		}()
	} else {
		memberDone <- memberResult{}
	}
	var tick func()
	tick = func() { replenish(); push(c.now()+int64(lease), tick) }
	push(int64(lease), tick)
	end := int64(d + recovery)
	for len(queue) > 0 && queue[0].at < end {
		a := queue[0]
		queue = queue[1:]
		if wait := a.at - c.now(); wait > 0 {
			time.Sleep(time.Duration(wait))
		}
		a.do()
		t.bar.set(c.now()/int64(time.Second), "signals: "+faultList(counts))
	}
	t.bar.done()
	mr := <-memberDone
	for _, m := range mr.reps {
		// A restart that took long ends its outage after d: the calm
		// phase is owed from the end of the last one.
		end = max(end, m.end+int64(recovery))
	}
	if wait := end - c.now(); wait > 0 {
		time.Sleep(time.Duration(wait))
	}
	stopped := c.shutdown()
	if spawnErr != nil {
		return nil, false, spawnErr
	}
	if mr.err != nil {
		return nil, false, mr.err
	}
	tr := c.trace(stopped)
	if f, err := os.Create(filepath.Join(t.dir, "trace.txt")); err == nil {
		tr.WriteTrace(f) // every event of the merged history, for the record
		f.Close()
	}
	verdicts := spec.Check(tr)
	vs := []tortureViolation{}
	found := false
	var commands int
	if t.singleton {
		var svs []tortureViolation
		// A term longer than a lease and 2 s had time to launch its
		// command (a re-exec and a scan of /proc, on a loaded machine).
		svs, commands = checkSingleton(t.dir, c.origin, stopped, singletonTerms(tr), t.cfg.LeaseDuration+2*time.Second)
		verdicts = append(verdicts, singletonVerdict(svs))
	}
	verdicts = append(verdicts, c.ownExitVerdict(stopped))
	judged, leaderSignals := spec.FailoverCounts(tr)
	if text {
		fmt.Fprintf(w, "# torture %s: %d processes (%d started), %v then %v without signals, signals %s, seed %d, lease %v renew %v watch %v\n",
			t.variant.Name, t.procs, len(tr.Procs), d, recovery, faultList(counts), t.seed, t.cfg.LeaseDuration, t.cfg.RenewInterval, t.cfg.WatchInterval)
		for _, m := range mr.reps {
			role := "a follower"
			if m.Leader {
				role = "the raft leader"
			}
			fmt.Fprintf(w, "# %s %s (%s) at %.3fs, out for %.3fs\n", m.Kind, m.Member, role, m.AtS, m.ForS)
		}
	}
	// Every episode, not the first of each property (check -keep-going
	// counts runs; a torture run is one run, so it counts episodes).
	episodes := map[string]int{}
	for _, e := range spec.Episodes(tr, verdicts) {
		found = true
		x := &e
		episodes[x.Property]++
		j := tortureViolation{Property: x.Property, AtS: x.At.Seconds(), PIDs: x.PIDs, Detail: x.Detail}
		if x.HTML != nil {
			path := filepath.Join(t.dir, "porcupine.html")
			if err := x.HTML(path); err == nil {
				j.HTML = path
			}
		}
		vs = append(vs, j)
		if text {
			fmt.Fprintf(w, "VIOLATION %s at %s\n  %s\n", x.Property, fmtSecs(x.At), x.Detail)
			for _, l := range tr.Excerpt(x.At-2*t.cfg.LeaseDuration, x.At+time.Millisecond) {
				fmt.Fprintf(w, "    %s\n", l)
			}
			if j.HTML != "" {
				fmt.Fprintf(w, "  porcupine: %s\n", j.HTML)
			}
		}
	}
	for _, v := range verdicts { // (the singleton verdict is not a trace's: Episodes skips it)
		if v.Violation != nil && episodes[v.Property] == 0 {
			found = true
			episodes[v.Property]++
			x := v.Violation
			vs = append(vs, tortureViolation{Property: x.Property, AtS: x.At.Seconds(), PIDs: x.PIDs, Detail: x.Detail})
			if text {
				fmt.Fprintf(w, "VIOLATION %s at %s\n  %s\n", x.Property, fmtSecs(x.At), x.Detail)
			}
		}
	}
	title := fmt.Sprintf("leaselab torture: %s, %d real processes, seed %d", t.variant.Name, t.procs, t.seed)
	hrefs := map[string]string{}
	for _, j := range vs {
		if j.HTML != "" {
			hrefs[j.Property] = "porcupine.html"
		}
	}
	for _, path := range []string{filepath.Join(t.dir, "timeline.html"), t.out} {
		if path == "" {
			continue
		}
		if err := writeTimelineFile(path, tr, verdicts, title, hrefs); err != nil {
			return nil, false, usagef("-o %s: %v", path, err)
		}
	}
	gaps := failovers(tr)
	gj := []failoverReport{}
	for _, g := range gaps {
		gj = append(gj, failoverReport{Signal: g.kind.String(), AtS: time.Duration(g.at).Seconds(), GapMs: float64(g.gap) / 1e6, PID: g.pid})
	}
	rep := &tortureReport{Variant: t.variant.Name, Procs: t.procs, Started: len(tr.Procs), DurationS: d.Seconds(),
		Seed: t.seed, Signals: counts, Terms: len(tr.Leadership()), Failovers: gj, Violations: vs,
		Properties: propertyNames(verdicts), Commands: commands,
		FailoverJudged: judged, LeaderSignals: leaderSignals, RecoveryS: recovery.Seconds(), Episodes: episodes,
		Members: mr.reps}
	if text {
		summary := "no violation"
		if found {
			summary = episodeSummary(verdicts, episodes)
		}
		if t.singleton {
			fmt.Fprintf(w, "# singleton: %d commands started\n", commands)
		}
		fmt.Fprintf(w, "# %d leadership terms, %d failovers of a signalled leader%s; failover-bound judged on %d of %d signals to a leader: %s\n",
			len(tr.Leadership()), len(gaps), gapSummary(gaps), judged, leaderSignals, summary)
	}
	return rep, found, nil
}

// episodeSummary is the summary line's count of the properties violated
// and their episodes, each property once: a property may have two
// verdicts (no-own-exit, spec's and torture's own), and was counted twice
// ("2 properties violated, episodes: no-own-exit 1, no-own-exit 1").
func episodeSummary(verdicts []spec.Verdict, episodes map[string]int) string {
	var parts []string
	seen := map[string]bool{}
	for _, v := range verdicts {
		if n := episodes[v.Property]; n > 0 && !seen[v.Property] {
			seen[v.Property] = true
			parts = append(parts, fmt.Sprintf("%s %d", v.Property, n))
		}
	}
	return fmt.Sprintf("%d properties violated, episodes: %s", len(parts), strings.Join(parts, ", "))
}
