package spec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The independent model (spec/lease.pml) checked by spin: the seed
// protocol breaks safety (two leaders: the takeover race) and liveness (a
// crash between create and write wedges); the reference protocol is
// verified for both, exhaustively, for three processes, one crash and one
// pause. With -DSWEEP (versions numbered up to 4, removed as the
// reference's store removes them), the two natural wrong removals break
// safety: no listing after the link (-DNOVERIFY: a paused writer re-creates
// a removed version) and removing the old versions before their successor
// exists (-DEARLYREMOVE: a reader finds none and acquires); the right one
// is verified with -long (66 million states, about two minutes here).
func TestSpinModel(t *testing.T) {
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (.ci/run installs it: apt-get install spin gcc)", tool)
			}
			t.Skipf("%s is not installed: apt-get install spin gcc", tool)
		}
	}
	model, err := os.ReadFile("lease.pml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		macro, check string
		wantError    string // "" : verified
	}{
		{"-DSEED", "safety", "assertion violated"},
		{"-DSEED", "liveness", "acceptance cycle"},
		{"", "safety", ""},
		{"", "liveness", ""},
		{"-DSWEEP -DNOVERIFY", "safety", "assertion violated"},
		{"-DSWEEP -DEARLYREMOVE", "safety", "assertion violated"},
		{"-DSWEEP", "safety", ""},
	}
	for _, c := range cases {
		name := strings.ReplaceAll(strings.TrimPrefix(c.macro, "-D"), " -D", "+")
		if name == "" {
			name = "REFERENCE"
		}
		sweep := strings.HasPrefix(c.macro, "-DSWEEP")
		t.Run(name+"/"+c.check, func(t *testing.T) {
			if sweep && c.wantError == "" && !*long {
				t.Skip("about two minutes: run with -long")
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "lease.pml"), model, 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(name string, args ...string) string {
				cmd := exec.Command(name, args...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				if err != nil && name != "./pan" {
					t.Fatalf("%s %v: %v\n%s", name, args, err, out)
				}
				return string(out)
			}
			spinArgs := append([]string{"-a"}, strings.Fields(c.macro)...)
			run("spin", append(spinArgs, "lease.pml")...)
			gccArgs := []string{"-O2", "-w", "-o", "pan", "pan.c"}
			panArgs := []string{"-m100000"}
			if sweep {
				panArgs = append(panArgs, "-E") // versions run out at 4: a process stuck there is no error
			}
			if c.check == "safety" {
				gccArgs = append([]string{"-DNOCLAIM"}, gccArgs...)
			} else {
				panArgs = append(panArgs, "-a", "-f", "-N", "live")
			}
			run("gcc", gccArgs...)
			out := run("./pan", panArgs...)
			switch {
			case c.wantError != "" && !strings.Contains(out, c.wantError):
				t.Fatalf("spin did not find the %s violation:\n%s", c.check, out)
			case c.wantError == "" && !strings.Contains(out, "errors: 0"):
				t.Fatalf("spin did not verify the reference's %s:\n%s", c.check, out)
			case c.wantError == "" && strings.Contains(out, "Search not completed"):
				t.Fatalf("spin's search did not complete:\n%s", out)
			}
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "states, stored") || strings.Contains(l, "errors:") {
					t.Log(strings.TrimSpace(l))
				}
			}
		})
	}
}
