package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
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

// killStale SIGKILLs what is left of the commands run under the lease
// singleton by earlier terms: every process on the machine whose
// environment carries the lease's mark (singletonEnv), and every
// descendant of one, marked or not; this process, its ancestors and init
// are spared, and not descended through. It returns how many it killed.
// Only a leader calls it: any other process with the mark was started
// under an earlier term, and outlived it. It goes round until a look
// finds nothing, for at most 2 s and while ctx, the term's, lasts (after
// it, a marked process may be the next term's: a review).
//
// The descendants, and the order, are what a probe found missing: on the
// flock store a successor leads within milliseconds of the old run's
// SIGKILL, while the old term's supervisor is still killing its command's
// tree. Killing only what carries the mark killed that supervisor, a
// child subreaper, with a stray of the command in its care that had
// cleared its environment (setsid env -i ..., or a daemon rewriting it):
// the stray was reparented to init, out of every later look, and ran
// beside every later leader's command (about 1 in 30 SIGKILLs). So the
// whole tree is taken, and stopped before anything of it is killed
// (stopTree): a stopped process neither forks nor exits, so its children
// stay its children, where a look at /proc finds them; once every member
// has stopped and a fresh look finds no new one, the tree is complete,
// and all of it is killed. Killing in any order then orphans only
// processes already doomed. (Letting a live supervisor finish was
// weighed and not done: a supervisor may be stopped or slow, and one
// cannot tell a finishing supervisor from a stuck one.)
//
// A process with another lease's mark is not touched, nor anything below
// it: the mark names the lease, and that process is another lease's
// command, even when it was started by this lease's. A process of
// another user cannot be stopped or killed unless run is root (then it is,
// as any descendant of a marked process); its children still are. What
// cannot be found: a process orphaned before the look (its parent killed
// with no subreaper alive above it: run and its supervisor SIGKILLed at
// once) that carries neither mark: it cleared its environment (or set its
// title over the memory /proc/PID/environ shows: Perl's $0, setproctitle)
// and reset the limit mark (limitMark) too. (With the environment's mark
// alone, a titled Perl worker ran beside every later leader's command: a
// probe, 2026-12-07.)
func killStale(ctx context.Context, singleton string) int {
	if singleton == "" || !procIsOurs() {
		return 0
	}
	mark := []byte(singletonEnv + "=" + singleton)
	// (And init, whose descendants are everything: should it carry the
	// mark, its own death is not this sweep's to cause, nor every
	// process's.)
	spare := map[int]bool{1: true}
	for pid := os.Getpid(); pid > 1 && !spare[pid]; pid = parentOf(pid) {
		spare[pid] = true
	}
	killed := map[procID]bool{}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		held := stopTree(ctx, mark, spare, end)
		if len(held) == 0 {
			return len(killed)
		}
		if ctx.Err() != nil { // the term ended while the tree was stopped: hands off
			for _, p := range held {
				p.signal(syscall.SIGCONT)
				p.close()
			}
			break
		}
		for _, p := range held {
			if p.signal(syscall.SIGKILL) == nil {
				killed[p.procID] = true
			}
		}
		// Each dead (or a zombie, whose environment reads empty) before
		// the next look, which would not find an unmarked one again.
		for _, p := range held {
			for p.alive() && time.Now().Before(end) {
				time.Sleep(time.Millisecond)
			}
			p.close()
		}
	}
	return len(killed)
}

// procID is one process for good: its pid, and when it started (clock
// ticks since boot, /proc/PID/stat's 22nd field). A pid is reused, by
// another process, only once its own has died and been reaped.
type procID struct {
	pid   int
	start uint64
}

// heldProc is a process a sweep has stopped, with a pidfd on it where the
// kernel has them (Linux 5.3), through which it is signalled: a pidfd
// names the process, not its number, so a signal never reaches a process
// that has reused the pid. (-1: signalled by its pid, its start time
// checked first.)
type heldProc struct {
	procID
	fd int
}

