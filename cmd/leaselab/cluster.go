package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// A cluster is a set of real leader-election processes contending for one
// lock file, started, signalled and recorded by leaselab torture. Every
// process's history (its own account of its roles, terms, log lines and
// store operations, stamped with CLOCK_MONOTONIC) and every signal the
// harness sends go into one trace, on true time since the cluster's origin,
// for the checks the simulator's runs get.
type cluster struct {
	bin     string // the leaselab binary
	exec    string // -exec: a command line with {lock}, instead of leaselab run
	variant string // for leaselab run, and to judge the trace by
	cfg     lease.Config
	dir     string
	lock    string
	extra   []string // more flags for leaselab run
	remote  bool     // the store is a server across the network (trace.Run.Remote)
	origin  int64    // CLOCK_MONOTONIC at true time 0
	// command, when set, is the command leaselab run process id runs
	// while it leads (torture -singleton).
	command func(id int) []string
	// crashAfter, when set, is the crash point of the first process
	// started (torture -crash-after: LEASELAB_CRASH_AFTER).
	crashAfter string

	mu     sync.Mutex
	kids   []*child
	events []trace.Event // the harness's own: faults and the deaths it caused
	paths  []string      // their descriptions
	nextID int
	// onRole, when set, is told of every role a process reports and of
	// its exit (as RoleStarting), as the events arrive.
	onRole func(k *child, r lease.Role, t int64)
}

// A child is one real process of a cluster.
type child struct {
	idx, id int
	cmd     *exec.Cmd
	start   int64
	stopped bool
	dead    bool // known dead, or sent SIGTERM and since exited
	killed  bool // by the harness's SIGKILL
	termed  bool // sent SIGTERM
	// termT is when its SIGTERM could first act: sent to it running, or
	// at the SIGCONT after it (0: not yet).
	termT  int64
	leader bool
	hist   procHistory
	waitT  int64
	code   int
	done   chan struct{} // closed when its history has been read and it has been waited for
}

func newCluster(bin, execCmd, variant string, cfg lease.Config, dir string) *cluster {
	return &cluster{bin: bin, exec: execCmd, variant: variant, cfg: cfg, dir: dir,
		lock: filepath.Join(dir, "leader.lock"), origin: monoNow(), nextID: 1001}
}

func (c *cluster) now() int64 { return monoNow() - c.origin }

