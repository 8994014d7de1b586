package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// supervised is a running supervisor, seen from run.
type supervised struct {
	term     context.Context // the term it was started under
	cmd      *exec.Cmd
	reap     bool // run is a child subreaper: sweep its strays if the supervisor dies
	mu       sync.Mutex
	ctl      *os.File // the control pipe's write end: closing it kills the command
	stopOnce sync.Once
	stopped  bool
	next     int64         // the latest deadline not yet written (if hasNext)
	hasNext  bool          //
	wake     chan struct{} // (one slot) the writer has something to write
	done     chan struct{} // closed once the supervisor has exited and its command's tree is dead

	// Set before done is closed: the command's pid (its process group),
	// whether the supervisor reaped it, how it ended ("exited",
	// "exec-error", "deadline", "stopped", or "" if the supervisor died
	// without saying), the command's status, and what else it said.
	pid     int
	reaped  bool
	outcome string
	code    int
	detail  string
	err     error
}

// startSupervisor starts this binary as the supervisor of the command.
// fd 3 of the supervisor is the control pipe (run writes "deadline NS" and
// "stop" lines; its EOF means run is gone), fd 4 the status pipe (the
// supervisor writes "started PID", "reaped CODE" once the command itself
// has exited, then one of "exited CODE", "exec-error MSG", "deadline
// DETAIL", "stopped DETAIL", once the command's whole tree is dead).
//
// The supervisor runs in a process group of its own, so that a signal to
// run's group reaches run alone (see "process groups" above).
func startSupervisor(path string, argv []string, singleton string, epoch, deadline int64, reap bool) (*supervised, error) {
	self, err := selfExe()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Args = append([]string{"leaselab", superviseArg, strconv.FormatInt(deadline, 10), path}, argv...)
	cmd.Env = os.Environ()
	if singleton != "" {
		cmd.Env = append(cmd.Env, singletonEnv+"="+singleton)
	}
	if epoch > 0 {
		cmd.Env = append(cmd.Env, "LEASELAB_EPOCH="+strconv.FormatInt(epoch, 10))
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{ctlR, stW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startSpared(cmd)
	ctlR.Close()
	stW.Close()
	if err != nil {
		ctlW.Close()
		stR.Close()
		return nil, err
	}
	s := &supervised{cmd: cmd, ctl: ctlW, reap: reap, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.write()
	go func() {
		sc := bufio.NewScanner(stR)
		for sc.Scan() {
			word, rest, _ := strings.Cut(sc.Text(), " ")
			switch word {
			case "started":
				s.pid, _ = strconv.Atoi(rest)
			case "reaped":
				s.reaped = true
			case "exited":
				s.outcome = word
				s.code, _ = strconv.Atoi(rest)
			case "exec-error", "deadline", "stopped":
				s.outcome, s.detail = word, rest
			}
		}
		stR.Close()
		s.err = cmd.Wait()
		removeSupervisor(cmd.Process.Pid)
		s.mu.Lock()
		s.ctl.Close() // (a write blocked on it returns)
		s.ctl = nil
		s.mu.Unlock()
		s.poke() // the writer ends
		if s.outcome == "" {
			s.cleanup()
		}
		close(s.done)
	}()
	return s, nil
}

// cleanup kills what a supervisor that died without its last word (a
// SIGKILL, a crash) may have left of the command's tree. The command has
// SIGKILL as its parent-death signal (commandAttr), so it dies with the
// supervisor; cleanup also kills its process group, whose members outlive
// it otherwise (the group's id is still the command's: the command, not
// yet reaped, keeps it from reuse), and, with run a child subreaper, every
// child that reached run: the command and its orphaned descendants, those
// that left its group included (sweepStrays).
func (s *supervised) cleanup() {
	if s.pid > 0 && !s.reaped {
		syscall.Kill(-s.pid, syscall.SIGKILL)
	}
	if s.reap {
		sweepStrays()
	}
}

// supervisors are the live supervisors' pids: sweepStrays spares them.
// The lock is held from fork to record, so that a sweep never sees a
// supervisor it does not know.
var supervisors struct {
	sync.Mutex
	pids map[int]bool
}

// startSpared starts cmd, a supervisor, as one that sweepStrays spares.
func startSpared(cmd *exec.Cmd) error {
	supervisors.Lock()
	defer supervisors.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if supervisors.pids == nil {
		supervisors.pids = map[int]bool{}
	}
	supervisors.pids[cmd.Process.Pid] = true
	return nil
}

func removeSupervisor(pid int) {
	supervisors.Lock()
	defer supervisors.Unlock()
	delete(supervisors.pids, pid)
}

// strays lists run's children that are not live supervisors.
func strays() []int {
	supervisors.Lock()
	defer supervisors.Unlock()
	var out []int
	for _, pid := range childPIDs() {
		if !supervisors.pids[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// reapOrphans, for a run that is its PID namespace's init, reaps every
// child that is not a live supervisor once it is a zombie, each second
// for the process's life: the namespace's orphans come to PID 1, and no
// one else reaps them (a probe: 5 of 5 stayed zombies). A supervisor is
// recorded under the lock it holds from its fork on (startSpared), so it
// is never reaped here, and its exec.Cmd gets its status.
func reapOrphans() {
	for range time.Tick(time.Second) {
		supervisors.Lock()
		for _, pid := range childPIDs() {
			if state, _ := statOf(pid); state == 'Z' && !supervisors.pids[pid] {
				var ws syscall.WaitStatus
				syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			}
		}
		supervisors.Unlock()
	}
}

// sweepStrays SIGKILLs and reaps every child of run that is not a live
// supervisor: with run a child subreaper, those are what a dead
// supervisor left, reparented to run. It goes round until none is left
// (a killed process's own children arrive next), for at most 5 s.
func sweepStrays() {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		pids := strays()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

// setDeadline passes a new local deadline on to the supervisor. It never
// blocks: the writer (write) writes it.
func (s *supervised) setDeadline(abs int64) {
	s.mu.Lock()
	s.next, s.hasNext = abs, true
	s.mu.Unlock()
	s.poke()
}

func (s *supervised) poke() {
	select {
	case s.wake <- struct{}{}:
	default: // (a wake-up is pending already)
	}
}

// write writes the control lines, the latest deadline and then the stop,
// off the callers' paths, until the supervisor has exited. A write to a
// supervisor that does not read (stopped: SIGSTOP, a debugger) blocks once
// the pipe is full: written by the renewal that moved the deadline, with
// the mutex held, it blocked the renewals, and stop, which needed the
// mutex, and with it run's SIGTERM (a probe: a stopped supervisor made run
// deaf to SIGTERM for good, and after 64 KiB of deadlines, at 2,807
// renewals, its renewals hung). Deadlines not yet written are replaced by
// the next: only the latest matters.
func (s *supervised) write() {
	sentStop := false
	for range s.wake {
		s.mu.Lock()
		ctl, next, has, stop := s.ctl, s.next, s.hasNext, s.stopped
		s.hasNext = false
		s.mu.Unlock()
		if ctl == nil {
			return
		}
		if has {
			ctl.WriteString("deadline " + strconv.FormatInt(next, 10) + "\n")
		}
		if stop && !sentStop {
			ctl.WriteString("stop\n")
			sentStop = true
		}
	}
}

// wait waits until the supervisor has exited and its command's tree is
// dead. A stopped supervisor (SIGSTOP, a debugger) cannot stop its
// command, and run waited for it for good (a probe): it is continued at
// once, and one still stopped, or traced, after stopGrace and a second
// more is killed (its command dies with it: its parent-death signal, and
// cleanup's sweep of its group and strays). One that runs is waited for
// however long its command's tree takes to die.
func (s *supervised) wait() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var since time.Time // when it was first seen stopped
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if state, _ := statOf(s.cmd.Process.Pid); state != 'T' && state != 't' {
			since = time.Time{}
			continue
		}
		switch {
		case since.IsZero():
			since = time.Now()
			s.cmd.Process.Signal(syscall.SIGCONT)
		case time.Since(since) > stopGrace+time.Second:
			s.cmd.Process.Kill()
		}
	}
}

func (s *supervised) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