// hold takes hold of p and stops it (SIGSTOP); nil if p is gone, or not
// ours to signal.
func hold(p procID) *heldProc {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err == unix.ESRCH {
		return nil // gone
	}
	if err != nil { // (no pidfds: Linux before 5.3, or none left)
		fd = -1
	}
	h := &heldProc{p, fd}
	// (Opened by its number: the start time, read after, says whether the
	// process the pidfd names is the one the look saw.)
	if st, ok := procStatOf(p.pid); !ok || st.start != p.start || h.signal(syscall.SIGSTOP) != nil {
		h.close()
		return nil
	}
	return h
}

func (h *heldProc) signal(sig syscall.Signal) error {
	if h.fd >= 0 {
		return unix.PidfdSendSignal(h.fd, sig, nil, 0)
	}
	if st, ok := procStatOf(h.pid); !ok || st.start != h.start {
		return syscall.ESRCH
	}
	return syscall.Kill(h.pid, sig)
}

// stopped reports whether h no longer runs: stopped, dead or a zombie.
func (h *heldProc) stopped() bool {
	st, ok := procStatOf(h.pid)
	return !ok || st.start != h.start || st.state == 'T' || st.state == 't' || st.state == 'Z' || st.state == 'X'
}

// alive reports whether h has not died yet (a zombie has).
func (h *heldProc) alive() bool {
	st, ok := procStatOf(h.pid)
	return ok && st.start == h.start && st.state != 'Z' && st.state != 'X'
}

func (h *heldProc) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

// stopTreeHeld, if set (by a test), is told after each of stopTree's
// looks what it holds stopped.
var stopTreeHeld func([]*heldProc)

// stopTree stops the stale tree (staleTree) and returns it, every member
// held and, but for one blocked in the kernel past end or 250 ms, stopped:
// it stops what a look finds, waits until all of it has stopped, and looks
// again, until a look finds nothing new (or ctx, the term, ends: an old
// term's sweep must not hold the next term's command stopped). A process stopped cannot fork;
// one that forked as it was stopped has its child listed, under it, by
// the time it shows stopped. (One that never shows stopped is in
// uninterruptible sleep, where it cannot fork either: a vfork's parent
// whose child was stopped before its exec, a hung file system.)
func stopTree(ctx context.Context, mark []byte, spare map[int]bool, end time.Time) []*heldProc {
	held := map[procID]*heldProc{}
	var out []*heldProc
	for {
		fresh := 0
		for _, p := range staleTree(mark, spare) {
			if _, seen := held[p]; seen {
				continue
			}
			h := hold(p)
			held[p] = h // (nil: gone, or not ours; tried once)
			if h != nil {
				out = append(out, h)
				fresh++
			}
		}
		if stopTreeHeld != nil {
			stopTreeHeld(out)
		}
		if fresh == 0 || !time.Now().Before(end) || ctx.Err() != nil {
			return out // (the caller continues them all if ctx ended: a review)
		}
		wait := time.Now().Add(250 * time.Millisecond)
		if end.Before(wait) {
			wait = end
		}
		for ; time.Now().Before(wait) && ctx.Err() == nil; time.Sleep(time.Millisecond) {
			if !slices.ContainsFunc(out, func(h *heldProc) bool { return !h.stopped() }) {
				break
			}
		}
	}
}

// staleTree lists, from one look at /proc, the processes that carry mark
// and their descendants, found by the parent each names: neither a spared
// process nor one with another lease's mark, nor anything below either.
// Zombies are left out (dead already, and childless).
func staleTree(mark []byte, spare map[int]bool) []procID {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type entry struct {
		procStat
		id    procID
		ours  bool // carries mark
		other bool // carries another lease's mark, and not ours
	}
	procs := map[int]*entry{}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := procStatOf(pid)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		ours, other := marks(pid, mark)
		procs[pid] = &entry{st, procID{pid, st.start}, ours, other}
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var out []procID
	in := map[int]bool{}
	var take func(pid int)
	take = func(pid int) {
		p := procs[pid]
		if p == nil || in[pid] || spare[pid] || p.other {
			return
		}
		in[pid] = true
		out = append(out, p.id)
		for _, c := range children[pid] {
			take(c)
		}
	}
	for pid, p := range procs {
		if p.ours {
			take(pid)
		}
	}
	return out
}

