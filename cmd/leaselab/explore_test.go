package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExploreSeedFindsAndReplays(t *testing.T) {
	code, out, errOut := runCLI("explore", "-variant", "seed", "-procs", "2", "-crashes", "1", "-json", "-out-dir", t.TempDir())
	if code != 1 {
		t.Fatalf("exit %d, want 1 (violations): %s", code, errOut)
	}
	var j struct {
		Complete   bool
		Schedules  int
		Violations []struct {
			Property, Replay string
			Steps            int
		}
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if !j.Complete || j.Schedules == 0 || len(j.Violations) == 0 {
		t.Fatalf("%+v", j)
	}
	v := j.Violations[0]
	code, out, errOut = runCLI(strings.Fields(strings.TrimPrefix(v.Replay, "leaselab "))...)
	if code != 1 || !strings.Contains(out, "VIOLATION "+v.Property) {
		t.Fatalf("replay %q: exit %d %s\n%s", v.Replay, code, errOut, out)
	}
}

func TestExploreRefusesExplosion(t *testing.T) {
	code, _, errOut := runCLI("explore", "-variant", "seed", "-procs", "6", "-preemptions", "10")
	if code != 2 || !strings.Contains(errOut, "schedules") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}
