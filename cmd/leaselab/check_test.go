package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// cli runs the command and returns its exit status and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(args, &o, &e)
	return code, o.String(), e.String()
}

// decodeOne decodes out as exactly one JSON object.
func decodeOne(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	var more json.RawMessage
	if err := dec.Decode(&more); err != io.EOF {
		t.Fatalf("more than one JSON value (%v):\n%s", err, out)
	}
}

type checkViolation struct {
	Property string  `json:"property"`
	Seed     uint64  `json:"seed"`
	Run      int     `json:"run"`
	AtS      float64 `json:"at_s"`
	PIDs     []int   `json:"pids"`
	Detail   string  `json:"detail"`
	Replay   string  `json:"replay"`
	HTML     string  `json:"html"`
}

type checkReport struct {
	Variant    string           `json:"variant"`
	Runs       int              `json:"runs"`
	RunsAsked  int              `json:"runs_asked"`
	NotShown   map[string]int   `json:"not_shown"`
	Faults     string           `json:"faults"`
	Scheduler  string           `json:"scheduler"`
	Violations []checkViolation `json:"violations"`
	Counts     map[string]int   `json:"counts"`
}

type replayReport struct {
	Variant    string `json:"variant"`
	Seed       uint64 `json:"seed"`
	Setup      string `json:"setup"`
	Violations []struct {
		Property string `json:"property"`
		PIDs     []int  `json:"pids"`
	} `json:"violations"`
	TraceSHA256 string `json:"trace_sha256"`
	Events      int    `json:"events"`
}

// replayArgs turns a printed replay line into run's arguments.
func replayArgs(t *testing.T, line string) []string {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "leaselab ")
	if !ok || !strings.HasPrefix(rest, "replay ") {
		t.Fatalf("replay line %q does not start with \"leaselab replay \"", line)
	}
	return strings.Split(rest, " ")
}

func find(vs []checkViolation, prop string) *checkViolation {
	for i := range vs {
		if vs[i].Property == prop {
			return &vs[i]
		}
	}
	return nil
}

// naiveRace runs the search that finds the naive variant's two leaders
// without any fault, and returns its exclusive-leadership violation.
func naiveRace(t *testing.T) checkViolation {
	t.Helper()
	code, out, errOut := cli(t, "check", "-variant", "seed-naive", "-faults", "none", "-runs", "300", "-seed", "1",
		"-props", spec.ExclusiveLeadership, "-json", "-out-dir", t.TempDir())
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 1 (a violation) and nothing on stderr", code, errOut)
	}
	var rep checkReport
	decodeOne(t, out, &rep)
	v := find(rep.Violations, spec.ExclusiveLeadership)
	if v == nil {
		t.Fatalf("no exclusive-leadership violation in %s", out)
	}
	if !strings.HasPrefix(v.Replay, "leaselab replay ") || len(v.PIDs) != 2 || v.PIDs[0] == v.PIDs[1] {
		t.Fatalf("violation %+v: want two PIDs and a replay line", v)
	}
	if rep.Variant != "seed-naive" || rep.Faults != "none" || rep.Scheduler != "mixed" || rep.Runs != v.Run+1 || rep.Counts[spec.ExclusiveLeadership] != 1 {
		t.Errorf("report %+v: want seed-naive, no faults, random, stopped after run %d", rep, v.Run)
	}
	return *v
}

