package servertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a server process started for a test.
type Server struct {
	// Name is the server's program: "redis-server", "etcd" or "postgres".
	Name string
	// Addr is the loopback host:port its clients connect to.
	Addr string
	// Port is Addr's port.
	Port int
	// Dir is the server's temporary directory: its data and its log.
	Dir string
	// Password is what clients authenticate with ("" when the server asks
	// for none).
	Password string

	bin   string // how it was launched, for Restart
	args  []string
	cred  *syscall.Credential
	ready func() error

	cmd      *exec.Cmd
	logPath  string
	logStart int64 // the log's length when the process started
	exited   chan struct{}
	waitErr  error
}

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 20 * time.Second

// PID is the server's process id (its process group's id too).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Kill sends SIGKILL to every process of the server, as a crash or the
// OOM killer would, and waits until they have exited. Clients see their
// connections reset and new connections refused. Killing a dead server
// does nothing.
func (s *Server) Kill() {
	if !s.Exited() {
		// Freeze the server first, so that it forks nothing while its
		// processes are collected, then kill every one of them.
		s.Pause()
		pid := s.cmd.Process.Pid
		ds := descendants(pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for _, d := range ds {
			_ = syscall.Kill(d, syscall.SIGKILL)
		}
		// A child that has not yet closed its copy of the listening
		// socket keeps the port open until it is gone.
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !allGone(ds); {
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		panic("servertest: " + s.Name + " did not exit 10 s after SIGKILL")
	}
}

// allGone reports whether every process of pids has exited (a zombie has).
func allGone(pids []int) bool {
	for _, p := range pids {
		if st := procState(p); st != "" && st != "Z" {
			return false
		}
	}
	return true
}

// Pause stops the server with SIGSTOP: connections stay open and nothing
// answers, as with a hung server or a network partition. It returns once
// every process of the server has stopped (children forked meanwhile
// included).
func (s *Server) Pause() {
	if s.Exited() {
		return
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		running := false
		for _, p := range append(descendants(pid), pid) {
			if st := procState(p); st != "T" && st != "Z" && st != "" {
				_ = syscall.Kill(p, syscall.SIGSTOP)
				running = true
			}
		}
		if !running {
			return
		}
	}
}

// procState is a process's state letter from /proc/PID/stat ("" if it is
// gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := statFields(b)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// statFields returns the fields of /proc/PID/stat after "pid (comm)":
// comm may hold spaces and parentheses.
func statFields(b []byte) []string {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// signal sends sig to the server's process group (Setpgid) and to every
// descendant of the server, wherever it is: PostgreSQL's children call
// setsid(2), leaving the group, and would otherwise go on serving (after
// SIGSTOP) or outlive the test (after SIGKILL).
func (s *Server) signal(sig syscall.Signal) {
	if s.Exited() {
		return
	}
	// List the descendants first: once the server itself is dead, they
	// are no longer its children. (Kill stops everything first, so the
	// list cannot grow before SIGKILL.)
	pid := s.cmd.Process.Pid
	ds := descendants(pid)
	_ = syscall.Kill(-pid, sig)
	for _, d := range ds {
		_ = syscall.Kill(d, sig)
	}
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		f := statFields(b) // state ppid ...
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// runLog is what the server's current process has written to its log
// (after a Restart, not what the killed one wrote).
func (s *Server) runLog() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || int64(len(b)) < s.logStart {
		return ""
	}
	return string(b[s.logStart:])
}

// Log returns the server's log (its standard output and error), for a
// failing test to show.
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	const max = 8 << 10
	if len(b) > max {
		b = append([]byte("...\n"), b[len(b)-max:]...)
	}
	return string(b)
}

// Unreachable returns a loopback address at which nothing listens: a port
// that was free a moment ago, for the tests of a client that cannot reach
// its server.
func Unreachable(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// FreePort returns a loopback TCP port that was free when it was asked
// for and that this test binary has not handed out before: the kernel
// gives a just-closed port to the next caller as readily as any other, so
// two tests starting servers side by side could otherwise be given the
// same one. Another process may still take it before the server binds it;
// the starters retry with another port when the server cannot bind, and
// accept a server only once the process they started holds the port.
func FreePort(t testing.TB) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("servertest: no free loopback port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !ports.given[port] {
			ports.given[port] = true
			return port
		}
	}
	t.Fatalf("servertest: the kernel offered only ports already handed out")
	return 0
}

// ports are the ports FreePort has handed out in this test binary.
var ports = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// listener returns the inode of the socket listening on 127.0.0.1:port
// (0 if none), from /proc/net/tcp.
func listener(port int) uint64 {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local rem st queues timer retransmits uid timeout inode
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == local && f[3] == "0A" { // 0A: LISTEN
			if ino, err := strconv.ParseUint(f[9], 10, 64); err == nil {
				return ino
			}
		}
	}
	return 0
}

