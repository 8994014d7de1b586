package main

// leaselab torture -singleton: every leaselab run process runs a command,
// this binary's probe (probeMain), that reports its own start and stop to
// the harness; the property singleton fails if two commands ever ran at
// once.
//
// Overlap is judged by the kernel, not by timestamps: each probe takes an
// exclusive flock(2) on one file for its whole life, held by an open file
// description that it shares with a grandchild it starts in a session of
// its own (setsid: outside the command's process group, as a daemon would
// be). The lock is free only once the probe and its grandchild are both
// dead. A probe that finds the lock taken at its start ran beside an
// earlier command (or what that command left running), and says so; it
// then waits for the lock and says when it got it: how long the two
// overlapped.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// probeArg, as leaselab's first argument, makes it torture -singleton's
// probe command: an internal entry point, not a command.
const probeArg = "__singleton-probe"

// probeMain is the probe: leaselab __singleton-probe LOCK EVENTS ID, or
// leaselab __singleton-probe -child (the grandchild: it holds the lock on
// fd 3 until it is killed). Its lines on EVENTS, each one write(2) (T is
// CLOCK_MONOTONIC in ns):
//
//	T start ID EPOCH PID free                 the lock was free: alone
//	T start ID EPOCH PID busy PREVID PREVEPOCH  another command still ran
//	T free ID                                 (after busy) the lock is now ours
//	T child ID PID                            the grandchild runs
//	T stop ID                                 SIGTERM: the probe exits
func probeMain(args []string) int {
	if len(args) == 1 && args[0] == "-child" {
		for { // hold the lock (fd 3) until killed
			time.Sleep(time.Hour)
		}
	}
	t0 := monoNow()
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "leaselab: "+probeArg+" is leaselab torture -singleton's probe, not a command")
		return 2
	}
	lock, events, id := args[0], args[1], args[2]
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	ev, err := os.OpenFile(events, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	emit := func(t int64, format string, a ...any) {
		ev.WriteString(strconv.FormatInt(t, 10) + " " + fmt.Sprintf(format, a...) + "\n")
	}
	epoch := os.Getenv("LEASELAB_EPOCH")
	if epoch == "" {
		epoch = "0"
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		emit(t0, "start %s %s %d free", id, epoch, os.Getpid())
	} else {
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		prev := strings.Fields(string(b[:n]))
		for len(prev) < 2 {
			prev = append(prev, "0")
		}
		emit(t0, "start %s %s %d busy %s %s", id, epoch, os.Getpid(), prev[0], prev[1])
		for syscall.Flock(int(f.Fd()), syscall.LOCK_EX) == syscall.EINTR {
		}
		emit(monoNow(), "free %s", id)
	}
	f.Truncate(0)
	f.WriteAt([]byte(id+" "+epoch+"\n"), 0)
	if self, err := selfExe(); err == nil {
		child := exec.Command(self, probeArg, "-child")
		child.ExtraFiles = []*os.File{f}
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if child.Start() == nil {
			emit(monoNow(), "child %s %d", id, child.Process.Pid)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	emit(monoNow(), "stop %s", id)
	return 0
}

// singletonFiles are the probe's lock and the commands' events, in dir.
func singletonFiles(dir string) (lock, events string) {
	return filepath.Join(dir, "singleton.lock"), filepath.Join(dir, "commands.txt")
}

// probeCommand is the command torture -singleton gives process id.
func probeCommand(bin, dir string) func(id int) []string {
	lock, events := singletonFiles(dir)
	return func(id int) []string { return []string{bin, probeArg, lock, events, strconv.Itoa(id)} }
}

// checkSingleton judges the commands' reports once every run process is
// dead (shutdown SIGKILLed them at end, on the harness's true time from
// origin). It returns the violations of singleton, and how many commands
// started. Commands still alive 5 s after the last run died are a
// violation too (they outlived every leadership), and are killed.
//
// And every term that lasted longer than minTerm must have started its
// command: a leader that never runs it (a launch that fails, or is never
// made) held every other property, and a probe's runner that returned at
// once from its launch passed with "0 commands started".
func checkSingleton(dir string, origin int64, end time.Duration, terms []singletonTerm, minTerm time.Duration) ([]tortureViolation, int) {
	lockPath, events := singletonFiles(dir)
	var vs []tortureViolation
	// Every command must be gone: the lock is free.
	if f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		free := false
		for deadline := time.Now().Add(5 * time.Second); !free && time.Now().Before(deadline); {
			if free = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil; !free {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if !free {
			left := killProbes(events)
			vs = append(vs, tortureViolation{Property: "singleton", AtS: end.Seconds(),
				Detail: fmt.Sprintf("commands still ran 5 s after every run process was killed (processes %v, killed now)", left)})
		}
		f.Close()
	}
	type start struct {
		t             int64
		id, prev      int
		epoch, prevEp string
		busy          bool
		freeAt        int64
	}
	var starts []*start
	byID := map[int]*start{}
	b, _ := os.ReadFile(events)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		t, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		id, _ := strconv.Atoi(f[2])
		switch {
		case f[1] == "start" && len(f) >= 6 && t-origin <= int64(end):
			s := &start{t: t - origin, id: id, epoch: f[3], busy: f[5] == "busy"}
			if s.busy && len(f) >= 8 {
				s.prev, _ = strconv.Atoi(f[6])
				s.prevEp = f[7]
			}
			starts = append(starts, s)
			byID[id] = s
		case f[1] == "free" && byID[id] != nil:
			byID[id].freeAt = t - origin
		}
	}
	for _, tm := range terms {
		if tm.to-tm.from < int64(minTerm) {
			continue
		}
		ran := false
		for _, s := range starts {
			ran = ran || s.epoch == strconv.FormatInt(tm.epoch, 10) && s.t >= tm.from-int64(time.Second) && s.t <= tm.to
		}
		if !ran {
			vs = append(vs, tortureViolation{Property: "singleton", AtS: time.Duration(tm.from + int64(minTerm)).Seconds(), PIDs: []int{tm.pid},
				Detail: fmt.Sprintf("process %d led epoch %d from %.3f s to %.3f s and never started its command", tm.pid, tm.epoch,
					time.Duration(tm.from).Seconds(), time.Duration(tm.to).Seconds())})
		}
	}
	for _, s := range starts {
		if !s.busy {
			continue
		}
		ran := "until the end of the run"
		if s.freeAt > 0 {
			ran = fmt.Sprintf("for %.1f ms more", float64(s.freeAt-s.t)/1e6)
		}
		vs = append(vs, tortureViolation{Property: "singleton", AtS: time.Duration(s.t).Seconds(), PIDs: []int{s.id, s.prev},
			Detail: fmt.Sprintf("the command of process %d (epoch %s) started while the command of process %d (epoch %s), or what it started, still ran, %s",
				s.id, s.epoch, s.prev, s.prevEp, ran)})
	}
	slices.SortStableFunc(vs, func(a, b tortureViolation) int {
		switch {
		case a.AtS < b.AtS:
			return -1
		case a.AtS > b.AtS:
			return 1
		}
		return 0
	})
	return vs, len(starts)
}

// killProbes SIGKILLs every probe and grandchild the events name that
// still runs (its command line says it is a probe), and returns them.
func killProbes(events string) []int {
	f, err := os.Open(events)
	if err != nil {
		return nil
	}
	defer f.Close()
	var killed []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		var pid int
		switch {
		case len(fs) >= 5 && fs[1] == "start":
			pid, _ = strconv.Atoi(fs[4])
		case len(fs) >= 4 && fs[1] == "child":
			pid, _ = strconv.Atoi(fs[3])
		}
		if pid <= 0 {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), probeArg) {
			syscall.Kill(pid, syscall.SIGKILL)
			killed = append(killed, pid)
		}
	}
	return killed
}

