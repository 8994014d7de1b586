package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

var updateREADME = flag.Bool("update-readme", false, "rewrite the README's generated verdict tables")

// The README's verdict tables are generated: each sits between a marker
// that names the leaselab command producing it and an end marker. This
// test runs each command and fails if the README's copy is stale
// (regenerate with go test ./cmd/leaselab -run READMEVerdicts -update-readme).
func TestREADMEVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the checker on every variant")
	}
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- generated: leaselab ([^>]*) -->\n(.*?)<!-- end generated -->")
	ms := re.FindAllSubmatchIndex(b, -1)
	if len(ms) < 2 {
		t.Fatalf("the README has %d generated tables, want the verdict table and the fixes table", len(ms))
	}
	var out bytes.Buffer
	last := 0
	for _, m := range ms {
		cmd := string(b[m[2]:m[3]])
		code, got, errOut := runCLI(strings.Fields(cmd)...)
		if code != 0 && code != 1 {
			t.Fatalf("leaselab %s: exit %d: %s", cmd, code, errOut)
		}
		out.Write(b[last:m[4]])
		out.WriteString(got)
		last = m[5]
		if want := string(b[m[4]:m[5]]); want != got && !*updateREADME {
			t.Errorf("the README's table for `leaselab %s` is stale:\n%s", cmd, firstDiffLine(got, want))
		}
	}
	out.Write(b[last:])
	if *updateREADME {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func firstDiffLine(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return " now: " + a + "\nREADME: " + b
		}
	}
	return ""
}