// holds reports whether process pid or one of its descendants has the
// socket listening on 127.0.0.1:port open: whether the server that
// answers there is the one this test started.
func holds(pid, port int) bool {
	ino := listener(port)
	if ino == 0 {
		return false
	}
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	for _, p := range append([]int{pid}, descendants(pid)...) {
		dir := "/proc/" + strconv.Itoa(p) + "/fd"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == want {
				return true
			}
		}
	}
	return false
}

// InCI reports whether the tests run in CI (the environment variable CI is
// set), where a missing server is a failure rather than a skip.
func InCI() bool { return os.Getenv("CI") != "" }

// missing skips the test (outside CI) or fails it (in CI) because a server
// binary is not installed.
func missing(t testing.TB, what, pkg string) {
	t.Helper()
	msg := fmt.Sprintf("%s is not installed: install it with `apt-get install -y %s` (Debian/Ubuntu) to run this test", what, pkg)
	if InCI() {
		t.Fatalf("servertest: %s; CI is set, so a missing server fails the test", msg)
	}
	t.Skipf("servertest: %s (skipped; with CI set it would fail)", msg)
}

// lookBin finds a server binary in PATH, or skips or fails the test.
func lookBin(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name, pkg)
	}
	return p
}

// errBind is returned by a start attempt whose server could not bind its
// port (another process took it): the starter tries another port.
var errBind = errors.New("address already in use")

// launch starts one server process with its output in dir/name.log and
// waits until ready reports nil. It fails the test if the process exits
// or is not ready within startTimeout, except for errBind, which it
// returns.
func launch(t testing.TB, s *Server, bin string, args []string, cred *syscall.Credential, ready func() error) error {
	t.Helper()
	s.bin, s.args, s.cred, s.ready = bin, args, cred, ready
	s.logPath = filepath.Join(s.Dir, s.Name+".log")
	if err := s.start(os.O_TRUNC); err != nil {
		t.Fatalf("servertest: %v", err)
	}
	t.Cleanup(s.Kill)
	start := time.Now()
	err := s.awaitReady()
	if err == nil {
		t.Logf("servertest: %s (pid %d) ready at %s in %v", s.Name, s.PID(), s.Addr, time.Since(start).Round(time.Millisecond))
	} else if err != errBind {
		t.Fatal(err)
	}
	return err
}

// Restart starts a server that was killed (Kill) again, with the same
// program, arguments and directory (its data kept: an etcd member rejoins
// its cluster), its output appended to its log, and waits until it is
// ready. It may be called from any goroutine: it reports a failure, and
// does not fail the test.
func (s *Server) Restart() error {
	if !s.Exited() {
		return fmt.Errorf("servertest: %s (pid %d) restarted while it runs", s.Name, s.PID())
	}
	if err := s.start(os.O_APPEND); err != nil {
		return err
	}
	return s.awaitReady()
}

// MustRestart is Restart on the test's goroutine: a failure fails t.
func (s *Server) MustRestart(t testing.TB) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
}

// start starts the server's process, its log opened with flag.
func (s *Server) start(flag int) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|flag, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own copy
	s.logStart = 0
	if fi, err := logf.Stat(); err == nil {
		s.logStart = fi.Size()
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(s.cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %v", s.Name, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	return nil
}

// awaitReady waits until the server's ready check passes, and returns
// errBind if it exited for want of its port, another error if it exited
// or was not ready within startTimeout (it is killed then).
func (s *Server) awaitReady() error {
	start := time.Now()
	for {
		rerr := s.ready()
		if rerr == nil && !holds(s.PID(), s.Port) {
			// Something answered, but not our server: another
			// process's (or another test's) server has this port, and
			// ours is about to fail to bind it.
			rerr = fmt.Errorf("port %d is held by another process", s.Port)
		}
		if rerr == nil {
			return nil
		}
		if s.Exited() {
			log := s.Log()
			if strings.Contains(log, "already in use") {
				return errBind
			}
			return fmt.Errorf("servertest: %s exited before it was ready (%v); its log:\n%s", s.Name, s.waitErr, log)
		}
		if time.Since(start) > startTimeout {
			s.Kill()
			return fmt.Errorf("servertest: %s not ready after %v (last check: %v); its log:\n%s", s.Name, startTimeout, rerr, s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startOnFreePort runs attempt with fresh ports until the server binds.
func startOnFreePort(t testing.TB, attempt func() error) {
	t.Helper()
	for range 5 {
		if err := attempt(); !errors.Is(err, errBind) {
			return
		}
		t.Logf("servertest: port taken before the server bound it; trying another")
	}
	t.Fatalf("servertest: no free port after 5 attempts")
}

// MemDir returns a new directory in memory (under /dev/shm, a tmpfs, where
// the system has one that this process may write; else t.TempDir()),
// removed when the test ends. A server whose data lives there pays no
// disk flush for a commit: the tests and benchmarks measure the clients'
// protocol, not the disk's fsync, as PostgreSQL's fsync=off does for
// Postgres. A power loss is not what these servers are tested for.
func MemDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "leaselab-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
