package main

// leaselab run -- CMD: a singleton runner whose command never outlives the
// leadership it was started under.
//
// The command is not run by leaselab run itself but by a supervisor: a
// second process of this same binary (superviseMain, in supervise.go),
// started for each term. The split is what makes every end of leadership
// stop the command, including the ends that run cannot act on:
//
//   - run SIGKILLed: the supervisor holds the read end of a pipe whose only
//     write end is run's. The kernel closes it as run dies, however it
//     dies, and the supervisor kills the command's whole tree at the EOF.
//     (PR_SET_PDEATHSIG was weighed and not used for this: it fires when
//     the thread that forked dies, not the process, and Go's threads come
//     and go; and it reaches only the direct child. The pipe is the
//     process's death, with no window between fork and prctl: a run that
//     died before the supervisor read the pipe leaves an EOF waiting.)
//   - the supervisor SIGKILLed: the command has SIGKILL as its
//     parent-death signal (PR_SET_PDEATHSIG), relative to the supervisor's
//     thread that forked it, which the supervisor keeps for its whole life
//     (runtime.LockOSThread). What the command started is run's to kill:
//     run sees the supervisor end without its last word, kills the
//     command's process group, and, being a child subreaper itself, kills
//     every process that the supervisor's death reparented to it
//     (supervised.cleanup), those that left the group included.
//   - run SIGSTOPped: a stopped process cannot stop its command, and the
//     command cannot be stopped by it. run tells the supervisor its local
//     deadline at every acquisition and renewal (Proc.Lead); the supervisor
//     kills the command when the deadline passes unextended, whether run is
//     stopped, slow or dead. The deadline passes before any watcher may
//     take over (lease.Config.SafeDeadline), so the command is dead before
//     a successor starts its own, unless the supervisor itself is delayed
//     past that margin: fencing (LEASELAB_EPOCH) covers what is left.
//   - the term's context ends (OnStartedLeading's: the local deadline, a
//     lost lease, or run's own end: SIGTERM, SIGINT, the command's exit):
//     run asks the supervisor to stop the command (SIGTERM, SIGKILL after
//     stopGrace, never later than the deadline), and OnStoppedLeading waits
//     until the whole tree is dead, so lease.Run releases the lease only
//     after that.
//   - process groups: the supervisor has a group of its own, and the
//     command another. A terminal's Ctrl-C (SIGINT to the foreground
//     group), a job's SIGTERM (kill %1) or a job-control stop (Ctrl-Z, or
//     SIGSTOP of the group) reaches run alone: run steps down in order as
//     above, the command getting its SIGTERM from the supervisor once run
//     has asked; or, stopped, run leaves the supervisor, which is not, to
//     kill the command at the deadline. (In run's group the supervisor
//     would have been stopped with run, or would have stopped the command
//     on the terminal's signal before run had stepped down.) A hang-up
//     (SIGHUP) ends the term in order as SIGTERM does, unless run was
//     started with it ignored (nohup), which leaves it ignored.
//   - descendants: the command runs in its own process group, and the
//     supervisor is a child subreaper (PR_SET_CHILD_SUBREAPER), so that a
//     descendant that leaves the group (setsid) and is orphaned is
//     reparented to the supervisor, not to init. Stopping kills the group
//     and every child the supervisor has, round after round, until it has
//     no child left: then nothing the command started is alive. A cgroup
//     would say the same with less code, but needs privileges (a writable
//     cgroup v2 hierarchy) that a cron job's user seldom has.
//   - run and its supervisor SIGKILLed at once: the command dies of its
//     parent-death signal, and what it started is inherited by init, with
//     no one left to kill it. Every process of the command carries the
//     lease's mark in its environment (singletonEnv), and the next
//     leader kills whatever carries it, and whatever descends from that,
//     before it starts its own command (killStale). On the flock store
//     the next leader leads within milliseconds of run's SIGKILL, while
//     the supervisor may still be killing the tree: killStale stops the
//     whole tree, that supervisor and its strays with it, before it
//     kills any of it, so that none is orphaned out of its sight.
//
// When the command exits on its own, run ends lease.Run's context (so it
// steps down and releases) and exits with the command's status (128+N for
// a signal N), or, with -restart, starts it again under the same term (at
// most once a second, and only while that term holds).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/sqlstore"
)

// stopGrace is how long a command may take to exit after SIGTERM when its
// leadership ends in order (run's SIGTERM, a lost lease), before SIGKILL;
// never past the term's local deadline.
const stopGrace = time.Second

// restartEvery is the shortest time between two starts of the command
// with -restart, so that a command that fails at once does not spin.
const restartEvery = time.Second

