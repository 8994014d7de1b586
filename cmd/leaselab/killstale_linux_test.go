package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The next leader's sweep (killStale) comes while the first leader's
// supervisor is still killing its command's tree: on the flock store the
// kernel frees the lock the instant run is SIGKILLed, and the successor
// leads within milliseconds. Built here at a chosen instant: the
// supervisor is stopped, the command (sh) killed, so that its children, a
// marked sleep and an unmarked setsid one (env -i: no LEASELAB_SINGLETON),
// are reparented to the supervisor (a child subreaper) and wait for it to
// kill them; then run is SIGKILLed. The sweep must take the whole tree:
// killing only what carries the mark (the supervisor, the marked sleep)
// orphaned the unmarked sleep, which ran beside every later leader's
// command for good (a probe: about 1 orphan in 30 SIGKILLs of the leader;
// here every time).
//
// The test process is a child subreaper meanwhile, so that the stopped
// supervisor is reparented to it when run dies: reparented to init, its
// process group (itself) would be orphaned with a stopped member, and the
// kernel would send it SIGHUP and SIGCONT, and it would go on killing the
// tree itself, racing the sweep.
func TestRunNextLeaderKillsStaleSupervisorsTree(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	if !setSubreaper() {
		t.Skip("cannot be a child subreaper")
	}
	var ours []int // the first command's tree: what of it came to the test is killed if left, and reaped
	t.Cleanup(func() {
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		for _, pid := range ours {
			if parentOf(pid) == os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, 0, nil)
			}
		}
	})
	dir := t.TempDir()
	lock := filepath.Join(dir, "leader.lock")
	flags := []string{"-store", "flock"}
	tok := commandToken(t)
	t.Cleanup(func() { killProcsWith(tok) })
	markerA := filepath.Join(dir, "a-running")
	a, outA := startRun(t, lock, flags, "sh", "-c", `setsid env -i sleep "$1" & touch "$2"; sleep "$1"; :`, "sh", tok, markerA)
	// The setsid sleep carries the mark until env -i execs it: wait for
	// that too (a loaded machine once met it between the two).
	poll(t, "the first leader's command and its two sleeps to run, one of them without the mark", func() bool {
		_, err := os.Stat(markerA)
		ps := procsWith(tok)
		return err == nil && len(ps) == 3 && unmarkedOf(ps) != 0
	})
	sup := supervisorOf(a.Process.Pid)
	if sup == 0 {
		t.Fatal("no supervisor among run's children")
	}
	var sh int
	for _, pid := range procsWith(tok) {
		if parentOf(pid) == sup {
			sh = pid
		}
	}
	if sh == 0 {
		t.Fatalf("no command among the supervisor's children (%v)", procsWith(tok))
	}
	ours = append([]int{sup, sh}, procsWith(tok)...)
	syscall.Kill(sup, syscall.SIGSTOP)
	poll(t, "the supervisor to stop", func() bool {
		state, _ := statOf(sup)
		return state == 'T'
	})
	syscall.Kill(sh, syscall.SIGKILL)
	poll(t, "the command's two sleeps to be reparented to its stopped supervisor", func() bool {
		n := 0
		for _, pid := range procsWith(tok) {
			if parentOf(pid) == sup {
				n++
			}
		}
		return n == 2
	})
	unmarked := unmarkedOf(procsWith(tok))
	if unmarked == 0 {
		t.Fatal("the setsid sleep carries the mark: env -i did not clear it")
	}

	tokB := commandToken(t) + "1"
	t.Cleanup(func() { killProcsWith(tokB) })
	markerB := filepath.Join(dir, "b-running")
	b, outB := startRun(t, lock, flags, "sh", "-c", `ps -eo args > "$2"; sleep "$1"`, "sh", tokB, markerB)
	poll(t, "the second runner to wait for the lock", func() bool {
		return strings.Contains(outB.String(), "waiting")
	})
	syscall.Kill(a.Process.Pid, syscall.SIGKILL)
	waitExit(t, a, "run after SIGKILL")
	var seen []byte
	poll(t, "the second runner's command to start", func() bool {
		var err error
		seen, err = os.ReadFile(markerB)
		return err == nil && bytes.Contains(seen, []byte(tokB))
	})
	if bytes.Contains(seen, []byte("sleep "+tok)) {
		t.Errorf("the second leader's command started while the first's sleep ran (ps):\n%s", slices.DeleteFunc(strings.Split(string(seen), "\n"), func(l string) bool { return !strings.Contains(l, "sleep "+tok) }))
	}
	if left := procsWith(tok); len(left) != 0 {
		t.Errorf("the first leader's processes %v still run (the unmarked setsid sleep: %d)", left, unmarked)
	}
	if syscall.Kill(sup, 0) == nil {
		if state, _ := statOf(sup); state != 'Z' {
			t.Errorf("the first leader's supervisor %d still runs (state %c)", sup, state)
		}
	}
	// The supervisor and both sleeps.
	if !strings.Contains(outB.String(), "killed 3 process(es) left running by an earlier leader's command") {
		t.Errorf("the second runner did not say it killed three processes:\n%s", outB)
	}
	if t.Failed() {
		t.Logf("first run:\n%s\nsecond run:\n%s", outA, outB)
	}
	b.Process.Signal(syscall.SIGTERM)
	waitExit(t, b, "the second run after SIGTERM")
}

