package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// selfExe is this binary, for the supervisor: /proc/self/exe runs the very
// file this process runs, even if its path was replaced or removed since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// setSubreaper makes this process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER): a descendant whose parent dies is reparented
// to it rather than to init, so that no descendant escapes its sweep. It
// reports whether the kernel agreed.
func setSubreaper() bool {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
}

// commandAttr starts the command in a process group of its own, with
// SIGKILL as its parent-death signal: should the supervisor itself be
// killed, the command dies with it. (The parent is the thread that forked,
// which superviseMain keeps for the process's life. The command's own
// descendants, which a killed supervisor cannot sweep, are run's to kill:
// supervised.cleanup.)
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procIsOurs reports whether /proc shows this process's PID namespace:
// /proc/self names this process by its own PID. In a PID namespace that
// kept its parent's /proc (unshare -p without --mount-proc, a container
// given the host's /proc), /proc lists the parent namespace's PIDs, and a
// PID read there names another process here (a probe: run's sweep after
// its supervisor's death listed host PID 2's children, the kernel's
// threads, and SIGKILLed their numbers in its namespace, run itself
// among them). Then nothing is swept and no stale command is looked for.
var procIsOurs = sync.OnceValue(func() bool {
	s, err := os.Readlink("/proc/self")
	return err == nil && s == strconv.Itoa(os.Getpid())
})

// procProblem says why procIsOurs is false: /proc cannot be read, or it
// is another PID namespace's.
func procProblem() string {
	s, err := os.Readlink("/proc/self")
	if err != nil {
		return fmt.Sprintf("/proc cannot be read (%v)", err)
	}
	return fmt.Sprintf("/proc shows another PID namespace's processes (/proc/self is %s, this process %d here: mount /proc in this namespace)", s, os.Getpid())
}

// childPIDs lists this process's children (parentOf); none when /proc is
// another PID namespace's (procIsOurs).
func childPIDs() []int {
	if !procIsOurs() {
		return nil
	}
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parentOf(pid) == self {
			out = append(out, pid)
		}
	}
	return out
}

// closeOnExecFrom marks every open descriptor from fd on close-on-exec.
func closeOnExecFrom(fd int) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
}

// killStale SIGKILLs every process on the machine whose environment marks
// it as part of a command run under the lease singleton (singletonEnv),
// this process and its ancestors spared, round after round until none is
// left (a killed process's children may have been forking), for at most
// 2 s and while ctx, the term's, lasts (after it, a marked process may be
// the next term's: a review); it returns how many it killed. Only a
// leader calls it: any other process with the mark was started under an
// earlier term, and outlived it. A process that cleared its environment, or runs as another user,
// is not seen. A killed process is a zombie until its parent reaps it:
// its environment reads empty, so it is not counted again.
func killStale(ctx context.Context, singleton string) int {
	if singleton == "" || !procIsOurs() {
		return 0
	}
	mark := []byte(singletonEnv + "=" + singleton)
	spare := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !spare[pid]; pid = parentOf(pid) {
		spare[pid] = true
	}
	killed := map[int]bool{} // (a killed process is found again until it has died)
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		var found []int
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return len(killed)
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || spare[pid] {
				continue
			}
			if hasEnv(pid, mark) { // (not if gone, or not ours to read)
				found = append(found, pid)
			}
		}
		if len(found) == 0 {
			return len(killed)
		}
		for _, pid := range found {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		time.Sleep(time.Millisecond)
	}
	return len(killed)
}

// parentOf is pid's parent, from /proc/PID/stat (0 if unknown).
func parentOf(pid int) int {
	_, ppid := statOf(pid)
	return ppid
}

// statOf is pid's state and parent, from /proc/PID/stat: the third and
// fourth fields, after the command name in parentheses (0, 0 if unknown).
func statOf(pid int) (state byte, ppid int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(string(f[1]))
	return f[0][0], ppid
}

// hasEnv reports whether process pid's environment holds kv ("NAME=value").
func hasEnv(pid int, kv []byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(v, kv) {
			return true
		}
	}
	return false
}