// The search the task names: it exits 1, each violation with a replay line.
// (Without -props it stops at run 0, whose only violation is
// linearizable-store; naiveRace asks for exclusive-leadership.)
func TestCheckNaiveExitsOne(t *testing.T) {
	code, out, errOut := cli(t, "check", "-variant", "seed-naive", "-faults", "none", "-runs", "300", "-seed", "1",
		"-json", "-out-dir", t.TempDir())
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 1 and nothing on stderr", code, errOut)
	}
	var rep checkReport
	decodeOne(t, out, &rep)
	if len(rep.Violations) == 0 {
		t.Fatalf("exit 1 with no violation: %s", out)
	}
	for _, v := range rep.Violations {
		if !strings.HasPrefix(v.Replay, "leaselab replay ") || !strings.Contains(v.Replay, " -variant seed-naive ") {
			t.Errorf("%s: replay %q", v.Property, v.Replay)
		}
	}
	// With every run searched, the naive race is among them.
	code, out, _ = cli(t, "check", "-variant", "seed-naive", "-faults", "none", "-runs", "300", "-seed", "1",
		"-keep-going", "-json", "-out-dir", t.TempDir())
	decodeOne(t, out, &rep)
	if code != 1 || find(rep.Violations, spec.ExclusiveLeadership) == nil || rep.Runs != 300 {
		t.Errorf("-keep-going: exit %d, %d runs, violations %+v: want exclusive-leadership among 300 runs", code, rep.Runs, rep.Violations)
	}
}

// The replay line reproduces the run: the same trace twice, and the
// violation the search found.
func TestReplayReproduces(t *testing.T) {
	v := naiveRace(t)
	args := append(replayArgs(t, v.Replay), "-json")
	var reps [2]replayReport
	for i := range reps {
		code, out, errOut := cli(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1 (the run breaks a property): %s", args, code, errOut)
		}
		decodeOne(t, out, &reps[i])
	}
	a, b := reps[0], reps[1]
	if len(a.TraceSHA256) != 64 || a.TraceSHA256 != b.TraceSHA256 || a.Events == 0 || a.Events != b.Events || a.Setup != b.Setup {
		t.Errorf("two replays differ or are empty: %q/%d and %q/%d", a.TraceSHA256, a.Events, b.TraceSHA256, b.Events)
	}
	if a.Seed != v.Seed || a.Variant != "seed-naive" {
		t.Errorf("replay of seed %d on %s, want seed %d on seed-naive", a.Seed, a.Variant, v.Seed)
	}
	var got *[]int
	for i := range a.Violations {
		if a.Violations[i].Property == spec.ExclusiveLeadership {
			got = &a.Violations[i].PIDs
		}
	}
	if got == nil || !reflect.DeepEqual(*got, v.PIDs) {
		t.Errorf("replay violations %+v: want exclusive-leadership by %v", a.Violations, v.PIDs)
	}
	// The text form prints the same trace digest and the violation.
	code, out, _ := cli(t, replayArgs(t, v.Replay)...)
	if code != 1 || !strings.Contains(out, "# trace sha256 "+a.TraceSHA256+"\n") || !strings.Contains(out, "VIOLATION exclusive-leadership at ") ||
		!strings.Contains(out, "# replay "+v.Replay+"\n") {
		t.Errorf("text replay (exit %d) lacks the digest, the violation or its own replay line:\n%s", code, out)
	}
}

// A replay whose flags do not give the setup the line was printed for is
// refused.
func TestReplaySetupMismatch(t *testing.T) {
	v := naiveRace(t)
	args := replayArgs(t, v.Replay)
	set := func(name, value string) []string {
		out := append([]string(nil), args...)
		for i := range out {
			if out[i] == name {
				out[i+1] = value
				return out
			}
		}
		t.Fatalf("replay line %q has no %s", v.Replay, name)
		return nil
	}
	for name, a := range map[string][]string{
		"wrong -expect": set("-expect", "0123456789"),
		"other -procs":  set("-procs", "3"),
		"other -faults": set("-faults", "kill"),
		"other -lease":  append(append([]string(nil), args...), "-lease", "8s"),
	} {
		code, out, errOut := cli(t, append(a, "-json")...)
		if code != 2 || out != "" {
			t.Errorf("%s: exit %d, output %q: want 2 and nothing on stdout", name, code, out)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "setup mismatch") {
			t.Errorf("%s: error %q: want one line saying setup mismatch", name, errOut)
		}
	}
}