// spawn starts one more process. startAt, if not zero, is the
// CLOCK_MONOTONIC instant at which it begins contending (trials start
// every process at once).
func (c *cluster) spawn(startAt int64) (*child, error) {
	c.mu.Lock()
	id := c.nextID
	c.nextID++
	c.mu.Unlock()
	// Appending: with -exec its standard output is copied here too, by
	// another descriptor (a shared offset would overwrite one with the
	// other).
	logf, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("proc-%d.log", id)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	var cmd *exec.Cmd
	var hr, hw *os.File
	if c.exec == "" {
		hr, hw, err = os.Pipe()
		if err != nil {
			return nil, err
		}
		args := []string{"run", "-variant", c.variant, "-id", strconv.Itoa(id),
			"-lease", c.cfg.LeaseDuration.String(), "-renew", c.cfg.RenewInterval.String(),
			"-watch", c.cfg.WatchInterval.String(), "-events", "/dev/fd/3"}
		if len(c.extra) == 0 {
			args = append(args, "-path", c.lock) // a file store's (a server store's flags refuse it)
		}
		if startAt != 0 {
			args = append(args, "-start-at", strconv.FormatInt(startAt, 10))
		}
		args = append(args, c.extra...)
		if c.command != nil {
			args = append(append(args, "--"), c.command(id)...)
		}
		cmd = exec.Command(c.bin, args...)
		if c.crashAfter != "" && id == 1001 {
			cmd.Env = append(os.Environ(), "LEASELAB_CRASH_AFTER="+c.crashAfter)
		}
		cmd.ExtraFiles = []*os.File{hw}
		cmd.Stdout, cmd.Stderr = logf, logf
		// Its own process group: in the harness's, a member stopped when
		// the shell that started the harness exits is in a process group
		// orphaned with a stopped member, which the kernel sends SIGHUP
		// and SIGCONT, and run takes a SIGHUP for a shutdown (a probe's
		// torture run blamed the member's exit on no-own-exit). With the
		// parent-death signal, as run's commands, it dies with the
		// harness instead of a Ctrl-C's group signal.
		cmd.SysProcAttr = commandAttr()
	} else {
		line := strings.ReplaceAll(c.exec, "{lock}", shellQuote(c.lock))
		if startAt != 0 {
			// Held stopped before the program starts, and continued with
			// the others at startAt (releaseExec): the same instant for
			// every process, as leaselab's own wait for -start-at.
			line = "kill -STOP $$; " + line
		}
		cmd = exec.Command("sh", "-c", line)
		// Its own process group, signalled as a whole: the shell and
		// whatever it runs.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stderr = logf
		hr, hw, err = os.Pipe() // its standard output, read for the post's log lines
		if err != nil {
			return nil, err
		}
		cmd.Stdout = hw
	}
	if err := cmd.Start(); err != nil {
		hr.Close()
		hw.Close()
		return nil, err
	}
	hw.Close()
	c.mu.Lock()
	k := &child{idx: len(c.kids), id: id, cmd: cmd, start: c.now(), done: make(chan struct{})}
	c.kids = append(c.kids, k)
	c.mu.Unlock()
	// Its end is its exit, not its output's end: a descendant that keeps
	// the descriptor (a daemon an -exec program starts, setsid and all)
	// holds the output open for as long as it lives, and the harness took
	// the program for alive, and leading, until then (a probe: a SIGTERMed
	// leader that had exited counted as leading beside its successor, and
	// torture waited for the daemon to end).
	out := &exitReader{f: hr}
	parsed := make(chan procHistory, 1)
	go func() {
		onEvent := func(e trace.Event) { c.observe(k, e) }
		if c.exec == "" {
			parsed <- parseHistory(out, c.origin, k.idx, onEvent)
		} else {
			parsed <- parseLogLines(io.TeeReader(out, appendFile(filepath.Join(c.dir, fmt.Sprintf("proc-%d.log", id)))), c, k.idx, onEvent)
		}
	}()
	go func() {
		err := cmd.Wait()
		exitT := c.now()
		out.exit()
		hist := <-parsed
		hr.Close()
		// What it wrote before its exit and was read after it was
		// written before it: it is stamped no later than the exit.
		for i := range hist.events {
			hist.events[i].T = min(hist.events[i].T, exitT)
		}
		c.mu.Lock()
		k.hist = hist
		k.waitT, k.dead, k.leader = exitT, true, false
		k.code = cmd.ProcessState.ExitCode()
		if err != nil && k.code < 0 {
			k.code = -9
		}
		c.mu.Unlock()
		close(k.done)
	}()
	return k, nil
}

// drainGrace is how long a read of an exited process's output waits for
// more: what the process wrote before its exit is in the pipe already, and
// what comes later is a descendant's. drainMax ends the reading, that long
// after the exit, even while a descendant writes on.
const (
	drainGrace = 200 * time.Millisecond
	drainMax   = 2 * time.Second
)

// exitReader reads a process's output until the process has exited
// (exit) and the output has had nothing more for drainGrace, or until
// drainMax after the exit: then io.EOF, whoever else still holds the
// output open.
type exitReader struct {
	f     *os.File
	end   atomic.Int64 // when the reading ends (UnixNano; 0: not exited)
	woken bool         // a read was cut short by exit's wake
}

