package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaselab run as real processes: the first leads and runs its command, a
// SIGTERM releases the lease and stops the command (and its children), and
// the second takes over at once and runs its own.
func TestRunSingleton(t *testing.T) {
	if testing.Short() {
		t.Skip("builds leaselab and runs real processes for about 3 s")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "leaselab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	lock := filepath.Join(dir, "leader.lock")
	start := func(name string) (*exec.Cmd, *strings.Builder) {
		var out strings.Builder
		marker := filepath.Join(dir, name+".running")
		cmd := exec.Command(bin, "run", "-path", lock, "-lease", "1s", "-renew", "200ms", "-watch", "200ms", "--",
			"sh", "-c", "touch "+marker+"; trap 'rm "+marker+"; exit 0' TERM; while :; do sleep 0.05; done")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name+".running"))
		return err == nil
	}
	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(3 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a, aout := start("a")
	waitFor("a to lead and run its command", func() bool { return exists("a") })
	b, bout := start("b")
	defer b.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	if exists("b") {
		t.Fatal("b runs its command while a leads")
	}
	a.Process.Signal(syscall.SIGTERM)
	a.Wait()
	if exists("a") {
		t.Errorf("a's command still runs after a's SIGTERM")
	}
	released := time.Now()
	waitFor("b to take over", func() bool { return exists("b") })
	if gap := time.Since(released); gap > 500*time.Millisecond {
		t.Errorf("b took over %v after the release; a release hands over at once", gap)
	}
	if !strings.Contains(aout.String(), "Lease released") || !strings.Contains(bout.String(), "[LEADER] Acquired lease") {
		t.Errorf("logs:\n%s\n%s", aout.String(), bout.String())
	}
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
}