// marks reports whether process pid's environment holds mark
// ("LEASELAB_SINGLETON=ID"), and whether it holds another lease's
// (singletonEnv with another ID) and not mark. Neither if it is gone, or
// not ours to read. A process whose environment, as /proc shows it, holds
// no lease's mark is judged by its limit mark (limitMark) instead: the
// environment /proc shows is the memory it was first placed in, which a
// process that sets its title (Perl's $0, setproctitle) overwrites, and
// which env -i or sudo leave without the mark.
func marks(pid int, mark []byte) (ours, other bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false, false
	}
	name := []byte(singletonEnv + "=")
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(v, mark) {
			return true, false
		}
		if bytes.HasPrefix(v, name) {
			other = true
		}
	}
	if other {
		return false, true
	}
	v, ok := rttimeSoftLimit(pid)
	if !ok || !isLimitMark(v) {
		return false, false
	}
	ours = v == limitMark(string(bytes.TrimPrefix(mark, name)))
	return ours, !ours
}

// limitMark is the lease singleton's second mark: the soft limit of
// RLIMIT_RTTIME that the supervisor gives itself before it starts the
// command (setLimitMark), which every process the command starts
// inherits, across fork, exec and setsid, whatever it does to its
// environment or its title, and which /proc/PID/limits shows to anyone.
// RLIMIT_RTTIME bounds only the CPU time a real-time (SCHED_FIFO or
// SCHED_RR) process may use without blocking, and the mark is at least
// 2^63 microseconds (292,000 years): no limit in effect. The hard limit
// is left as it was.
func limitMark(singleton string) uint64 {
	h := sha256.Sum256([]byte(singleton))
	return 1<<63 | binary.BigEndian.Uint64(h[:8])>>2
}

// isLimitMark reports whether v is some lease's limit mark: 2^63 to
// 2^63+2^62-1.
func isLimitMark(v uint64) bool { return v>>62 == 2 }

// setLimitMark gives this process (the supervisor, before it starts the
// command) the lease's limit mark. Not if the hard limit is below it (an
// administrator's choice, kept): the environment's mark alone then.
func setLimitMark(singleton string) {
	if singleton == "" {
		return
	}
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_RTTIME, &r) != nil {
		return
	}
	if r.Max < limitMark(singleton) {
		if isLimitMark(r.Cur) {
			// An outer lease's mark, inherited: not this lease's command's
			// to carry (a review, helper-109). No mark, and no limit either.
			r.Cur = 1<<63 - 1
			unix.Setrlimit(unix.RLIMIT_RTTIME, &r)
		}
		return
	}
	r.Cur = limitMark(singleton)
	unix.Setrlimit(unix.RLIMIT_RTTIME, &r)
}

// rttimeSoftLimit reads process pid's soft RLIMIT_RTTIME from
// /proc/PID/limits ("Max realtime timeout  SOFT  HARD  us"); false if it
// is gone, or the line cannot be read (unlimited is no mark either).
func rttimeSoftLimit(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		return 0, false
	}
	const name = "Max realtime timeout"
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			v, err := strconv.ParseUint(string(f[0]), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// parentOf is pid's parent, from /proc/PID/stat (0 if unknown).
func parentOf(pid int) int {
	_, ppid := statOf(pid)
	return ppid
}

// statOf is pid's state and parent, from /proc/PID/stat (0, 0 if unknown).
func statOf(pid int) (state byte, ppid int) {
	st, _ := procStatOf(pid)
	return st.state, st.ppid
}

// procStat is what /proc/PID/stat says of a process: its state, its
// parent, and when it started (clock ticks since boot).
type procStat struct {
	state byte
	ppid  int
	start uint64
}

// procStatOf reads pid's procStat: the third, fourth and 22nd fields,
// after the command name in parentheses (false if unknown).
func procStatOf(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{f[0][0], ppid, start}, true
}

// bytesWaiting is how many bytes the pipe fd has to read (FIONREAD, TIOCINQ on Linux).
func bytesWaiting(fd int) int {
	n, _ := unix.IoctlGetInt(fd, unix.TIOCINQ)
	return n
}