// Every setup flag survives the trip through a printed replay line: the
// line parses back to the same options, and replays without a mismatch.
func TestReplayLineRoundTrip(t *testing.T) {
	for _, flags := range [][]string{
		{},
		{"-variant", "seed-naive", "-procs", "3", "-faults", "kill,stop", "-scheduler", "pct"},
		{"-faults", "all", "-max-drift", "0.0005"},
		{"-faults", "drift", "-max-drift", "0"},
		{"-procs", "5", "-faults", "term,skew,jump,fserr", "-lease", "5s", "-renew", "1.5s", "-watch", "2s"},
		{"-variant", "reference", "-procs", "2", "-faults", "kill", "-horizon", "10m"},
	} {
		parseOpts := func(args []string) (setupFlags, error) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var sf setupFlags
			sf.register(fs, "all")
			fs.Uint64("seed", 0, "")
			fs.String("expect", "", "")
			return sf, fs.Parse(args)
		}
		sf, err := parseOpts(flags)
		if err != nil {
			t.Fatal(err)
		}
		o, err := sf.options()
		if err != nil {
			t.Fatalf("%v: %v", flags, err)
		}
		line := spec.ReplayCommand(o, 12345)
		args := replayArgs(t, line)
		sf2, err := parseOpts(args[1:])
		if err != nil {
			t.Fatalf("%q does not parse: %v", line, err)
		}
		o2, err := sf2.options()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if !reflect.DeepEqual(o, o2) {
			t.Errorf("%v: printed as %q, parsed back as\n%+v\nwant\n%+v", flags, line, o2, o)
		}
		if code, _, errOut := cli(t, append(args, "-json")...); code != 0 && code != 1 {
			t.Errorf("%q: exit %d, want 0 or 1 (no setup mismatch): %s", line, code, errOut)
		}
	}
}

// Bad input: exit 2 and one line that names the valid choices.
func TestCheckBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "-variant", "nope"}, []string{`"nope"`, lease.VariantNames()}},
		{[]string{"check", "-runs", "0"}, []string{"-runs 0", "at least 1"}},
		{[]string{"check", "-faults", "kill,bogus"}, []string{`"bogus"`, "kill, term, stop, skew, drift, jump, fserr, emfile, power, diskfull, eio, stall, nobootid, samepid, notice, lose, suspend, all, none"}},
		{[]string{"check", "-scheduler", "nope"}, []string{`"nope"`, "random, pct"}},
		{[]string{"check", "-props", "nope"}, []string{`"nope"`, strings.Join(spec.Properties, ", ")}},
		{[]string{"check", "-lease", "3s", "-renew", "3s"}, []string{"longer than the renew interval"}},
		{[]string{"check", "-max-drift", "1.5"}, []string{"[0, 1)"}},
		{[]string{"check", "-variant", "reference", "-renew-deadline", "-1s"}, []string{"renew deadline -1s must be positive"}}, // (a probe: it spoke of the drift bound)
		{[]string{"check", "-horizon", "-1s"}, []string{"-horizon -1s", "to 24h"}},
		{[]string{"check", "-horizon", "25h"}, []string{"-horizon 25h", "to 24h"}},
		{[]string{"check", "-horizon", "1ns"}, []string{"-horizon 1ns", "from 1ms"}}, // (a probe: it panicked)
		{[]string{"replay", "-seed", "1", "-horizon", "999us"}, []string{"-horizon 999µs", "from 1ms"}},
		{[]string{"viz", "-seed", "1", "-o", "/nonexistent/x.html", "-horizon", "1ns"}, []string{"-horizon 1ns", "from 1ms"}},
		{[]string{"check", "-horizon", "two hours"}, []string{"invalid value", "-horizon"}},
		{[]string{"replay", "-seed", "1", "-horizon", "-5m"}, []string{"-horizon -5m"}},
		{[]string{"check", "-bogus"}, []string{"-runs", "-variant"}},
		{[]string{"check", "extra"}, []string{"flags only"}},
		{[]string{"replay"}, []string{"-seed"}},
		{[]string{"replay", "-seed", "1", "-variant", "nope"}, []string{lease.VariantNames()}},
		{[]string{"replay", "-seed", "x"}, []string{"invalid value"}},
	} {
		code, out, errOut := cli(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q: want 2 and no output", c.args, code, out)
		}
		line := strings.TrimSpace(errOut)
		if line == "" || strings.Contains(line, "\n") {
			t.Errorf("%v: error %q: want one line", c.args, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%v: error %q does not mention %q", c.args, line, w)
			}
		}
	}
}