func (r *exitReader) Read(p []byte) (int, error) {
	for {
		if end := r.end.Load(); end != 0 {
			left := time.Duration(end - time.Now().UnixNano())
			if left <= 0 {
				return 0, io.EOF
			}
			r.f.SetReadDeadline(time.Now().Add(min(drainGrace, left)))
		}
		n, err := r.f.Read(p)
		switch {
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return n, err
		case !r.woken:
			r.woken = true // exit's wake (or the first drainGrace: one more)
		case !r.pending():
			return n, io.EOF
		}
		// (Bytes waiting at a deadline: the reader was late, not the
		// output. They are the process's own, written before its exit.)
	}
}

// pending reports whether the output has bytes waiting.
func (r *exitReader) pending() bool {
	c, err := r.f.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	c.Control(func(fd uintptr) { n = bytesWaiting(int(fd)) })
	return n > 0
}

// exit says the process has exited: a read waiting on its empty output
// returns, and the reads after it wait at most drainGrace, until drainMax.
func (r *exitReader) exit() {
	r.end.Store(time.Now().Add(drainMax).UnixNano())
	r.f.SetReadDeadline(time.Now())
}

// appendFile opens name for appending, or returns a writer that discards.
func appendFile(name string) io.Writer {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return io.Discard
	}
	return f
}

// observe follows a process's reported role as its events arrive.
func (c *cluster) observe(k *child, e trace.Event) {
	c.mu.Lock()
	role := lease.RoleStarting
	switch e.Kind {
	case trace.EvRole:
		k.leader = e.Role == lease.RoleLeader
		role = e.Role
	case trace.EvExit:
		k.leader = false
	default:
		c.mu.Unlock()
		return
	}
	f := c.onRole
	c.mu.Unlock()
	if f != nil {
		f(k, role, e.T)
	}
}

// leader returns the process that last reported itself leader and is
// not known dead, if any.
func (c *cluster) leader() *child {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kids {
		if k.leader && !k.dead && !k.killed {
			return k
		}
	}
	return nil
}

// lastExit is the instant (monoNow's clock) the last process known dead
// exited, or since if none did later.
func (c *cluster) lastExit(since int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kids {
		if k.dead && k.waitT > 0 {
			since = max(since, c.origin+k.waitT)
		}
	}
	return since
}

// alive returns the processes not known dead or sent SIGKILL.
func (c *cluster) alive() []*child {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*child
	for _, k := range c.kids {
		if !k.dead && !k.killed {
			out = append(out, k)
		}
	}
	return out
}

// signal sends sig to k and records it as a fault at the instant the
// kill(2) returned: from then on the kernel has it. It returns that
// instant, and false if the process had already exited.
func (c *cluster) signal(k *child, kind trace.FaultKind, dur time.Duration) (int64, bool) {
	sig := map[trace.FaultKind]syscall.Signal{trace.Kill: syscall.SIGKILL, trace.Term: syscall.SIGTERM,
		trace.Stop: syscall.SIGSTOP, trace.Cont: syscall.SIGCONT}[kind]
	// The instant before the signal is sent: nothing it causes can come
	// earlier. (Taken after kill(2), a harness goroutine descheduled
	// between the two stamped it after the victim's step-down and its
	// successor's first leader line, read meanwhile by other goroutines:
	// failover measured that successor as an earlier term's and counted
	// the SIGTERM missed: TestFailoverMeasures under load.)
	t := c.now()
	err := c.kill(k, sig)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return t, false // it had already exited
	}
	desc := fmt.Sprintf("%s (pid %d)", kind, k.id)
	if kind == trace.Stop {
		desc = fmt.Sprintf("stop for %v (pid %d)", dur, k.id)
	}
	c.events = append(c.events, trace.Event{T: t, Proc: int16(k.idx), Kind: trace.EvFault, N: int64(kind), A: int64(dur)})
	c.paths = append(c.paths, desc)
	switch kind {
	case trace.Kill:
		k.killed, k.leader = true, false
		c.events = append(c.events, withT(trace.Exit(int16(k.idx), trace.ExitKilled), t))
		c.paths = append(c.paths, "")
	case trace.Term:
		k.termed = true
		if !k.stopped && k.termT == 0 {
			k.termT = t
		}
	case trace.Stop:
		k.stopped = true
	case trace.Cont:
		k.stopped = false
		if k.termed && k.termT == 0 {
			k.termT = t
		}
	}
	return t, true
}