// killStale on a stale command that forks as fast as it can, every child
// leaving its session and clearing its environment (setsid env -i sleep):
// the sweep stops the tree before it kills any of it, so no child forked
// meanwhile is orphaned out of its sight; none survives. A child of the
// stale command that carries another lease's mark is that lease's, and
// is not touched.
func TestKillStaleTakesAForkingTree(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	singleton := singletonID("test", t.Name(), commandToken(t))
	tok, tokOther := commandToken(t), commandToken(t)+"2"
	t.Cleanup(func() { killProcsWith(tok); killProcsWith(tokOther) })
	sh := exec.Command("sh", "-c", `env `+singletonEnv+`=other sleep "$2" & while :; do setsid env -i sleep "$1" & done`, "sh", tok, tokOther)
	sh.Env = append(os.Environ(), singletonEnv+"="+singleton)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	// (sh's own command line has both tokens, and so has its child until
	// it execs env.)
	others := func() []int {
		return slices.DeleteFunc(procsWith(tokOther), func(pid int) bool {
			ours, other := marks(pid, []byte(singletonEnv+"="+singleton))
			return ours || !other
		})
	}
	poll(t, "the stale command to fork 20 unmarked children", func() bool {
		return len(procsWith(tok)) > 20 && len(others()) == 1
	})
	began := time.Now()
	n := killStale(context.Background(), singleton)
	took := time.Since(began)
	left := procsWith(tok)
	t.Logf("killed %d in %v", n, took.Round(time.Millisecond))
	if n < 20 {
		t.Errorf("killed %d processes, want the command and its 20 or more children", n)
	}
	if len(left) != 0 {
		t.Errorf("%d of the stale command's unmarked children still run: %v", len(left), left)
	}
	if state, _ := statOf(sh.Process.Pid); state != 'Z' {
		t.Errorf("the stale command is in state %c, not dead", state)
	}
	other := others()
	if len(other) != 1 {
		t.Fatalf("the child with another lease's mark was killed")
	}
	if state, _ := statOf(other[0]); state != 'S' && state != 'R' {
		t.Errorf("the child with another lease's mark is in state %c", state)
	}
}

