package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/redisstore"
	"github.com/leaselab/leaselab/lease/sqlstore"
	"github.com/leaselab/leaselab/sim"
)

// cmdRun is a real leader-election process: the variant's algorithm on the
// OS file system, real clock and signals, logging in the post's format. With
// a command after --, it runs the command while it leads and stops it when
// leadership ends: a singleton runner for cron jobs and workers.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	variant := fs.String("variant", "reference", "variant to run (valid: "+lease.VariantNames()+")")
	store := fs.String("store", "file", "lease store: file (the lock file of -variant), flock (the kernel's flock(2) lock on the lock file, which its holder's death releases: the flock variant), or a server: redis, etcd, sqlite, postgres (the reference over it; see -dsn)")
	path := fs.String("path", "", "the lock file (file and flock stores)")
	dsn := fs.String("dsn", "", "the server store's address: redis host:port or redis://[user:password@]host:port[/db]; etcd endpoints host:port[,...] (or http://...); sqlite a database file; postgres a URL postgres://user:password@host:port/db")
	name := fs.String("name", "leader", "the lease's name on a server store (its key or row)")
	timeout := fs.Duration("timeout", 0, "each server request's timeout (0: a third of -renew, at most 1s)")
	id := fs.Int("id", 0, "holder id written in the lease (0: the process id)")
	startAt := fs.Int64("start-at", 0, "wait until CLOCK_MONOTONIC reads `NS` before contending (leaselab torture -trials starts every process at once)")
	shed := fs.Bool("shed", true, "once leading with a lock the kernel releases at death (flock), drop this process's resident pages of its executable, so that its death, and the hand-over, take less time")
	events := fs.String("events", "", "append this process's history (CLOCK_MONOTONIC events) to `FILE`, for leaselab torture")
	restart := fs.Bool("restart", false, "when the command exits on its own, start it again under the same leadership (at most once a second); without it (the default) run releases the lease and exits with the command's status")
	var cfg lease.Config
	intervalFlags(fs, &cfg, lease.DefaultConfig())
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("run takes flags, then -- and a command (got %v)", pos)
	}
	if *id < 0 {
		return usagef("-id %d: a holder id is a positive number (0: the process id)", *id)
	}
	// (A probe: each was accepted, and meant nothing, or a silent wait. A
	// "--" with nothing after it, as a script that builds the line writes,
	// is no command: run leads and waits to be told to stop.)
	switch {
	case *restart && len(command) == 0:
		return usagef("-restart restarts the command given after --, and there is none")
	case *startAt != 0 && *startAt > monoNow()+int64(time.Hour):
		return usagef("-start-at %d is %v from now on CLOCK_MONOTONIC: at most an hour (it is torture's, to start processes at one instant)", *startAt, time.Duration(*startAt-monoNow()).Round(time.Second))
	}
	// The command, resolved before anything is contended or written
	// (singleton.go).
	cmdPath, err := resolveCommand(command)
	if err != nil {
		return err
	}
	sc := singletonCommand{argv: command, path: cmdPath, restart: *restart}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	explicitVariant := given["variant"]
	if kind, ok := serverStores[*store]; ok {
		// A flag that means nothing here was silently ignored (a probe).
		if given["path"] {
			return usagef("-path is the lock file of the file and flock stores; -store %s keeps its lease on the server at -dsn, under -name", *store)
		}
		return runServer(*store, kind, *variant, explicitVariant, *dsn, *name, *timeout, *id, *startAt, *events, cfg, sc, stdout, stderr)
	}
	for _, f := range []string{"dsn", "name", "timeout"} {
		if given[f] {
			return usagef("-%s is for the server stores (-store redis|etcd|sqlite|postgres); -store %s does not use it", f, *store)
		}
	}
	// A server variant over a lock file is the simulator's model of a
	// server with no server: it never led and never exited, logging that
	// for ever (a probe).
	if slices.Contains(sim.ServerKinds, *variant) && *store == "file" {
		use := "-store " + *variant
		if *variant == "sql" {
			use = "-store sqlite or -store postgres"
		}
		return usagef("-variant %s is the simulator's model of a server store; on real processes run %s -dsn ADDRESS (the reference over a real server)", *variant, use)
	}
	if *path == "" {
		return usagef("run needs -path LOCKFILE")
	}
	switch *store {
	case "file":
	case "flock":
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "variant" })
		if explicit && *variant != "flock" {
			return usagef("-store flock runs the flock variant, not -variant %s (use -store file for %s, or leave -variant out)", *variant, *variant)
		}
		*variant = "flock"
	default:
		return usagef("-store %q: valid: file, flock, redis, etcd, sqlite, postgres", *store)
	}
	if err := checkLockPath(*path); err != nil {
		return err
	}
	sc.singleton = fileSingleton(*path, "file") // the file and flock stores alike: one lock file, one command
	v, err := lease.LookupVariant(*variant)
	if err != nil {
		return err
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	if err := checkOneStore(v.Name, *path, cfg.LeaseDuration); err != nil {
		return err
	}
	return start(v, func(p lease.Proc) lease.Store { return v.NewStore(p, *path) }, *path, *id, *startAt, *events, *shed, false, cfg, sc, stdout, stderr)
}

