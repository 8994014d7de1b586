package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpFlags runs `leaselab NAME -h` and returns the flags its help lists,
// each with the description line under it.
func helpFlags(t *testing.T, name string) (flags map[string]string, out string) {
	t.Helper()
	code, out, errOut := runCLI(name, "-h")
	if code != 0 || errOut != "" {
		t.Fatalf("%s -h: exit %d, stderr %q: want 0 and help on stdout", name, code, errOut)
	}
	flags = map[string]string{}
	lines := strings.Split(out, "\n")
	flagLine := regexp.MustCompile(`^  -([a-z][a-z0-9-]*)`)
	for i, l := range lines {
		if m := flagLine.FindStringSubmatch(l); m != nil && i+1 < len(lines) {
			flags[m[1]] = strings.TrimSpace(lines[i+1])
		}
	}
	return flags, out
}

// synopsisFlags returns the flags a synopsis names.
func synopsisFlags(s string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?:^|[\s\[(|])-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(s, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// Every command's -h prints its synopsis and every flag with a
// description, exits 0, and says the same as `leaselab help COMMAND`.
func TestHelpListsEveryFlag(t *testing.T) {
	for _, c := range commands {
		flags, out := helpFlags(t, c.name)
		if !strings.HasPrefix(out, "usage: "+c.synopsis+"\n") {
			t.Errorf("%s -h does not start with its synopsis:\n%s", c.name, out)
		}
		if len(flags) == 0 {
			t.Errorf("%s -h lists no flags:\n%s", c.name, out)
		}
		for f, desc := range flags {
			if len(desc) < 8 || strings.HasPrefix(desc, "-") {
				t.Errorf("%s -%s: no description (%q)", c.name, f, desc)
			}
		}
		code, out2, _ := runCLI("help", c.name)
		if code != 0 || out2 != out {
			t.Errorf("help %s: exit %d, and it differs from %s -h", c.name, code, c.name)
		}
	}
	// Defaults are printed: a flag with a non-zero default says it.
	if _, out := helpFlags(t, "check"); !strings.Contains(out, "(default 10000)") || !strings.Contains(out, `(default "all")`) {
		t.Errorf("check -h lacks the defaults of -runs and -faults:\n%s", out)
	}
}

// Each synopsis names exactly the flags its command takes: a flag added
// without documenting it fails here.
func TestSynopsesNameEveryFlag(t *testing.T) {
	for _, c := range commands {
		flags, _ := helpFlags(t, c.name)
		var have []string
		for f := range flags {
			have = append(have, f)
		}
		slices.Sort(have)
		if got := synopsisFlags(c.synopsis); !slices.Equal(got, have) {
			t.Errorf("%s: the synopsis names %v, the command takes %v", c.name, got, have)
		}
	}
}

// The package doc and the README show every command's synopsis as the
// binary prints it (white space aside).
func TestDocsShowTheSynopses(t *testing.T) {
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, file := range []string{"doc.go", "../../README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if file == "doc.go" {
			text = strings.ReplaceAll(text, "//", "")
		}
		text = squash(text)
		for _, c := range commands {
			if !strings.Contains(text, squash(c.synopsis)) {
				t.Errorf("%s lacks %s's synopsis as the binary prints it:\n%s", file, c.name, c.synopsis)
			}
		}
	}
}

// leaselab alone prints a short usage on standard error and exits 2;
// leaselab help describes every command and exits 0.
func TestUsage(t *testing.T) {
	code, out, errOut := runCLI()
	if code != 2 || out != "" || !strings.Contains(errOut, "usage: leaselab COMMAND") || strings.Count(errOut, "\n") > 5 {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q: want 2 and a few lines of usage", code, out, errOut)
	}
	code, out, _ = runCLI("help")
	if code != 0 {
		t.Errorf("help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(out, c.synopsis) || !strings.Contains(out, c.summary) {
			t.Errorf("help lacks %s", c.name)
		}
	}
	// help is among the commands help lists, so help help works too.
	if code, again, _ := runCLI("help", "help"); code != 0 || again != out {
		t.Errorf("help help: exit %d, %d bytes: want 0 and help's page", code, len(again))
	}
}
