package main

import (
	"encoding/json"
	"maps"
	"runtime/debug"
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
	replay := strings.Fields(strings.TrimPrefix(v.Replay, "leaselab "))
	code, out, errOut = runCLI(replay...)
	if code != 1 || !strings.Contains(out, "VIOLATION "+v.Property) {
		t.Fatalf("replay %q: exit %d %s\n%s", v.Replay, code, errOut, out)
	}
	// The decision file under other flags than its own is refused, not
	// replayed into another setup that may say "no violation" (a probe:
	// -variant reference, another -horizon, -skews).
	for _, change := range [][2]string{{"-variant", "reference"}, {"-horizon", "2s"}, {"-procs", "3"}} {
		args := append([]string(nil), replay...)
		found := false
		for i := range args {
			if args[i] == change[0] && i+1 < len(args) {
				args[i+1], found = change[1], true
			}
		}
		if !found {
			args = append(args, change[0], change[1])
		}
		code, out, errOut = runCLI(args...)
		if code != 2 || !strings.Contains(errOut, "setup mismatch") || strings.Contains(out, "no violation") {
			t.Errorf("replay %v: exit %d, %q\n%s", args, code, errOut, out)
		}
	}
}

// explore refuses what check refuses of a horizon, a negative limit, and
// -preemptions with -dpor, which has no such bound (a probe: -horizon 1ns
// said "complete, no violation"; the others were taken silently).
func TestExploreRefusesBadBounds(t *testing.T) {
	for _, args := range [][]string{
		{"-horizon", "1ns"}, {"-horizon", "25h"}, {"-horizon", "0s"}, {"-max-schedules", "-1"}, {"-dpor", "-preemptions", "2"},
	} {
		code, out, errOut := runCLI(append([]string{"explore"}, args...)...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("explore %v: exit %d, out %q, err %q", args, code, out, errOut)
		}
	}
}

func TestExploreRefusesExplosion(t *testing.T) {
	code, _, errOut := runCLI("explore", "-variant", "seed", "-procs", "6", "-preemptions", "10")
	if code != 2 || !strings.Contains(errOut, "schedules") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}

// -powers and -drifts: the seed's lock file comes back empty after a power
// loss (and the replay line carries -powers); the reference with one
// drifting clock runs five schedules (no drift, or either process slow or
// fast) and holds.
func TestExplorePowersAndDrifts(t *testing.T) {
	type report struct {
		Bounds struct {
			Powers, Drifts int
		}
		Complete   bool
		Schedules  int
		Violations []struct {
			Property, Replay string
		}
	}
	code, out, errOut := runCLI("explore", "-variant", "seed", "-procs", "2", "-powers", "1", "-json", "-out-dir", t.TempDir())
	var j report
	if code != 1 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("-powers 1: exit %d, want 1 (violations): %s\n%s", code, errOut, out)
	}
	// The wedge breaks no-wedge and, the run being quiet after the
	// restart, stable-leadership.
	if j.Bounds.Powers != 1 || !j.Complete || len(j.Violations) != 2 || j.Violations[0].Property != "no-wedge" || j.Violations[1].Property != "stable-leadership" ||
		!strings.Contains(j.Violations[0].Replay, " -powers 1 ") {
		t.Fatalf("-powers 1: %+v", j)
	}
	code, out, errOut = runCLI(strings.Fields(strings.TrimPrefix(j.Violations[0].Replay, "leaselab "))...)
	if code != 1 || !strings.Contains(out, "power loss") || !strings.Contains(out, "VIOLATION no-wedge") {
		t.Fatalf("replay %q: exit %d %s\n%s", j.Violations[0].Replay, code, errOut, out)
	}

	code, out, errOut = runCLI("explore", "-variant", "reference", "-procs", "2", "-drifts", "1", "-json")
	j = report{}
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("-drifts 1: exit %d, want 0: %s\n%s", code, errOut, out)
	}
	if j.Bounds.Drifts != 1 || !j.Complete || j.Schedules != 5 || len(j.Violations) != 0 {
		t.Fatalf("-drifts 1: %+v", j)
	}

	for _, f := range []string{"-powers", "-drifts"} {
		if code, _, errOut := runCLI("explore", f, "-1"); code != 2 || !strings.Contains(errOut, "bounds out of range") {
			t.Errorf("%s -1: exit %d %q, want 2", f, code, errOut)
		}
	}
}