// A sweep whose term ends while it holds the stale tree stopped hands it
// back: every process it stopped is continued, none is killed, and
// killStale says it killed nothing (the next term sweeps again). Made
// deterministic by ending the term from inside the sweep, right after its
// first look has stopped the tree.
func TestKillStaleEndedTermContinuesTheTree(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	singleton := singletonID("test", t.Name(), commandToken(t))
	tok := commandToken(t)
	t.Cleanup(func() { killProcsWith(tok) })
	sh := exec.Command("sh", "-c", `sleep "$1" & sleep "$1" & wait`, "sh", tok)
	sh.Env = append(os.Environ(), singletonEnv+"="+singleton)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Process.Kill(); sh.Wait() })
	// (sh's own command line has the token too.)
	poll(t, "the stale command's two sleeps to run", func() bool { return len(procsWith(tok)) == 3 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := 0
	stopTreeHeld = func(held []*heldProc) {
		if ctx.Err() != nil {
			return
		}
		for _, h := range held {
			for deadline := time.Now().Add(2 * time.Second); !h.stopped() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if h.stopped() {
				stopped++
			}
		}
		cancel() // the term ends while the sweep holds the tree stopped
	}
	defer func() { stopTreeHeld = nil }()
	if n := killStale(ctx, singleton); n != 0 {
		t.Errorf("killStale killed %d processes after its term ended", n)
	}
	if stopped != 3 {
		t.Fatalf("the sweep held %d processes stopped, want sh and its two sleeps: the test shows nothing", stopped)
	}
	for _, pid := range procsWith(tok) {
		state, _ := statOf(pid)
		if state != 'S' && state != 'R' {
			t.Errorf("process %d is in state %c after the sweep handed it back, want running or sleeping", pid, state)
		}
	}
	if len(procsWith(tok)) != 3 {
		t.Errorf("the stale command and its sleeps: %v, want all three alive", procsWith(tok))
	}
}

// unmarkedOf returns a process of pids whose environment lacks the
// singleton's mark, or 0.
func unmarkedOf(pids []int) int {
	for _, pid := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && !bytes.Contains(b, []byte(singletonEnv+"=")) {
			return pid
		}
	}
	return 0
}

// run and its supervisor SIGKILLed at once orphan what the command
// started to init, where only the lease's mark finds it. A process that
// sets its title (Perl's $0 here, setproctitle in nginx, PostgreSQL,
// Redis) overwrites the memory /proc/PID/environ shows, without clearing
// its environment, and env -i clears it: both lost the mark, and ran
// beside every later leader's command for good (a probe, 2026-12-07: a
// Perl worker that set $0). The limit mark (limitMark) survives both.
func TestRunBothKilledNextLeaderKillsUnmarkedOrphans(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("no perl")
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, "leader.lock")
	flags := []string{"-lease", "2s", "-renew", "500ms", "-watch", "500ms"}
	tok := commandToken(t)
	t.Cleanup(func() { killProcsWith(tok) })
	workerPID := filepath.Join(dir, "worker.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(workerPID); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 1 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// A Perl worker that leaves the group and sets its title (its parent
	// exits at once, as a daemon's does: the supervisor, a subreaper, is
	// its parent), and a setsid sleep with an empty environment: both
	// orphaned to init once run and its supervisor are dead (sh, the
	// command, dies with the latter).
	worker := `use POSIX; if (!fork) { POSIX::setsid(); open(my $f, ">", $ARGV[0]) or die; print $f $$; close $f; $0 = "leaselab-test-worker"; sleep 1000; exit } exit 0`
	a, outA := startRun(t, lock, flags, "sh", "-c", `"$3" -e "$4" "$2" & setsid env -i sleep "$1" & sleep "$1"`, "sh", tok, workerPID, perl, worker)
	var pid int
	poll(t, "the worker to set its title and the sleeps to run", func() bool {
		b, err := os.ReadFile(workerPID)
		if err != nil || len(b) == 0 {
			return false
		}
		fmt.Sscan(string(b), &pid)
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return bytes.HasPrefix(cmdline, []byte("leaselab-test-worker")) && len(procsWith(tok)) >= 3
	})
	if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); bytes.Contains(env, []byte(singletonEnv)) {
		t.Fatalf("the worker's environment still shows the mark in /proc: the test builds nothing")
	}
	sup := supervisorOf(a.Process.Pid)
	if sup == 0 {
		t.Fatal("no supervisor among run's children")
	}
	killBoth(t, a, sup)
	markerB := filepath.Join(dir, "b-running")
	b, outB := startRun(t, lock, flags, "sh", "-c", `touch "$1"; sleep 1000`, "sh", markerB)
	poll(t, "the second runner's command to start", func() bool {
		_, err := os.Stat(markerB)
		return err == nil
	})
	if st, ok := procStatOf(pid); ok && st.state != 'Z' {
		t.Errorf("the first leader's titled worker %d runs beside the second leader's command", pid)
	}
	if left := procsWith(tok); len(left) != 0 {
		t.Errorf("the first leader's processes %v still run (the env -i sleep among them)", left)
	}
	if t.Failed() {
		t.Logf("first run:\n%s\nsecond run:\n%s", outA, outB)
	}
	b.Process.Signal(syscall.SIGTERM)
	waitExit(t, b, "the second run after SIGTERM")
}
