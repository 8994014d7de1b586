package main

import (
	"strings"
	"testing"
)

// The stretch faults and the machine without a boot id are fault names
// like the others: an unknown one is a one-line error naming every valid
// choice, exit 2, for every command that takes -faults; a known one runs,
// and its replay line replays its run.
func TestStretchFaultNames(t *testing.T) {
	for _, args := range [][]string{
		{"check", "-variant", "seed", "-faults", "diskfull,stal", "-runs", "1"},
		{"replay", "-variant", "seed", "-faults", "eio,nobootid,nope", "-seed", "1"},
		{"viz", "-variant", "seed", "-faults", "disk-full", "-seed", "1", "-o", "/dev/null"},
	} {
		code, out, errOut := runCLI(args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSuffix(errOut, "\n"), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2 and one line", args, code, out, errOut)
		}
		for _, name := range []string{"kill", "fserr", "power", "diskfull", "eio", "stall", "nobootid", "all", "none"} {
			if !strings.Contains(errOut, name) {
				t.Errorf("%v: %q does not name %s", args, errOut, name)
			}
		}
	}
	// The seed under a full disk: its renewal truncates the lock file and
	// cannot write it again, the empty-file wedge, owed after the stretch.
	code, out, errOut := runCLI("check", "-variant", "seed", "-faults", "diskfull,eio,stall,nobootid", "-runs", "200", "-props", "no-wedge")
	if code != 1 || !strings.Contains(out, "no-wedge") {
		t.Fatalf("check of the seed under disk stretches: exit %d\n%s%s", code, out, errOut)
	}
	i := strings.Index(out, "leaselab replay ")
	if i < 0 {
		t.Fatalf("no replay line:\n%s", out)
	}
	line := strings.Fields(strings.SplitN(out[i:], "\n", 2)[0])
	if !strings.Contains(strings.Join(line, " "), "-faults diskfull,eio,stall,nobootid") {
		t.Errorf("the replay line lost the fault names: %s", strings.Join(line, " "))
	}
	code, out, errOut = runCLI(line[1:]...)
	if code != 1 || !strings.Contains(out, "no-wedge") || !strings.Contains(out, "FAULT") {
		t.Errorf("%s: exit %d\n%s%s", strings.Join(line, " "), code, out, errOut)
	}
}