// -dpor runs every order of dependent same-instant steps of the seed's
// first 4 s with one SIGKILL anywhere, completes, finds the violation the
// delay-bounded search finds, and its replay line carries -dpor and
// replays it.
func TestExploreDPOR(t *testing.T) {
	code, out, errOut := runCLI("explore", "-variant", "seed", "-procs", "2", "-crashes", "1", "-horizon", "4s", "-dpor", "-json", "-out-dir", t.TempDir())
	var j struct {
		Bounds struct {
			DPOR bool
		}
		Complete   bool
		Schedules  int
		Violations []struct {
			Property, Replay string
		}
	}
	if code != 1 || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("exit %d, want 1 (violations): %s\n%s", code, errOut, out)
	}
	if !j.Bounds.DPOR || !j.Complete || j.Schedules == 0 || len(j.Violations) == 0 || !strings.Contains(j.Violations[0].Replay, " -dpor ") {
		t.Fatalf("%+v", j)
	}
	code, out, errOut = runCLI(strings.Fields(strings.TrimPrefix(j.Violations[0].Replay, "leaselab "))...)
	if code != 1 || !strings.Contains(out, "VIOLATION "+j.Violations[0].Property) {
		t.Fatalf("replay %q: exit %d %s\n%s", j.Violations[0].Replay, code, errOut, out)
	}
}

// -merge cuts the delay-bounded search where a schedule reaches a state
// already searched from: on the seed's first 4 s, with a SIGKILL and a
// deviation, it finds every property the plain search finds, each in as
// many steps, in fewer schedules; its replay lines replay without it
// (the decisions are the plain search's); it runs with no -dpor and no
// absurd bound.
func TestExploreMerge(t *testing.T) {
	type report struct {
		Bounds struct {
			Merge bool
		}
		Complete   bool
		Schedules  int
		States     int
		Cut        int
		Violations []struct {
			Property, Replay string
			Steps            int
		}
	}
	var rs []report
	for _, merge := range []bool{false, true} {
		args := []string{"explore", "-variant", "seed", "-procs", "2", "-crashes", "1", "-preemptions", "1", "-horizon", "4s", "-json", "-out-dir", t.TempDir()}
		if merge {
			args = append(args, "-merge")
		}
		code, out, errOut := runCLI(args...)
		var j report
		if code != 1 || json.Unmarshal([]byte(out), &j) != nil {
			t.Fatalf("-merge %v: exit %d, want 1 (violations): %s\n%s", merge, code, errOut, out)
		}
		rs = append(rs, j)
	}
	plain, merged := rs[0], rs[1]
	if !merged.Bounds.Merge || !merged.Complete || merged.Cut == 0 || merged.States == 0 || merged.Schedules >= plain.Schedules || plain.States != 0 {
		t.Fatalf("plain %+v\nmerged %+v", plain, merged)
	}
	steps := func(r report) map[string]int {
		m := map[string]int{}
		for _, v := range r.Violations {
			m[v.Property] = v.Steps
		}
		return m
	}
	if !maps.Equal(steps(plain), steps(merged)) || len(plain.Violations) == 0 {
		t.Fatalf("violations: plain %v, merged %v", steps(plain), steps(merged))
	}
	v := merged.Violations[0]
	if strings.Contains(v.Replay, "-merge") {
		t.Errorf("replay line %q: the decisions replay without -merge", v.Replay)
	}
	code, out, errOut := runCLI(strings.Fields(strings.TrimPrefix(v.Replay, "leaselab "))...)
	if code != 1 || !strings.Contains(out, "VIOLATION "+v.Property) {
		t.Fatalf("replay %q: exit %d %s\n%s", v.Replay, code, errOut, out)
	}
	for _, args := range [][]string{{"-merge", "-dpor"}, {"-merge", "-preemptions", "1001"}} {
		if code, _, errOut := runCLI(append([]string{"explore"}, args...)...); code != 2 {
			t.Errorf("%v: exit %d %q, want 2", args, code, errOut)
		}
	}
}

// A merged search runs at the collector's default target (it keeps its
// states), restored after; GOGC set by the user wins.
func TestMergeGC(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // as main sets it
	t.Setenv("GOGC", "")
	restore := mergeGC()
	if p := percent(); p != 100 {
		t.Errorf("GC percent %d during a merged search, want 100", p)
	}
	restore()
	if p := percent(); p != 400 {
		t.Errorf("GC percent %d after, want 400 as before", p)
	}
	t.Setenv("GOGC", "150")
	defer mergeGC()()
	if p := percent(); p != 400 {
		t.Errorf("GOGC set: GC percent %d, want 400 untouched", p)
	}
}

// With no preemption and no reduction, "complete" is said to be within the
// default order only, so that no one reads it as every interleaving; with
// preemptions it is not.
func TestExploreSaysDefaultOrderOnly(t *testing.T) {
	const note = "ran in the default order only"
	code, out, errOut := runCLI("explore", "-variant", "seed", "-procs", "2")
	if code != 0 || !strings.Contains(out, "complete: true") || !strings.Contains(out, note) {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = runCLI("explore", "-variant", "seed", "-procs", "2", "-preemptions", "1", "-horizon", "1s")
	if code > 1 || strings.Contains(out, note) {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
	// Cut short by -max-schedules, it is not complete, and does not say
	// it is (it said "complete: false" and "# complete within its bounds"
	// on the next line).
	code, out, errOut = runCLI("explore", "-variant", "reference", "-procs", "2", "-crashes", "1", "-max-schedules", "3")
	if code > 1 || !strings.Contains(out, "complete: false") || !strings.Contains(out, note) || strings.Contains(out, "# complete within") {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
}