// execFailed is run's exit status when the command could not be started
// once leading (it could at start: resolveCommand), as the shell's.
const execFailed = 127

// resolveCommand finds the command's executable before anything is
// contended or written, so that a command that cannot start is refused at
// start (exit 2) rather than leading with nothing running.
func resolveCommand(command []string) (string, error) {
	if len(command) == 0 {
		return "", nil
	}
	if command[0] == "" {
		return "", usagef("-- needs a command")
	}
	path, err := exec.LookPath(command[0])
	if err != nil {
		return "", usagef("the command cannot be started: %v", err)
	}
	return path, nil
}

// singletonCommand is run's command: its argv, its executable resolved,
// -restart, and the lease it runs under (singletonID).
type singletonCommand struct {
	argv      []string
	path      string
	restart   bool
	singleton string
}

// singletonEnv names the variable that marks every process of a command
// run under a lease, with the lease's singletonID: what a new leader kills
// before it starts its own command (killStale).
const singletonEnv = "LEASELAB_SINGLETON"

// singletonID names a lease, in a form that shows nothing of it (a
// server's DSN may hold a password): a hash of the parts that place it.
// Two leases must never share one (killStale would kill the other's
// command); one lease spelt two ways may have two (its stale processes
// then survive, as before there was a mark).
func singletonID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

// fileSingleton is the singletonID of the lease kept in the file at path
// (kind: what else names it, the store's kind first), by what the file is, not how it is spelt: its directory's device and
// inode, and its name (a relative path, a symbolic link, another mount
// namespace's view of one directory: one lease; one path in two mount
// namespaces over two directories: two). "" if the directory cannot be
// looked at.
func fileSingleton(path string, kind ...string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(filepath.Dir(abs))
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return singletonID(append(kind, fmt.Sprint(st.Dev), fmt.Sprint(st.Ino), filepath.Base(abs))...)
}

// serverSingleton is the singletonID of the lease name on the server
// store's dsn: the DSN as seen from this network namespace, with the
// environment PostgreSQL's client completes it from; an SQLite database
// by its file (fileSingleton), and none for one in memory.
func serverSingleton(store, dsn, name string) string {
	if store == "sqlite" {
		path := sqlstore.SQLitePath(dsn)
		if path == "" {
			return "" // every process its own database (run refuses it)
		}
		return fileSingleton(path, "sqlite", name)
	}
	netns, _ := os.Readlink("/proc/self/ns/net") // "" outside Linux
	// (For PostgreSQL serverKey has the user, the options and the
	// search_path as pgx completes them: the table is unqualified, so
	// the user's search_path picks it: a review.)
	return singletonID(store, serverKey(store, dsn), name, netns)
}

// refuseInMemory refuses an SQLite dsn whose database is one process's
// own (sqlstore.SQLitePath): each runner over one had its own, and every
// one of them led (a probe).
func refuseInMemory(store, dsn string) error {
	if store == "sqlite" && sqlstore.SQLitePath(dsn) == "" {
		return usagef("-store sqlite -dsn %q: an in-memory or temporary database is one process's own, so every process would lead in its own: give the path of a database file every process opens", dsn)
	}
	return nil
}

// runner runs the command, through a supervisor, while this process leads.
type runner struct {
	command   []string // argv; command[0] as given
	path      string   // command[0] resolved
	restart   bool
	singleton string // the lease's singletonID ("": no command)
	stderr    io.Writer
	text      lease.TextLogger     // queues logf's lines (nil: written to stderr); set before anything runs
	shed      bool                 // shedImage on leading
	reap      bool                 // run is a child subreaper: a dead supervisor's orphans come to it (sweepStrays)
	mono      func() time.Duration // the Proc's clock, for Lead's deadlines

	mu       sync.Mutex
	cur      *supervised
	deadline int64              // the term's local deadline, CLOCK_MONOTONIC ns (0: none known)
	epoch    int64              // the term's epoch from Lead (0: none known)
	code     int                // run's exit status once the command's end decided it (-1: not decided)
	ending   bool               // run is ending: no command starts again, and code is final
	led      bool               // a term has started
	cancel   context.CancelFunc // ends lease.Run's context (nil: the variant exits the process on SIGTERM)
}

