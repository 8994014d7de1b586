package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needPIDNamespaces skips a test that makes PID namespaces where it
// cannot (not root, no unshare(1)).
func needPIDNamespaces(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("PID namespaces need root")
	}
	if err := exec.Command("unshare", "-p", "-f", "true").Run(); err != nil {
		t.Skipf("unshare -p -f: %v", err)
	}
}

// runPIDWith is the host PID of the leaselab run whose command line has
// arg (0: none).
func runPIDWith(arg string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		args := bytes.Split(b, []byte{0})
		if len(args) > 2 && bytes.HasSuffix(args[0], []byte("leaselab")) && string(args[1]) == "run" && bytes.Contains(b, []byte(arg)) {
			return pid
		}
	}
	return 0
}

// startInNamespace starts sh -c script under unshare with the flags
// given, in a process group of its own, its output kept; it is killed,
// with what carries tok, when the test ends.
func startInNamespace(t *testing.T, tok, script string, flags ...string) *runOutput {
	t.Helper()
	out := &runOutput{path: filepath.Join(t.TempDir(), "ns.out")}
	f, err := os.Create(out.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("unshare", append(flags, "sh", "-c", script)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		killProcsWith(tok + "1")
		killProcsWith(tok + "2")
		cmd.Wait()
	})
	return out
}

// In a PID namespace that kept the host's /proc (unshare -p without
// --mount-proc), /proc's PIDs name other processes than kill(2)'s: run's
// sweep after its supervisor's death listed the host's PID 2's children
// (the kernel's threads) and SIGKILLed those numbers in its namespace,
// an unrelated process and run itself among them (a probe: 2 of 2). run
// now says at start that it cannot look, and kills nothing.
func TestRunInPIDNamespaceWithHostProc(t *testing.T) {
	needPIDNamespaces(t)
	dir := t.TempDir()
	tok := commandToken(t)
	status := filepath.Join(dir, "status")
	// run is the namespace's PID 2, as in the probe (its sweep listed the
	// host's PID 2's children).
	script := fmt.Sprintf(`%s run -path %s -lease 2s -renew 500ms -watch 500ms -- sleep %s1 & r=$!; sleep %s2 & wait $r; echo "$?" > %s; wait`,
		leaselabBinary(t), filepath.Join(dir, "leader.lock"), tok, tok, status)
	out := startInNamespace(t, tok, script, "-p", "-f")
	poll(t, "the command and the unrelated sleep to run", func() bool {
		return len(procsWith(tok+"1")) == 1 && len(procsWith(tok+"2")) == 1
	})
	run := runPIDWith(tok + "1")
	sup := supervisorOf(run)
	if run == 0 || sup == 0 {
		t.Fatalf("run %d, supervisor %d: not found", run, sup)
	}
	syscall.Kill(sup, syscall.SIGKILL)
	var code []byte
	poll(t, "run to end after its supervisor's death", func() bool {
		code, _ = os.ReadFile(status)
		return len(code) > 0
	})
	if c := strings.TrimSpace(string(code)); c == "137" {
		t.Errorf("run was SIGKILLed (status 137): it swept its own namespace's PIDs by the host's numbers\n%s", out)
	}
	time.Sleep(200 * time.Millisecond)
	if len(procsWith(tok+"2")) != 1 {
		t.Errorf("the unrelated sleep in run's namespace was killed\n%s", out)
	}
	if !strings.Contains(out.String(), "/proc shows another PID namespace's processes (/proc/self is ") {
		t.Errorf("run did not say that it cannot look for what is left:\n%s", out)
	}
}

// run as its PID namespace's init (a container's entry point, PID 1)
// gets every orphan of the namespace, and reaps their zombies (a probe: 5
// of 5 stayed zombies). (When run ends, the kernel ends its namespace.)
func TestRunAsNamespaceInit(t *testing.T) {
	needPIDNamespaces(t)
	dir := t.TempDir()
	tok := commandToken(t)
	script := fmt.Sprintf(`exec %s run -path %s -lease 2s -renew 500ms -watch 500ms -- sleep %s1`,
		leaselabBinary(t), filepath.Join(dir, "leader.lock"), tok)
	out := startInNamespace(t, tok, script, "-p", "-f", "--mount-proc")
	poll(t, "the command to run", func() bool { return len(procsWith(tok+"1")) == 1 })
	run := runPIDWith(tok + "1")
	if run == 0 {
		t.Fatal("run not found")
	}
	// Orphans of another process of the namespace (its shell ends at
	// once), which end a second later.
	enter := exec.Command("nsenter", "-t", strconv.Itoa(run), "-p", "sh", "-c",
		"for i in 1 2 3 4 5; do setsid sleep 1 </dev/null >/dev/null 2>&1 & done")
	if b, err := enter.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v\n%s", err, b)
	}
	orphans := func() (zombies, all int) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			i := bytes.LastIndexByte(b, ')')
			var state string
			var ppid int
			if i > 0 {
				fmt.Sscan(string(b[i+1:]), &state, &ppid)
			}
			if ppid == run && bytes.Contains(b, []byte("(sleep)")) { // (not the supervisor)
				all++
				if state == "Z" {
					zombies++
				}
			}
		}
		return zombies, all
	}
	poll(t, "the orphans to reach run", func() bool { _, all := orphans(); return all == 5 })
	time.Sleep(3 * time.Second) // they end, and run reaps them within a second
	poll(t, "run to reap its orphans' zombies", func() bool { z, _ := orphans(); return z == 0 })
	if z, _ := orphans(); z != 0 {
		t.Errorf("%d zombies left\n%s", z, out)
	}
}
