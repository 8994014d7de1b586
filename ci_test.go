package leaselab_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// .ci/run runs under `set -o pipefail`: a pipeline whose reader exits
// before its writer is done (head, grep -q, sed q) kills the writer with
// SIGPIPE and fails CI at random (it did: `etcd --version | head -1` exited
// 141 on 4 of 8 starts). It must also run the README's test command.
func TestCIScript(t *testing.T) {
	b, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	early := regexp.MustCompile(`\|\s*(head\b|grep\s+(-\w*q|--quiet)|sed\s+-n\s+\S*q|awk\s+.*exit)`)
	for i, l := range strings.Split(string(b), "\n") {
		if code, _, _ := strings.Cut(l, "#"); early.MatchString(code) {
			t.Errorf(".ci/run:%d pipes into a reader that may exit early: %s", i+1, strings.TrimSpace(l))
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^(go test [^#\n]*?)\\s+# the tests$").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README's first lines have no `go test ... # the tests` command")
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(string(m[1])) + `$`).Match(b) {
		t.Errorf(".ci/run does not run the README's test command %q on a line of its own", m[1])
	}
}