func newRunner(c singletonCommand, stderr io.Writer, shed bool) *runner {
	r := &runner{command: c.argv, path: c.path, restart: c.restart, singleton: c.singleton, stderr: stderr, shed: shed, code: -1}
	if len(c.argv) > 0 && wholeProcess {
		// What a supervisor killed with SIGKILL leaves (its command, the
		// command's descendants) is reparented to run, not to init, and
		// run kills it (supervised.cleanup). Only in leaselab itself: a
		// test binary's other children are not run's to kill.
		r.reap = setSubreaper()
		if !procIsOurs() {
			r.logf("%s: what a killed supervisor or an earlier leader's command leaves running cannot be found, and is not killed; nor are orphans' zombies reaped", procProblem())
		}
		if os.Getpid() == 1 {
			go reapOrphans()
		}
	}
	return r
}

// logf writes one of run's diagnostics to standard error: through the
// Proc's log queue once there is one (setLog), so that a full stderr pipe
// stalls neither the command's supervision nor the algorithm (OnError).
func (r *runner) logf(format string, a ...any) {
	line := fmt.Sprintf("leaselab run: "+format+"\n", a...)
	if r.text != nil {
		r.text.LogText(true, line)
		return
	}
	io.WriteString(r.stderr, line)
}

// hasLed reports whether a term of this process has started.
func (r *runner) hasLed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.led
}

// setCancel gives the runner the cancel of lease.Run's context: how the
// command's end ends run.
func (r *runner) setCancel(cancel context.CancelFunc) {
	r.mu.Lock()
	r.cancel = cancel
	r.mu.Unlock()
}

// lead is told of every term and renewal (lease.OSProcOptions.OnLead) and
// passes the new local deadline on to a running supervisor. The reference
// tells it before OnStartedLeading, so the supervisor starts with it.
func (r *runner) lead(epoch int64, deadline time.Duration) {
	var abs int64
	if deadline < 1<<61 && r.mono != nil { // (a flock leader's deadline never passes)
		abs = monoNow() + int64(deadline-r.mono())
	}
	r.mu.Lock()
	r.deadline, r.epoch = abs, epoch
	s := r.cur
	r.mu.Unlock()
	if s != nil {
		s.setDeadline(abs)
	}
}

// start is OnStartedLeading: it starts the command, with the term's epoch,
// and stops it when the term's context ends (the local deadline, a lost
// lease, run's own end). It does not wait for the command.
func (r *runner) start(ctx context.Context) {
	r.mu.Lock()
	r.led = true
	r.mu.Unlock()
	if r.shed {
		shedImage()
	}
	if len(r.command) == 0 {
		return
	}
	epoch := int64(0)
	if t, ok := lease.TermOf(ctx); ok {
		epoch = t.Epoch()
	}
	// What an earlier leader's command left running dies first: when run
	// and its supervisor were killed at once (kill -9 $(pidof leaselab)),
	// nobody killed the command's descendants, and the next leader's
	// command ran beside them for good (a probe: 11 of 11 tries). This
	// term holds the lease, so whatever carries its mark, and whatever
	// descends from that, is stale (an earlier term's supervisor may be
	// killing its command's tree still: killStale takes the whole). Off
	// the callback, which must not block (a process in uninterruptible
	// sleep takes a while to die); launch starts nothing once the term
	// has ended meanwhile.
	go func() {
		// (Not with a test's planted mistake "nodeadline-nokill": see
		// superviseMain.)
		if os.Getenv("LEASELAB_TEST_SUPERVISOR") != "nodeadline-nokill" {
			if n := killStale(ctx, r.singleton); n > 0 {
				r.logf("killed %d process(es) left running by an earlier leader's command", n)
			}
		}
		r.launch(ctx, epoch)
	}()
	go func() {
		<-ctx.Done() // leadership ended (OnStoppedLeading stops it too)
		r.stopTerm(ctx)
	}()
}

// launch starts a supervisor for the command under ctx's term, unless
// the term is over (ctx.Err reports a passed local deadline at once) or
// run is ending.
func (r *runner) launch(ctx context.Context, epoch int64) {
	r.mu.Lock()
	if r.ending || r.cur != nil || ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	if epoch == 0 {
		epoch = r.epoch
	}
	s, err := startSupervisor(r.path, r.command, r.singleton, epoch, r.deadline, r.reap)
	if err == nil {
		s.term = ctx
		r.cur = s
	}
	r.mu.Unlock()
	if err != nil {
		r.logf("cannot start the command's supervisor: %v", err)
		r.finish(execFailed)
		return
	}
	go r.watch(ctx, s, epoch, time.Now())
}