// runServer is leaselab run over a server store: the reference algorithm,
// polling the server, with a real client.
func runServer(store, kind, variant string, explicit bool, dsn, name string, timeout time.Duration, id int, startAt int64, events string,
	cfg lease.Config, command singletonCommand, stdout, stderr io.Writer) error {
	if explicit && variant != "reference" && variant != kind {
		return usagef("-store %s runs the reference over %s, not -variant %s", store, store, variant)
	}
	if dsn == "" {
		return usagef("-store %s needs -dsn (the server's address)", store)
	}
	if err := refuseInMemory(store, dsn); err != nil {
		return err
	}
	v, err := lease.LookupVariant(kind)
	if err != nil {
		return err
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	switch {
	case timeout == 0:
		timeout = min(cfg.RenewInterval/3, time.Second)
	case timeout < 0 || timeout >= cfg.RenewInterval:
		// A request may take the whole timeout, and a leader's shutdown
		// makes up to three (a release, a read, a release): past the renew
		// interval, a renewal outlasts its own interval and a SIGTERM waits
		// out timeouts (a probe: -timeout 10s -renew 1s took 20 s to exit
		// with the server stopped).
		return usagef("-timeout %v: want more than 0 and less than -renew (%v); 0 picks a third of -renew, at most 1s", timeout, cfg.RenewInterval)
	}
	// A SIGTERM or SIGINT while connecting (up to 5 s) ends run with
	// status 0, as at any other time: nothing is held yet (its default
	// action, status 143, is what a probe saw).
	sig, stop := signal.NotifyContext(context.Background(), stopSignals(false)...)
	s, err := openServerStore(sig, store, dsn, name, timeout, stderr)
	// A user the server lets read but not write (a Redis ACL without
	// EVALSHA, a PostgreSQL role with SELECT alone) watched for ever and
	// failed at each write, retrying (a probe): a release of a record no
	// process writes (holder -1) changes nothing and is refused the same
	// way, before anything is contended. (Under the same signal handling
	// as the connect.)
	var probe, readProbe error
	if err == nil && sig.Err() == nil {
		probe = s.Release(lease.Record{Holder: -1, Epoch: -1, Version: -1})
		// And a read: it names keys no release touches (Redis's and
		// etcd's incarnation key), and a user whose rights name the
		// lease's keys one by one, from before that key, was refused
		// every read with the release passed, and retried them for good
		// (a review).
		if !errors.Is(probe, fs.ErrPermission) {
			if _, rerr := s.Read(); errors.Is(rerr, fs.ErrPermission) {
				readProbe = rerr
			}
		}
	}
	// The probe writes nothing, so a Redis replica lets it through; ask
	// the server what it is, and whether it may evict the lease's keys.
	var replica bool
	var evict string
	if rs, ok := s.(*redisstore.Store); ok && err == nil && sig.Err() == nil {
		replica, evict = rs.Replica(sig), rs.EvictionWarning(sig)
	}
	signalled := sig.Err() != nil
	stop()
	closeStore := func() {
		if c, ok := s.(io.Closer); ok && err == nil {
			c.Close()
		}
	}
	if signalled {
		closeStore()
		fmt.Fprintf(stderr, "leaselab run: signalled while connecting to the %s server: nothing held, exiting\n", store)
		return nil
	}
	if err != nil {
		// An unreachable server, refused credentials, a bad address:
		// nothing was written anywhere.
		return usagef("-store %s: %v", store, err)
	}
	if errors.Is(probe, fs.ErrPermission) {
		closeStore()
		return usagef("-store %s: this user may not write the lease: %v", store, probe)
	}
	if readProbe != nil {
		closeStore()
		return usagef("-store %s: this user may not read the lease (every key of it: its incarnation's too): %v", store, readProbe)
	}
	if sqlstore.ReadOnly(probe) {
		// (A read-only transaction refuses even the probe's delete that
		// matches nothing; a probe's server retried its create for good.)
		closeStore()
		return usagef("-store %s: the server refuses every write (a read-only transaction: a hot standby, or default_transaction_read_only): %v", store, probe)
	}
	if replica {
		closeStore()
		return usagef("-store redis: %s is a replica: it refuses every write; point -dsn at its master", dsn)
	}
	if evict != "" {
		fmt.Fprintf(stderr, "leaselab: warning: %s\n", evict)
	}
	command.singleton = serverSingleton(store, dsn, name)
	return start(v, func(lease.Proc) lease.Store { return s }, name, id, startAt, events, false, true, cfg, command, stdout, stderr)
}

// start runs variant v as this process over the store mk makes, running
// command while it leads and, with events, reporting its history.
// refusedForGood reports whether the store error err of op ends run:
// a write refused (fs.ErrPermission) before the process has ever led, by
// a store whose start could not tell (refusals: a server store). Not a
// file store: a probe's chmod of the lock's directory for a second made a
// watcher that had never led exit 2, and nobody led once the permission
// came back.
func refusedForGood(refusals bool, op string, err error, hasLed bool) bool {
	return refusals && writeOps[op] && errors.Is(err, fs.ErrPermission) && !hasLed
}

// refusals: a refused write before the process has led ends it (a
// server store, whose start cannot tell a user who may read but not
// write; not the file stores, whose start checked the directory, so that
// a refusal later is a passing change of permissions, not a
// misconfiguration).
func start(v lease.Variant, mk func(lease.Proc) lease.Store, path string, id int, startAt int64, events string, shed, refusals bool,
	cfg lease.Config, command singletonCommand, stdout, stderr io.Writer) error {
	// A leader whose lock the kernel releases at its death sheds its
	// image's pages, so that it dies, and hands over, sooner.
	r := newRunner(command, stderr, shed && v.Claims.Handover == lease.KernelLock)
	// A closed log pipe (a reader gone: | head, a log shipper restarting)
	// must not kill a leader with SIGPIPE's default action, which leaves its
	// lease to expire and its command to the supervisor's SIGKILL: caught,
	// a write to it fails (EPIPE) and loses its line. Caught, not ignored:
	// an ignored signal stays ignored across exec, in the command. (A log
	// reader that stops reading stalls nothing either: lease's log writes
	// from a goroutine of its own.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	cfg.Callbacks = lease.Callbacks{OnStartedLeading: r.start, OnStoppedLeading: r.stop,
		OnError: func(op string, err error) {
			r.logf("%s: %v", op, err)
			// A store that refuses this user's writes before it has ever
			// led is misconfigured, not failing: it would refuse every
			// try (a review: a Redis user who may read and run scripts
			// but not write, which the start's probe cannot tell).
			if refusedForGood(refusals, op, err, r.hasLed()) {
				r.logf("the store refuses this user's writes: exiting; give it write permission and start it again")
				r.finish(2)
			}
		}}
	if startAt != 0 {
		time.Sleep(time.Duration(startAt - monoNow()))
	}
	// The runner learns each term's local deadline (OnLead) for the
	// command's supervisor. A variant that exits the process itself (all
	// but the reference) stops the command first and exits with run's
	// status (BeforeExit).
	// A crash point (torture -crash-after): checked here, so that a bad
	// one is refused before anything is written.
	crash := os.Getenv("LEASELAB_CRASH_AFTER")
	if crash != "" {
		if _, _, err := lease.ParseCrashPoint(crash); err != nil {
			return usagef("LEASELAB_CRASH_AFTER: %v", err)
		}
		// A test's crash point, in the environment of a production run
		// perhaps: said, not silent (a probe's run died of it, status 137).
		fmt.Fprintf(stderr, "leaselab: LEASELAB_CRASH_AFTER=%s: this process kills itself (SIGKILL) after that system call, as torture -crash-after asks\n", crash)
	}
	p := lease.NewOSProcOptions(lease.OSProcOptions{Out: stdout, Err: stderr, ID: id, BeforeExit: r.exiting, OnLead: r.lead, CrashAfter: crash, SelfStopped: r.selfStopped})
	if f, ok := p.(lease.LogFlusher); ok {
		defer f.FlushLog(time.Second) // the release's line, before run exits
	}
	r.mono = p.Mono
	if t, ok := p.(lease.TextLogger); ok {
		r.text = t
	}
	if events == "" {
		return elect(v, p, mk(p), path, cfg, r, nil)
	}
	f, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return usagef("-events: %v", err)
	}
	h := &history{w: f}
	h.emit("start %d", p.PID())
	hp := withHistory(p, h, r.exiting)
	return elect(v, hp, histStore{inner: mk(hp), h: h}, path, cfg, r, h)
}

