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

// Two real `leaselab run` processes at a 100 ms renew interval for a few
// seconds (tens of renewals, each a new version): the lock directory
// holds at most the two newest versions, a boot record and a temporary
// file or two at any instant it is looked at, and the same at the end.
// (A day at this interval is 864,000 renewals; the count does not grow
// with them: README, "Bounded files".)
func TestRunBoundedFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds leaselab and runs real processes for about 4 s")
	}
	dir := t.TempDir()
	bin := leaselabBinary(t)
	lock := filepath.Join(dir, "leader.lock")
	var outs []*strings.Builder
	var cmds []*exec.Cmd
	for range 2 {
		var out strings.Builder
		cmd := exec.Command(bin, "run", "-path", lock, "-lease", "900ms", "-renew", "100ms", "-watch", "100ms")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		outs, cmds = append(outs, &out), append(cmds, cmd)
	}
	most, seen := 0, ""
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) > most {
			most, seen = len(ents), ""
			for _, e := range ents {
				seen += " " + e.Name()
			}
		}
	}
	for _, c := range cmds {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}
	renewals := strings.Count(outs[0].String(), "Lease renewed") + strings.Count(outs[1].String(), "Lease renewed")
	ents, _ := os.ReadDir(dir)
	var end []string
	for _, e := range ents {
		end = append(end, e.Name())
	}
	t.Logf("%d renewals; at most %d names (%s); at the end: %s", renewals, most, strings.TrimSpace(seen), strings.Join(end, " "))
	if renewals < 10 {
		t.Fatalf("only %d renewals in 4 s at 100 ms:\n%s\n%s", renewals, outs[0], outs[1])
	}
	// Two versions, a boot record, and each process's temporary file.
	if most > 5 {
		t.Errorf("the lock directory held %d names at once (%s), want at most 5", most, seen)
	}
	if len(end) > 3 {
		t.Errorf("left %d names (%s), want at most the two newest versions and the boot record", len(end), strings.Join(end, " "))
	}
}