// Without faults the committed program keeps one leader, never wedges and
// has no failover to make. (Its store is not linearizable even so: a
// watcher can read the file between a renewal's O_TRUNC and its write;
// that property is left out here.)
func TestCheckSeedWithoutFaultsHolds(t *testing.T) {
	code, out, errOut := cli(t, "check", "-variant", "seed", "-faults", "none", "-runs", "5",
		"-props", "exclusive-leadership,no-wedge,failover-bound", "-json", "-out-dir", t.TempDir())
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 0\n%s", code, errOut, out)
	}
	var raw map[string]json.RawMessage
	decodeOne(t, out, &raw)
	if string(raw["violations"]) != "[]" {
		t.Errorf("violations %s, want []", raw["violations"])
	}
	var rep checkReport
	decodeOne(t, out, &rep)
	if rep.Runs != 5 || len(rep.Counts) != 0 || rep.Variant != "seed" {
		t.Errorf("report %+v: want 5 runs of seed, nothing counted", rep)
	}
	// The property left out does fail on the same runs.
	code, out, _ = cli(t, "check", "-variant", "seed", "-faults", "none", "-runs", "5", "-props", "linearizable-store",
		"-json", "-out-dir", t.TempDir())
	decodeOne(t, out, &rep)
	if code != 1 || find(rep.Violations, spec.LinearizableStore) == nil {
		t.Errorf("linearizable-store on the same runs: exit %d, %+v; want a violation", code, rep.Violations)
	}
}

// The text report: each violation, its excerpt, where porcupine's
// visualisation went, and the replay line.
func TestCheckText(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := cli(t, "check", "-variant", "seed", "-faults", "none", "-runs", "300", "-seed", "1", "-out-dir", dir)
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 1", code, errOut)
	}
	if !strings.HasPrefix(out, "# check seed: ") || !strings.Contains(out, "\nVIOLATION linearizable-store in run ") {
		t.Errorf("no header or no linearizable-store VIOLATION line:\n%s", out)
	}
	var replays, htmls []string
	for _, l := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(l, "  replay: "); ok {
			replays = append(replays, r)
		}
		if p, ok := strings.CutPrefix(l, "  porcupine: "); ok {
			htmls = append(htmls, p)
		}
	}
	if len(replays) == 0 || len(htmls) != 1 {
		t.Fatalf("%d replay lines and %d porcupine lines, want some and one:\n%s", len(replays), len(htmls), out)
	}
	for _, r := range replays {
		if !strings.HasPrefix(r, "leaselab replay -variant seed ") || !strings.Contains(r, " -expect ") {
			t.Errorf("replay line %q", r)
		}
	}
	if filepath.Dir(htmls[0]) != dir {
		t.Errorf("porcupine file %s is not in -out-dir %s", htmls[0], dir)
	}
	b, err := os.ReadFile(htmls[0])
	if err != nil || !bytes.Contains(bytes.ToLower(b), []byte("<html")) {
		t.Errorf("porcupine file %s: %v, %d bytes, want an HTML page", htmls[0], err, len(b))
	}
	if !strings.Contains(out, "runs with violations: linearizable-store 1\n") {
		t.Errorf("no summary line:\n%s", out)
	}
}