// elect runs variant v as process p over s. The reference, over a file
// or a server, is lease.Run, whose context SIGTERM, SIGINT and SIGHUP (unless
// ignored at start: nohup) end, and the
// runner too when the command's own exit ends run (runner.finish): once
// it has stepped down (the command's whole tree dead) and released, it
// returns, and run exits with the runner's status (the command's, or 0),
// which the history's exit line records. Other variants run as the post's
// program, which exits the process itself (through runner.exiting too).
func elect(v lease.Variant, p lease.Proc, s lease.Store, path string, cfg lease.Config, r *runner, h *history) error {
	o := lease.RunOptions{Proc: p, Dir: filepath.Dir(path)}
	switch {
	case v.Name == "reference":
	case slices.Contains(slices.Collect(maps.Values(serverStores)), v.Name):
		o.Dir = "" // no directory to watch: the server's notices (lease.ChangeFeed), and a poll
	default:
		return v.Start(p, s, path, cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.setCancel(cancel)
	// SIGHUP too: a closed terminal, or a supervisor's hang-up, would
	// otherwise kill a leader with its default action, and its lease
	// would have to expire (stopSignals).
	ctx, stop := signal.NotifyContext(ctx, stopSignals(true)...)
	defer stop()
	// Over a server, a leader that released waits a moment for its
	// successor before it exits (departing).
	var dep *departing
	if o.Dir == "" {
		dep = newDeparting(s)
		s = dep
	}
	if err := lease.Run(ctx, s, cfg, o); err != nil {
		return err
	}
	if dep != nil {
		dep.awaitSuccessor(successorWait)
	}
	code := r.exiting(0)
	if h != nil {
		h.emit("exit %d", code)
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}

// writeOps are the store operations, as Callbacks.OnError names them,
// that write the lease.
var writeOps = map[string]bool{"create": true, "takeover": true, "renew": true, "release": true}

// successorWait bounds how long a leader that released its lease on a
// server keeps its connections open, waiting for its successor.
const successorWait = 100 * time.Millisecond

// departing is a server store as elect gives it to lease.Run: it counts
// the store's notices just before each release, and notes whether the
// release was made, so that once Run has returned the process can wait
// for its successor's create (awaitSuccessor) before it exits.
type departing struct {
	lease.Store
	feed     lease.ChangeFeed  // the store's notices (nil: none)
	hint     lease.ReleaseHint // which of them are releases (nil: no wait)
	token    uint64            // notices counted before the last release
	released bool              // the last release was made
}

// newDeparting wraps s, whose feed (if any) it finds as lease.Run does,
// through Unwrap.
func newDeparting(s lease.Store) *departing {
	d := &departing{Store: s}
	for s != nil {
		if f, ok := s.(lease.ChangeFeed); ok {
			d.feed = f
			d.hint, _ = f.(lease.ReleaseHint)
			break
		}
		u, ok := s.(interface{ Unwrap() lease.Store })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	return d
}

// Unwrap returns the store d wraps: lease.Run finds its notices through it.
func (d *departing) Unwrap() lease.Store { return d.Store }

// Release releases cur, having counted the notices so far.
func (d *departing) Release(cur lease.Record) error {
	if d.feed != nil {
		d.token, _ = d.feed.Changes()
	}
	err := d.Store.Release(cur)
	d.released = err == nil
	return err
}

// awaitSuccessor returns once the store's feed, counted from just before
// the last release, has had the release's own notice and then one that
// is not a release (its successor's create: after the release nothing
// else can come), or after at most wait; at once if no release was made,
// or the store's notices do not say which are releases. A store's
// notices come in the order of its writes (an etcd watch's revisions,
// PostgreSQL's commits, one Redis subscription), so a notice of the
// leader's own last renewal that comes late comes before its release's
// and ends nothing; the release's own notice may be missed by this loop
// when the create's comes at once after it, so two notices or more, the
// latest not a release, end the wait too (a late renewal's and the
// release's are one non-release and one release). Closing a connection
// costs the server work on its own CPUs, which a successor's create
// would wait for: PostgreSQL runs a backend process per connection, whose
// exit takes about 10 ms of CPU (README, "Where PostgreSQL's and etcd's
// tails come from"). SQLite's notices carry no release hint (and it has
// no server to spare): no wait.
func (d *departing) awaitSuccessor(wait time.Duration) {
	if !d.released || d.feed == nil || d.hint == nil {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	sawRelease := false
	for {
		n, next := d.feed.Changes()
		if n > d.token {
			if d.hint.Released(n - 1) {
				sawRelease = true // the latest: a release (its own)
			} else if sawRelease || n-d.token >= 2 {
				return
			}
		}
		select {
		case <-next:
		case <-t.C:
			return
		}
	}
}

// stopSignals are the signals on which run steps down, releases and
// exits: SIGTERM, SIGINT and, with hangup, SIGHUP, but not SIGINT or
// SIGHUP when run was started with it ignored (nohup ignores SIGHUP; a
// shell's "&" without job control ignores SIGINT, so that a Ctrl-C meant
// for the script spares its background jobs): Notify would take an
// ignored signal back, for run and, through the supervisor, for the
// command, which then keeps it ignored (superviseMain). Go's runtime keeps
// these two ignored when they were at start (signal.Ignored reports it);
// of every other signal it cannot tell.
func stopSignals(hangup bool) []os.Signal {
	sigs := []os.Signal{syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGINT) {
		sigs = append(sigs, syscall.SIGINT)
	}
	if hangup && !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}
