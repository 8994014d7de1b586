package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestScenarioJSON(t *testing.T) {
	code, out, errOut := runCLI("scenario", "kill-leader", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var j map[string]any
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if j["leaderless_gap_s"] != 9.53 || j["scenario"] != "kill-leader" || j["variant"] != "seed" {
		t.Errorf("fields: %v", j)
	}
}

func TestScenarioTextAndTrace(t *testing.T) {
	code, out, _ := runCLI("scenario", "-trace", "term-leader")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"12.01s [Process: 60344] Received shutdown signal, releasing lease",
		"# trace",
		"remove /tmp/leader.lock = ok",
		"FAULT term leader at 12.010000s (pid 60344)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// Bad input: a one-line error that names the valid choices, exit 2.
func TestBadInput(t *testing.T) {
	// A lock path in a directory of the test's own: /tmp/x, which this
	// used, was a directory once another program had made it.
	lock := filepath.Join(t.TempDir(), "x")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "nope"}, "kill-leader"},
		{[]string{"scenario", "steady", "-variant", "nope"}, "seed-naive"},
		{[]string{"scenario", "steady", "-bogus"}, "-variant"},
		{[]string{"scenario", "steady", "-lease", "3s", "-renew", "3s"}, "longer than the renew interval"},
		{[]string{"scenario", "steady", "-lease", "x"}, "invalid value"},
		{[]string{"scenario"}, "kill-leader"},
		{[]string{"scenario", "steady", "extra"}, "one NAME"},
		{[]string{"frobnicate"}, "scenario, check, replay, viz, explore, run, torture, failover, variants, help"},
		{[]string{"help", "frobnicate"}, "unknown command"},
		{[]string{"run", "-id", "-5", "-path", lock}, "-id -5: a holder id is a positive number"},
		{[]string{"run", "-store", "sqlite", "-dsn", "/nonexistent-leaselab/dir/l.db"}, "the directory /nonexistent-leaselab/dir does not exist"},
		{[]string{"run", "-store", "sqlite", "-dsn", filepath.Dir(lock)}, filepath.Dir(lock) + " is a directory, not a database file"},
		{[]string{"run", "-store", "sqlite", "-dsn", "file:" + filepath.Dir(lock) + "?cache=shared"}, filepath.Dir(lock) + " is a directory"},
		{[]string{"failover", "-variants", "none", "-redis", "127.0.0.1:1"}, "nothing to measure: redis: redisstore: 127.0.0.1:1: dial tcp"},
		{[]string{"variants", "x"}, "no arguments"},
		{[]string{"run"}, "needs -path"},
		{[]string{"run", "-path", "/dev/stdin"}, "symbolic link"},
		{[]string{"run", "-store", "redis"}, "needs -dsn"},
		{[]string{"run", "-path", lock, "-store", "nosuch"}, "valid: file"},
		{[]string{"run", "-path", lock, "-lease", "1s", "-renew", "2s"}, "longer than the renew interval"},
		{[]string{"check", "-variant", "reference", "-renew-deadline", "9s"}, "must be shorter than lease 9s x (1-rho)/(1+rho)"},
		{[]string{"check", "-variant", "reference", "-drift-bound", "0.6"}, "renew interval 3s must be shorter than the renew deadline"},
		{[]string{"check", "-variant", "reference", "-drift-bound", "0.999", "-lease", "200ms", "-renew", "10ms", "-watch", "10ms"}, "leaves no margin"},
		{[]string{"check", "-variant", "reference", "-lease", "120ms", "-renew", "20ms", "-watch", "20ms"}, "costs the term"},
	} {
		code, _, errOut := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: error %q should be one line mentioning %q", c.args, errOut, c.want)
		}
	}
}

func TestVariants(t *testing.T) {
	code, out, _ := runCLI("variants", "-json")
	if code != 0 || !strings.Contains(out, `"name":"seed-naive"`) || !strings.Contains(out, `"name":"seed"`) {
		t.Errorf("exit %d, output %s", code, out)
	}
}

// The collector's raised target is for the searches; a leader started by
// run keeps Go's default.
func TestSearchesRaiseGCOnly(t *testing.T) {
	for args, want := range map[string]bool{"check -variant seed": true, "explore": true, "replay -variant seed -seed 1": true,
		"run -path /tmp/x": false, "": false} {
		if got := searches(strings.Fields(args)); got != want {
			t.Errorf("searches(%q) = %v, want %v", args, got, want)
		}
	}
}
