package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
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
	explicitVariant := false
	fs.Visit(func(f *flag.Flag) { explicitVariant = explicitVariant || f.Name == "variant" })
	if kind, ok := serverStores[*store]; ok {
		return runServer(*store, kind, *variant, explicitVariant, *dsn, *name, *timeout, *id, *startAt, *events, cfg, command, stdout, stderr)
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
	v, err := lease.LookupVariant(*variant)
	if err != nil {
		return err
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	return start(v, func(p lease.Proc) lease.Store { return v.NewStore(p, *path) }, *path, *id, *startAt, *events, *shed, cfg, command, stdout, stderr)
}

// runServer is leaselab run over a server store: the reference algorithm,
// polling the server, with a real client.
func runServer(store, kind, variant string, explicit bool, dsn, name string, timeout time.Duration, id int, startAt int64, events string,
	cfg lease.Config, command []string, stdout, stderr io.Writer) error {
	if explicit && variant != "reference" && variant != kind {
		return usagef("-store %s runs the reference over %s, not -variant %s", store, store, variant)
	}
	if dsn == "" {
		return usagef("-store %s needs -dsn (the server's address)", store)
	}
	v, err := lease.LookupVariant(kind)
	if err != nil {
		return err
	}
	if err := v.CheckConfig(cfg); err != nil {
		return usagef("%v", err)
	}
	if timeout == 0 {
		timeout = min(cfg.RenewInterval/3, time.Second)
	}
	s, err := openServerStore(store, dsn, name, timeout)
	if err != nil {
		// An unreachable server, refused credentials, a bad address:
		// nothing was written anywhere.
		return usagef("-store %s: %v", store, err)
	}
	return start(v, func(lease.Proc) lease.Store { return s }, name, id, startAt, events, false, cfg, command, stdout, stderr)
}

// start runs variant v as this process over the store mk makes, running
// command while it leads and, with events, reporting its history.
func start(v lease.Variant, mk func(lease.Proc) lease.Store, path string, id int, startAt int64, events string, shed bool,
	cfg lease.Config, command []string, stdout, stderr io.Writer) error {
	// A leader whose lock the kernel releases at its death sheds its
	// image's pages, so that it dies, and hands over, sooner.
	r := &runner{command: command, stderr: stderr, shed: shed && v.Claims.Handover == lease.KernelLock}
	cfg.Callbacks = lease.Callbacks{OnStartedLeading: r.start, OnStoppedLeading: r.stop,
		OnError: func(op string, err error) { fmt.Fprintf(stderr, "leaselab run: %s: %v\n", op, err) }}
	if startAt != 0 {
		time.Sleep(time.Duration(startAt - monoNow()))
	}
	p := lease.NewOSProcOptions(lease.OSProcOptions{Out: stdout, Err: stderr, ID: id, BeforeExit: r.stop})
	if events == "" {
		return elect(v, p, mk(p), path, cfg, r, nil)
	}
	f, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return usagef("-events: %v", err)
	}
	h := &history{w: f}
	h.emit("start %d", p.PID())
	hp := withHistory(p, h)
	return elect(v, hp, histStore{inner: mk(hp), h: h}, path, cfg, r, h)
}

// elect runs variant v as process p over s. The reference, over a file
// or a server, is lease.Run, with SIGTERM and SIGINT ending its context:
// once it has stepped down and released it returns, the command is
// stopped and run exits 0. Other variants run as the post's program,
// which exits the process itself.
func elect(v lease.Variant, p lease.Proc, s lease.Store, path string, cfg lease.Config, r *runner, h *history) error {
	o := lease.RunOptions{Proc: p, Dir: filepath.Dir(path)}
	switch {
	case v.Name == "reference":
	case slices.Contains(slices.Collect(maps.Values(serverStores)), v.Name):
		cfg.Poll, o.Dir = true, "" // no directory to watch: poll the server
	default:
		return v.Start(p, s, path, cfg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := lease.Run(ctx, s, cfg, o); err != nil {
		return err
	}
	r.stop()
	if h != nil {
		h.emit("exit %d", 0)
	}
	return nil
}

// runner runs the command while this process leads.
type runner struct {
	command []string
	stderr  io.Writer
	shed    bool // shedImage on leading
	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
}

func (r *runner) start(ctx context.Context) {
	if r.shed {
		shedImage()
	}
	if len(r.command) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cmd := exec.Command(r.command[0], r.command[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stop its children too
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(r.stderr, "leaselab run: %v\n", err)
		return
	}
	done := make(chan struct{})
	r.cmd, r.done = cmd, done
	go func() { cmd.Wait(); close(done) }()
	go func() {
		<-ctx.Done() // leadership ended
		r.stop()
	}()
}

// stop ends the command: SIGTERM, then SIGKILL after a second.
func (r *runner) stop() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
