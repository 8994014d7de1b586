package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A stopped supervisor (SIGSTOP, a debugger) must not make run deaf: a
// SIGTERM to run still stops the command and ends run with status 0, run
// continuing the supervisor, or killing it if it stays stopped. (A probe:
// run waited for the stopped supervisor for good, its command running on
// past the lease.)
func TestRunStoppedSupervisorStillStops(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	for _, how := range []string{"stopped", "stopped again"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			tok := commandToken(t)
			t.Cleanup(func() { killProcsWith(tok) })
			a, out := startRun(t, filepath.Join(t.TempDir(), "leader.lock"), []string{"-lease", "3s", "-renew", "20ms", "-watch", "100ms"},
				"sleep", tok)
			poll(t, "the command to run", func() bool { return len(procsWith(tok)) == 1 })
			sup := supervisorOf(a.Process.Pid)
			if sup == 0 {
				t.Fatal("no supervisor among run's children")
			}
			syscall.Kill(sup, syscall.SIGSTOP)
			poll(t, "the supervisor to stop", func() bool { s, _ := statOf(sup); return s == 'T' })
			time.Sleep(300 * time.Millisecond) // renewals go on meanwhile, and must not block
			if how == "stopped again" {
				// Stopped again as soon as run continues it: run kills it.
				go func() {
					for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
						if s, _ := statOf(sup); s == 'S' || s == 'R' {
							syscall.Kill(sup, syscall.SIGSTOP)
						}
					}
				}()
			}
			began := time.Now()
			a.Process.Signal(syscall.SIGTERM)
			code := waitExit(t, a, "run, SIGTERMed with its supervisor stopped")
			took := time.Since(began)
			t.Logf("run exited %d after %v", code, took.Round(time.Millisecond))
			if code != 0 {
				t.Errorf("run exited %d, want 0:\n%s", code, out)
			}
			if left := procsWith(tok); len(left) != 0 {
				t.Errorf("the command still runs after run exited: %v", left)
			}
			if !strings.Contains(out.String(), "Lease released") {
				t.Errorf("run did not release the lease:\n%s", out)
			}
		})
	}
}

// A renewal never waits for the supervisor: passing deadlines on to one
// that does not read (its pipe full) returns at once, as does stop.
func TestSupervisedNeverBlocksItsCaller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// (Full sooner; nobody reads r. Through Control, not Fd, which would
	// make the write end blocking, as run's is not.)
	if rc, err := w.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 4096) })
	}
	s := &supervised{ctl: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	ended := make(chan struct{})
	go func() { s.write(); close(ended) }()
	began := time.Now()
	for i := range 20000 { // a few hundred kilobytes of deadline lines
		s.setDeadline(int64(i) << 32)
		if i%64 == 0 {
			time.Sleep(10 * time.Microsecond) // (let the writer fill the pipe)
		}
	}
	s.stop()
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("20,000 deadlines and a stop took %v", took)
	}
	n, _ := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
	if n < 4000 {
		t.Fatalf("%d bytes in the pipe: the writer never filled it, the test shows nothing", n)
	}
	// The writer is blocked on the full pipe: the supervisor's exit (its
	// status goroutine closes the pipe and pokes) ends it.
	s.mu.Lock()
	w.Close()
	s.ctl = nil
	s.mu.Unlock()
	s.poke()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not end once the pipe was closed")
	}
}

// A SIGTERM to the supervisor alone stops the command in order, and run
// says so and releases (exit status 1: the command did not end on its
// own), not "ended unexpectedly (<nil>)".
func TestRunSupervisorSignalledAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	tok := commandToken(t)
	t.Cleanup(func() { killProcsWith(tok) })
	a, out := startRun(t, filepath.Join(t.TempDir(), "leader.lock"), []string{"-lease", "3s", "-renew", "1s", "-watch", "1s"}, "sleep", tok)
	poll(t, "the command to run", func() bool { return len(procsWith(tok)) == 1 })
	sup := supervisorOf(a.Process.Pid)
	if sup == 0 {
		t.Fatal("no supervisor among run's children")
	}
	syscall.Kill(sup, syscall.SIGTERM)
	if code := waitExit(t, a, "run, its supervisor SIGTERMed"); code != 1 {
		t.Errorf("run exited %d, want 1:\n%s", code, out)
	}
	if !strings.Contains(out.String(), "supervisor stopped the command (the supervisor got terminated)") || strings.Contains(out.String(), "unexpectedly") {
		t.Errorf("run's log does not say what happened:\n%s", out)
	}
	if left := procsWith(tok); len(left) != 0 {
		t.Errorf("the command still runs after run exited: %v", left)
	}
}