// -all checks every variant and prints one object listing them.
func TestCheckAllJSON(t *testing.T) {
	code, out, errOut := cli(t, "check", "-all", "-runs", "50", "-faults", "none", "-json", "-out-dir", t.TempDir())
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q: want 1 (the seed variants break linearizable-store without faults)", code, errOut)
	}
	var all struct {
		Variants []checkReport `json:"variants"`
	}
	decodeOne(t, out, &all)
	var names []string
	for _, v := range lease.Variants() {
		names = append(names, v.Name)
	}
	var got []string
	for _, r := range all.Variants {
		got = append(got, r.Variant)
		if r.Faults != "none" || r.Runs < 1 || r.Runs > 50 {
			t.Errorf("%s: faults %s, %d runs", r.Variant, r.Faults, r.Runs)
		}
	}
	// One report per variant, in lease.Variants' order (2 when this test
	// was written: seed-naive and seed; the list grows with the fixes).
	if len(all.Variants) < 2 || !reflect.DeepEqual(got, names) {
		t.Errorf("variants %v, want one report per variant: %v", got, names)
	}
}

// The header says how many runs were done of how many asked; violating
// runs beyond -show are counted, and a line says how many were not printed
// and how to print them; -show prints them.
func TestCheckSaysWhatItDidNotPrint(t *testing.T) {
	code, out, _ := cli(t, "check", "-variant", "seed", "-faults", "kill", "-runs", "2000", "-smallest", "-out-dir", t.TempDir())
	if code != 1 || !regexp.MustCompile(`(?m)^# check seed: \d+ of 2000 runs \(stopped at the first violating run`).MatchString(out) {
		t.Errorf("exit %d; want 1 and a header with runs done of 2000:\n%s", code, out)
	}
	args := []string{"check", "-variant", "seed", "-faults", "kill", "-runs", "300", "-keep-going", "-out-dir", t.TempDir()}
	code, out, _ = cli(t, args...)
	m := regexp.MustCompile(`(?m)^# violating runs not printed: (.*) \(-show (\d+) prints them all\)$`).FindStringSubmatch(out)
	if code != 1 || m == nil || !strings.Contains(out, "# check seed: 300 runs, ") {
		t.Fatalf("exit %d; want 1, 300 runs and a line counting the violating runs not printed:\n%s", code, out)
	}
	code, all, _ := cli(t, append(args, "-show", m[2])...)
	if code != 1 || strings.Contains(all, "not printed") || strings.Count(all, "\nVIOLATION ") <= strings.Count(out, "\nVIOLATION ") {
		t.Errorf("-show %s: exit %d; want every violating run printed:\n%s", m[2], code, all)
	}
	var rep checkReport
	code, js, _ := cli(t, append(args, "-json")...)
	decodeOne(t, js, &rep)
	notShown := 0
	for _, n := range rep.NotShown {
		notShown += n
	}
	counted := 0
	for _, n := range rep.Counts {
		counted += n
	}
	if code != 1 || rep.RunsAsked != 300 || notShown == 0 || notShown+len(rep.Violations) != counted {
		t.Errorf("-json: exit %d, runs_asked %d, not_shown %v, %d violations, counts %v: want the kept and the unprinted to add up to the counts",
			code, rep.RunsAsked, rep.NotShown, len(rep.Violations), rep.Counts)
	}
}

// Without -out-dir, each invocation writes its side files into a new
// directory of its own, and prints their paths.
func TestSideFilesInFreshDirectories(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var paths []string
	for range 2 {
		code, out, _ := cli(t, "check", "-variant", "seed", "-faults", "none", "-runs", "300", "-seed", "1")
		m := regexp.MustCompile(`(?m)^  porcupine: (.*)$`).FindStringSubmatch(out)
		if code != 1 || m == nil {
			t.Fatalf("exit %d; want 1 and the path of porcupine's page:\n%s", code, out)
		}
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("printed %s, which does not exist: %v", m[1], err)
		}
		paths = append(paths, m[1])
		code, out, _ = cli(t, "explore", "-variant", "seed", "-procs", "2", "-crashes", "1")
		m = regexp.MustCompile(`(?m)^  replay: leaselab explore .* -replay (.*)$`).FindStringSubmatch(out)
		if code != 1 || m == nil {
			t.Fatalf("explore: exit %d; want 1 and a replay line:\n%s", code, out)
		}
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("printed %s, which does not exist: %v", m[1], err)
		}
		paths = append(paths, m[1])
	}
	dirs := map[string]bool{}
	for _, p := range paths {
		if !strings.HasPrefix(p, os.Getenv("TMPDIR")) {
			t.Errorf("%s is not under $TMPDIR", p)
		}
		dirs[filepath.Dir(p)] = true
	}
	if len(dirs) != len(paths) {
		t.Errorf("four invocations wrote into %d directories, want four: %v", len(dirs), paths)
	}
}