// releaseExec continues, at CLOCK_MONOTONIC instant at, every -exec
// process held stopped by spawn(startAt): it first waits until each has
// stopped itself or exited (up to a minute), so that no SIGCONT comes
// before its SIGSTOP, which would leave it stopped for good. (It waited
// 5 s for them all: a machine loaded by other tests' processes once ran
// no program of a trial.)
func (c *cluster) releaseExec(at int64) {
	deadline := time.Now().Add(time.Minute)
	for _, k := range c.alive() {
		for time.Now().Before(deadline) && !stoppedState(k.cmd.Process.Pid) && !c.exited(k) {
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(time.Duration(at - monoNow()))
	for _, k := range c.alive() {
		syscall.Kill(-k.cmd.Process.Pid, syscall.SIGCONT)
	}
}

// exited reports whether k has exited or been killed.
func (c *cluster) exited(k *child) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return k.dead || k.killed
}

// stoppedState reports whether process pid is stopped (state T in
// /proc/PID/stat).
func stoppedState(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// stall stops every live process at once, as a loaded machine whose
// virtual CPUs do not run does (the simulator's Stall), recorded as one
// machine-wide stretch of dur; it returns those it stopped, for unstall.
// A process stopped by its own SIGSTOP is left as it is.
func (c *cluster) stall(dur time.Duration) []*child {
	t := c.now()
	var stopped []*child
	for _, k := range c.alive() {
		if !k.stopped && c.kill(k, syscall.SIGSTOP) == nil {
			stopped = append(stopped, k)
		}
	}
	c.mu.Lock()
	c.events = append(c.events, trace.Event{T: t, Proc: -1, Kind: trace.EvFault, N: int64(trace.Stall), A: int64(dur)})
	c.paths = append(c.paths, fmt.Sprintf("stall for %v", dur))
	c.mu.Unlock()
	return stopped
}

// unstall continues the processes a stall stopped, but those stopped by a
// SIGSTOP of their own meanwhile.
func (c *cluster) unstall(ks []*child) {
	for _, k := range ks {
		c.mu.Lock()
		own := k.stopped
		c.mu.Unlock()
		if !own {
			c.kill(k, syscall.SIGCONT)
		}
	}
}

// kill sends sig to k: to its process group when it runs a shell command.
func (c *cluster) kill(k *child, sig syscall.Signal) error {
	if c.exec != "" {
		return syscall.Kill(-k.cmd.Process.Pid, sig)
	}
	return k.cmd.Process.Signal(sig)
}

// shutdown kills every process, waits for them all and returns the true
// time at which the run ended: the instant before the first of those
// kills, so nothing they cause is part of the run.
func (c *cluster) shutdown() time.Duration {
	end := c.now()
	c.mu.Lock()
	kids := append([]*child(nil), c.kids...)
	c.mu.Unlock()
	for _, k := range kids {
		c.kill(k, syscall.SIGKILL)
	}
	for _, k := range kids {
		<-k.done
	}
	return time.Duration(end)
}

// trace merges the processes' histories and the harness's events into one
// trace, cut at end.
func (c *cluster) trace(end time.Duration) *trace.Trace {
	v, _ := lease.LookupVariant(c.variant)
	tr := trace.NewRecorded(trace.Run{Variant: c.variant, Lease: c.cfg, LockPath: c.lock, Server: v.Claims.Handover == lease.ServerExpiry, Remote: c.remote})
	if c.command != nil {
		tr.Run.StopGrace = stopGrace // a SIGTERMed leader stops its command before it releases
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	named := map[int]bool{}
	for _, k := range c.kids {
		pid := k.id
		if k.hist.pid > 0 {
			pid = k.hist.pid // a program run by -exec, by the pid it printed
		}
		// Programs in PID namespaces of their own print one pid, each its
		// namespace's 1: told apart by their index ("1#2"), as the
		// simulator's processes of one PID are ("processes 1 and 1 both
		// lead", a probe said).
		tr.Run.SharedPIDs = tr.Run.SharedPIDs || named[pid]
		named[pid] = true
		tr.AddProc(pid, time.Duration(k.start))
	}
	add := func(e trace.Event, path string) {
		if e.T <= int64(end) {
			tr.Add(e, path)
		}
	}
	for i, e := range c.events {
		add(e, c.paths[i])
	}
	for _, k := range c.kids {
		for i, e := range k.hist.events {
			if e.Kind == trace.EvStoreCall || e.Kind == trace.EvStore {
				e.Act = tr.Act(k.idx, fmt.Sprintf("op%d", e.Act))
			}
			add(e, k.hist.texts[i])
		}
		// A process that ended on its own without saying so (an error
		// exit, a program run with -exec) ends when it was waited for.
		if !k.hist.exited && !k.killed && k.waitT > 0 {
			add(withT(trace.Exit(int16(k.idx), int64(k.code)), k.waitT), "")
		}
	}
	tr.Finish(end)
	return tr
}

// parseLogLines follows a program that prints the post's log lines (run
// with -exec): every line is in the trace as the program printed it,
// stamped when the harness read it; each that says the process now leads,
// or no longer does, is also a role event; the first "Process started
// with id: N" or "[Process: N]" names the process by the program's own
// pid N.
func parseLogLines(r io.Reader, c *cluster, proc int, onEvent func(trace.Event)) procHistory {
	ph := procHistory{texts: map[int]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLogLine)
	sc.Split(scanLogLines)
	// Read to the end whatever happens, so that the program never blocks
	// on a full pipe that nobody reads.
	defer io.Copy(io.Discard, r)
	for sc.Scan() {
		line := sc.Text()
		t := c.now()
		ph.texts[len(ph.events)] = line
		ph.events = append(ph.events, trace.Event{T: t, Proc: int16(proc), Kind: trace.EvLog, Op: trace.OpLog, Msg: lease.MsgRaw})
		for _, tag := range []string{"Process started with id:", "[Process:"} {
			if _, rest, ok := strings.Cut(line, tag); ok && ph.pid == 0 {
				if f := strings.Fields(strings.ReplaceAll(rest, "]", " ")); len(f) > 0 {
					if pid, err := strconv.Atoi(f[0]); err == nil && pid > 0 {
						ph.pid = pid
					}
				}
			}
		}
		var role lease.Role
		switch {
		case strings.Contains(line, "[LEADER] Acquired"), strings.Contains(line, "Takeover successful"),
			strings.Contains(line, "I AM THE LEADER"):
			role = lease.RoleLeader
		case strings.Contains(line, "stepping down"):
			// Not "Received shutdown signal": the post's program prints it
			// and goes on renewing until its exit, as leaselab's seed,
			// which reports no step-down there, does. A SIGTERMed leader
			// leads until its exit on both paths.
			role = lease.RoleWatcher
		default:
			continue
		}
		e := trace.Event{T: t, Proc: int16(proc), Kind: trace.EvRole, Role: role}
		ph.events = append(ph.events, e)
		onEvent(e)
	}
	return ph
}

// maxLogLine is the longest line of an -exec program's output taken
// whole: a longer one is taken in pieces of this size, each a line.
const maxLogLine = 64 << 10

// scanLogLines is bufio.ScanLines for lines of any length: one longer
// than maxLogLine comes in pieces. (A bufio.Scanner stops at a line longer
// than its buffer, and the harness read nothing more: a probe's program
// that printed one line of 70,000 bytes, then led, was taken for one that
// never led, no-wedge, while the pipe nobody read filled up.)
func scanLogLines(data []byte, atEOF bool) (int, []byte, error) {
	n, line, err := bufio.ScanLines(data, atEOF)
	if n == 0 && err == nil && len(data) >= maxLogLine {
		return maxLogLine, data[:maxLogLine], nil
	}
	return n, line, err
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