// singletonVerdict is the property singleton's verdict: its first
// violation, saying how many there were.
func singletonVerdict(vs []tortureViolation) spec.Verdict {
	v := spec.Verdict{Property: "singleton", Applicable: true}
	if len(vs) > 0 {
		x := vs[0]
		detail := x.Detail
		if len(vs) > 1 {
			detail += fmt.Sprintf(" (%d violations in all)", len(vs))
		}
		v.Violation = &spec.Violation{Property: "singleton", At: time.Duration(x.AtS * float64(time.Second)), PIDs: x.PIDs, Detail: detail}
	}
	return v
}

// singletonTerm is a term a run process reported leading, on the
// harness's true time: the epoch its command's start line must carry.
type singletonTerm struct {
	pid      int
	epoch    int64
	from, to int64
}

// singletonTerms returns the terms of tr's reported leadership with the
// epoch each was led with (its first Lead event), for checkSingleton.
func singletonTerms(tr *trace.Trace) []singletonTerm {
	var out []singletonTerm
	for _, iv := range tr.ReportedLeadership() {
		for i := iv.Start; i < len(tr.Events) && tr.Events[i].T <= iv.To; i++ {
			if e := &tr.Events[i]; int(e.Proc) == iv.Proc && e.Kind == trace.EvLead && e.T >= iv.From {
				out = append(out, singletonTerm{pid: tr.Procs[iv.Proc].PID, epoch: e.Epoch(), from: iv.From, to: iv.To})
				break
			}
		}
	}
	return out
}
