package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// superviseMain is the supervisor of one term's command (see singleton.go):
//
//	leaselab __supervise DEADLINE PATH ARGV...
//
// with the control pipe on fd 3 and the status pipe on fd 4. It starts the
// command in a process group of its own, and kills the command's whole tree
// when run says stop (SIGTERM, then SIGKILL after stopGrace), when run is
// gone (the control pipe's EOF: SIGKILL at once), when the local deadline
// passes (SIGKILL at once), or, for the strays it left, when the command
// exits on its own. It exits once it has no child left, after writing how
// the command ended on the status pipe.
//
// LEASELAB_TEST_SUPERVISOR plants a mistake, for the tests that show
// torture -singleton catches it: "orphan" (run's death is ignored: the
// command is orphaned, as leaselab run's own child was before the
// supervisor), "nodeadline" (the deadline is ignored: a stopped run's
// command runs on, until the next leader kills it: killStale),
// "nodeadline-nokill" (the same, and run's killStale kills nothing), "nosweep" (only the process group is killed: a
// descendant that left it survives), "nomove" (the deadline is never
// moved by a renewal: the supervisor kills the command at the term's first
// deadline while run still holds the term, as when a renewal races the
// supervisor's timer).
func superviseMain(args []string) int {
	// The command's parent-death signal is bound to the thread that forks
	// it: this goroutine keeps its thread for the process's life.
	runtime.LockOSThread()
	mistake := os.Getenv("LEASELAB_TEST_SUPERVISOR")
	os.Unsetenv("LEASELAB_TEST_SUPERVISOR")
	ctl, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	if ctl == nil || status == nil || len(args) < 3 {
		fmt.Fprintln(os.Stderr, "leaselab: "+superviseArg+" is leaselab run's internal supervisor, not a command")
		return 2
	}
	// The command gets standard input, output and error, and nothing else
	// of run's: a descriptor it inherited could keep a pipe of run's
	// parent open (leaselab torture reads one until EOF).
	closeOnExecFrom(3)
	report := func(format string, a ...any) { fmt.Fprintf(status, format+"\n", a...) }
	deadline, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		report("exec-error bad deadline %q", args[0])
		return 2
	}
	// Signals are caught, never ignored (but for those run was given
	// ignored, below): an ignored signal stays ignored across exec, in the
	// command. The supervisor has a process group of
	// its own (startSupervisor), so no terminal's or job's signal reaches
	// it; one sent to it alone (or the SIGHUP of a stopped supervisor
	// whose group run's death orphaned) stops the command in order. SIGTSTP and a broken pipe do
	// nothing to it: it must run on to kill the command at the deadline,
	// and to report. (It never writes to a terminal, where its background
	// group would get SIGTTOU.)
	// Not SIGINT or SIGHUP if run was started with it ignored (run keeps it
	// ignored, and so the supervisor is started with it ignored): the
	// command keeps it ignored, as run was given it (stopSignals).
	stopSig := make(chan os.Signal, 1)
	signal.Notify(stopSig, stopSignals(true)...)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE, syscall.SIGTSTP)
	sweep := mistake != "nosweep"
	if sweep {
		setSubreaper()
	}
	// The lease's second mark, which the command inherits, and what it
	// starts, however it rewrites its environment or title (limitMark).
	setLimitMark(os.Getenv(singletonEnv))
	cmd := exec.Command(args[1])
	cmd.Args = args[2:]
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = commandAttr()
	if err := cmd.Start(); err != nil {
		report("exec-error %v", err)
		return execFailed
	}
	main := cmd.Process.Pid
	report("started %d", main)

	// Control lines from run.
	type control struct {
		kind string // "deadline", "stop", "eof"
		n    int64
	}
	ctlCh := make(chan control, 16)
	go func() {
		sc := bufio.NewScanner(ctl)
		for sc.Scan() {
			word, rest, _ := strings.Cut(sc.Text(), " ")
			switch word {
			case "deadline":
				if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
					ctlCh <- control{"deadline", n}
				}
			case "stop":
				ctlCh <- control{kind: "stop"}
			}
		}
		ctlCh <- control{kind: "eof"}
	}()
	// Every child that exits: the command, and strays reparented to us.
	type reaped struct {
		pid int
		ws  syscall.WaitStatus
	}
	reapCh := make(chan reaped, 16)
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil { // ECHILD: no child left, the tree is dead
				close(reapCh)
				return
			}
			reapCh <- reaped{pid, ws}
		}
	}()

	const never = int64(1) << 62
	nodeadline := mistake == "nodeadline" || mistake == "nodeadline-nokill"
	if deadline == 0 || nodeadline {
		deadline = never
	}
	var (
		mainDone bool
		code     int
		outcome  string // why the command ended (set once ending)
		detail   string
		killAt   = never // SIGKILL from this instant; SIGTERM before it (once ending)
		termed   = map[int]bool{}
		killed   bool  // a SIGKILL round was made: reaps drive the rounds now
		endAt    int64 // when the tree was doomed: a deadline, or now
	)
	ending := func() bool { return outcome != "" }
	// round signals the command's tree: its group while the command is
	// unreaped (after that the group's id could be reused), and every child
	// of ours (strays that left the group are reparented to us).
	round := func() {
		now := monoNow()
		sig := syscall.SIGTERM
		if now >= killAt {
			sig, killed = syscall.SIGKILL, true
		}
		if !mainDone && (sig == syscall.SIGKILL || !termed[0]) {
			syscall.Kill(-main, sig)
			termed[0] = true
		}
		if !sweep {
			return
		}
		for _, pid := range childPIDs() {
			if sig == syscall.SIGKILL || !termed[pid] {
				syscall.Kill(pid, sig)
				termed[pid] = true
			}
		}
	}
	end := func(why, det string, grace time.Duration) {
		if ending() {
			killAt = min(killAt, monoNow()+int64(grace))
			round()
			return
		}
		outcome, detail, endAt = why, det, monoNow()
		killAt = min(monoNow()+int64(grace), deadline)
		round()
	}
	timer := time.NewTimer(time.Hour)
	arm := func() {
		at := deadline
		if ending() {
			at = killAt
			if killed {
				at = never
			}
		}
		if at >= never {
			timer.Stop()
			return
		}
		timer.Reset(time.Duration(max(0, at-monoNow())))
	}
	arm()
	for {
		select {
		case c := <-ctlCh:
			switch c.kind {
			case "deadline":
				if !nodeadline && mistake != "nomove" {
					deadline = c.n
					if deadline == 0 {
						deadline = never
					}
					if ending() {
						killAt = min(killAt, deadline)
					}
				}
			case "stop":
				end("stopped", "", stopGrace)
			case "eof":
				if mistake == "orphan" {
					return 0 // the mistake: run is gone, and the command runs on
				}
				end("stopped", "run is gone", 0)
				ctlCh = nil
			}
		case sig := <-stopSig:
			end("stopped", "the supervisor got "+sig.String(), stopGrace)
		case r, ok := <-reapCh:
			if !ok { // no child left
				switch outcome {
				case "exited":
					report("exited %d", code)
				case "deadline":
					now := monoNow()
					report("deadline %s; command dead %.1f ms after it (CLOCK_MONOTONIC %d)", detail, float64(now-endAt)/1e6, now)
				default:
					report("stopped %s", detail)
				}
				return 0
			}
			if r.pid == main {
				mainDone = true
				switch {
				case r.ws.Exited():
					code = r.ws.ExitStatus()
				case r.ws.Signaled():
					code = 128 + int(r.ws.Signal())
				}
				// run kills the group no more should this supervisor
				// die: the group's id may be free now.
				report("reaped %d", code)
				if !ending() {
					// Exited on its own: what it left behind goes too.
					end("exited", "", stopGrace)
				}
			}
			if ending() {
				round()
			}
		case <-timer.C:
			now := monoNow()
			if !ending() && now >= deadline {
				end("deadline", fmt.Sprintf("the supervisor fired %.1f ms after it", float64(now-deadline)/1e6), 0)
				endAt = deadline
			} else if ending() && now >= killAt {
				round()
			}
		}
		arm()
	}
}
