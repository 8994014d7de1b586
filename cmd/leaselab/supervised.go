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
// DETAIL", "stopped", once the command's whole tree is dead).
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
	s := &supervised{cmd: cmd, ctl: ctlW, reap: reap, done: make(chan struct{})}
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
		s.ctl.Close()
		s.ctl = nil
		s.mu.Unlock()
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

// send writes one control line, if the supervisor still listens.
func (s *supervised) send(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctl != nil {
		s.ctl.WriteString(line)
	}
}

func (s *supervised) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
