package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/leaselab/leaselab/spec"
)

// Every replay line in the README's bug table must reproduce the property
// its row names: the documentation is a test vector.
func TestREADMEReplays(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("`leaselab (replay [^`]*)`")
	rows := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(line, " | ")
		m := re.FindStringSubmatch(line)
		if m == nil || len(cols) < 4 {
			continue
		}
		prop := strings.TrimSpace(cols[2])
		if !isProperty(prop) {
			continue // a generated verdict table: TestREADMEVerdicts keeps those
		}
		rows++
		code, out, errOut := runCLI(append(strings.Fields(m[1]), "-json")...)
		if code != 1 { // the run breaks a property
			t.Errorf("%s: exit %d, want 1: %s", m[1], code, errOut)
			continue
		}
		var j struct {
			Violations []struct{ Property string }
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, v := range j.Violations {
			found = found || v.Property == prop
		}
		if !found {
			t.Errorf("%s does not show %s: %+v", m[1], prop, j.Violations)
		}
	}
	if rows < 10 {
		t.Fatalf("found %d replay rows in the README's bug table, want the whole table", rows)
	}
}

func isProperty(p string) bool {
	for _, q := range spec.Properties {
		if p == q {
			return true
		}
	}
	return false
}