// check's output is the same byte for byte whatever the number of cores
// its runs are simulated on (issue 19): every violation, in the same
// order, the same -smallest choice, the same replay lines; only the
// elapsed time and rate differ.
func TestCheckSameOnEveryCoreCount(t *testing.T) {
	timing := regexp.MustCompile(` in [0-9.]+ ?[mµn]?s \([0-9]+ runs/s\)`)
	tmp := regexp.MustCompile(`leaselab-check-[0-9]+`) // the porcupine pages' directory
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, args := range [][]string{
		{"check", "-variant", "seed", "-faults", "all", "-runs", "300", "-keep-going"},
		{"check", "-variant", "seed-naive", "-runs", "200"},
		{"check", "-variant", "seed", "-faults", "kill,stop", "-runs", "300", "-keep-going", "-smallest"},
	} {
		var outs []string
		for _, procs := range []int{1, 2} {
			runtime.GOMAXPROCS(procs)
			code, out, errOut := runCLI(args...)
			if code > 1 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			outs = append(outs, tmp.ReplaceAllString(timing.ReplaceAllString(out, " in T"), "DIR"))
		}
		if len(outs) == 2 && outs[0] != outs[1] {
			t.Errorf("%v: one core and two differ:\n%s\n---\n%s", args, outs[0], outs[1])
		}
		if len(outs) == 2 && !strings.Contains(outs[0], "VIOLATION") {
			t.Errorf("%v: no violation: the comparison is vacuous:\n%s", args, outs[0])
		}
	}
}

// replay -decisions refuses a decision file written for other flags than
// those given (its header: the setup flags lease_test's rapid failures
// write), and replays it under its own; one explore wrote is sent to
// explore -replay.
func TestReplayDecisionsChecksItsSetup(t *testing.T) {
	o := sim.SetupOptions{Variant: "seed", Procs: 2, Faults: []trace.FaultKind{trace.Kill}, Scheduler: "random"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	rec := &sim.Recorder{C: sim.NewPCG(7, 7)}
	cfg := sim.SetupFrom(o, rec)
	cfg.Chooser = rec
	if _, err := sim.Run(cfg); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "last.decisions")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteDecisions(f, spec.SetupFlags(o), rec.Log); err != nil {
		t.Fatal(err)
	}
	f.Close()
	flags := strings.Fields(spec.SetupFlags(o))
	if code, _, errOut := runCLI(append(append([]string{"replay"}, flags...), "-decisions", path)...); code == 2 {
		t.Fatalf("replay under its own flags: exit 2: %s", errOut)
	}
	other := append([]string(nil), flags...)
	other[1] = "reference"
	if code, out, errOut := runCLI(append(append([]string{"replay"}, other...), "-decisions", path)...); code != 2 || !strings.Contains(errOut, "setup mismatch") {
		t.Errorf("replay under -variant reference: exit %d, %q\n%s", code, errOut, out)
	}
	f, err = os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const explore = "-variant seed -procs 2 -crashes 1 -terms 0 -pauses 0 -fserrs 0 -jumps 0 -preemptions 0 -horizon 27s"
	sim.WriteDecisions(f, explore, rec.Log)
	f.Close()
	if code, _, errOut := runCLI(append(append([]string{"replay"}, flags...), "-decisions", path)...); code != 2 || !strings.Contains(errOut, "leaselab explore "+explore+" -replay") {
		t.Errorf("replay of explore's file: exit %d, %q", code, errOut)
	}
}