// watch waits for the supervisor to end, and decides what its end means.
func (r *runner) watch(ctx context.Context, s *supervised, epoch int64, started time.Time) {
	<-s.done
	r.mu.Lock()
	if r.cur != s || s.stopping() {
		r.mu.Unlock()
		return // stopped by us: stop waits for it
	}
	r.cur = nil
	r.mu.Unlock()
	switch s.outcome {
	case "exited":
		if r.restart && ctx.Err() == nil {
			r.logf("the command exited with status %d; starting it again (-restart)", s.code)
			r.relaunch(ctx, epoch, started)
			return
		}
		r.logf("the command exited with status %d: releasing the lease", s.code)
		r.finish(s.code)
	case "exec-error":
		r.logf("the command cannot be started: %s: releasing the lease", s.detail)
		r.finish(execFailed)
	case "deadline":
		// run was stopped or slow past its own deadline: the term is over
		// (the algorithm steps down when it gets to it), or a renewal
		// raced the supervisor's timer and the term still holds: the
		// command is started again under it, as -restart would. (It made
		// run release and exit 1: a probe saw two of three runners under
		// load leave for good, each race one runner less.)
		r.logf("the local deadline passed: the supervisor killed the command (%s)", s.detail)
		if ctx.Err() == nil {
			r.logf("the term still holds (a renewal raced the supervisor's timer): starting the command again")
			r.relaunch(ctx, epoch, started)
		}
	case "stopped":
		// Not by run (stop marks its own): the supervisor was sent a
		// signal and stopped the command in order (a probe's SIGTERM to
		// the supervisor alone read "ended unexpectedly (<nil>)").
		if ctx.Err() != nil { // after its term: run watches on (as below)
			r.logf("the command's supervisor stopped the command (%s) after its term", s.detail)
			return
		}
		r.logf("the command's supervisor stopped the command (%s): releasing the lease", s.detail)
		r.finish(1)
	default:
		if ctx.Err() != nil {
			// The term was over already (a new leader's killStale may
			// have killed the supervisor of a run frozen with it): run
			// killed what was left, and watches on (a review: it exited
			// 1 when this beat stopTerm).
			r.logf("the command's supervisor ended unexpectedly (%v) after its term; run killed what was left of the command", s.err)
			return
		}
		r.logf("the command's supervisor ended unexpectedly (%v); run killed what was left of the command: releasing the lease", s.err)
		r.finish(1)
	}
}

// relaunch starts the command again under ctx's term, no sooner than
// restartEvery after it last started, and only if the term still holds.
func (r *runner) relaunch(ctx context.Context, epoch int64, started time.Time) {
	t := time.NewTimer(time.Until(started.Add(restartEvery)))
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	r.launch(ctx, epoch) // only if the term still holds
}

// finish makes run release the lease and exit with code, once: it ends
// lease.Run's context, or, for a variant that exits the process itself
// (every one but the reference), sends run SIGTERM, on which the variant
// steps down, releases and exits through Proc.Exit (exiting then gives
// code).
func (r *runner) finish(code int) {
	r.mu.Lock()
	if r.ending {
		r.mu.Unlock()
		return
	}
	r.ending, r.code = true, code
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		return
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
}

// selfStopped reports whether run is ending on its own (finish: its
// command ended, or could not start), not on a signal.
func (r *runner) selfStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ending
}

// exiting is called once the election is over (lease.Run has returned,
// or a variant exits the process with code): it stops the command if it
// still runs, and returns the status run exits with: the command's own
// (or 127, or 1) when the command's end ended run (finish), else code.
// From then on the status is final and no command starts. It is
// OSProcOptions.BeforeExit too, for a variant that exits the process.
func (r *runner) exiting(code int) int {
	r.mu.Lock()
	r.ending = true
	r.mu.Unlock()
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.code >= 0 {
		return r.code
	}
	return code
}

// stop is OnStoppedLeading: it stops the command and returns once the
// command and everything it started are dead, so that a release that
// follows hands over a lease whose command is gone.
func (r *runner) stop() { r.stopIf(func(*supervised) bool { return true }) }

// stopTerm stops the command if it runs under term: a term's end must not
// stop the next term's command.
func (r *runner) stopTerm(term context.Context) {
	r.stopIf(func(s *supervised) bool { return s.term == term })
}

func (r *runner) stopIf(match func(*supervised) bool) {
	r.mu.Lock()
	s := r.cur
	r.mu.Unlock()
	if s == nil || !match(s) {
		return
	}
	s.stop()
	s.wait()
	r.mu.Lock()
	if r.cur == s {
		r.cur = nil
	}
	r.mu.Unlock()
}

// stop asks the supervisor to stop the command in order (once).
func (s *supervised) stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		s.poke()
	})
}

// superviseArg, as leaselab's first argument, makes it a supervisor
// (superviseMain): an internal entry point, not a command.
const superviseArg = "__supervise"
