package scenario

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden renders a scenario's full output: its text, then its JSON object.
func golden(t *testing.T, r *Result) string {
	t.Helper()
	j, err := json.MarshalIndent(r.Fields, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return r.Text + "# json\n" + string(j) + "\n"
}

// goldenCase is one golden transcript: a scenario on a variant ("": the
// scenario's own). Its file is testdata/scenario-NAME.golden, or
// testdata/scenario-NAME-VARIANT.golden for another variant.
type goldenCase struct{ name, variant string }

func (c goldenCase) id() string {
	if c.variant == "" {
		return c.name
	}
	return c.name + "-" + c.variant
}

// goldenCases are every scenario on its own variant, then the failovers on
// the reference algorithm, which has no transcript in the post.
func goldenCases() []goldenCase {
	var cases []goldenCase
	for _, s := range Scenarios() {
		cases = append(cases, goldenCase{name: s.Name})
	}
	return append(cases,
		goldenCase{"kill-leader", "reference"},
		goldenCase{"term-leader", "reference"},
	)
}

// TestScenariosGolden compares every golden case's output with the copy
// kept under testdata/ (regenerate with go test ./scenario -run Golden
// -update; -run Golden/NAME rewrites one).
func TestScenariosGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.id(), func(t *testing.T) {
			s, err := Lookup(c.name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Run(Options{Variant: c.variant})
			if err != nil {
				t.Fatal(err)
			}
			got := golden(t, r)
			path := filepath.Join("testdata", "scenario-"+c.id()+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s; diff the two or rerun with -update if the change is intended:\n%s", path, firstDiff(got, string(want)))
			}
		})
	}
}

func firstDiff(got, want string) string {
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
			return "line " + strconv.Itoa(i+1) + "\n got: " + a + "\nwant: " + b
		}
	}
	return "(no line differs)"
}

// The post's figures are the first test vectors: these lines appear in the
// post verbatim and must appear in the simulator's output.
func TestScenariosReproducePost(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		field string
		want  any
	}{
		{"steady", []string{
			"3.53s [Process: 60217] [LEADER] Lease renewed, valid until 21:14:50",
			"3.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:47",
			"3.62s [Process: 60226] [WATCHER] Lease held by 60217, valid until 21:14:50",
			"6.53s [Process: 60217] [LEADER] Lease renewed, valid until 21:14:53",
			"6.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:50",
			"6.62s [Process: 60226] [WATCHER] Lease held by 60217, valid until 21:14:53",
		}, "max_leaders", 1},
		{"kill-leader", []string{
			"9.53s [Process: 60217] [LEADER] Lease renewed, valid until 21:14:56",
			"12.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:56",
			"15.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:56",
			"18.53s [Process: 60222] [WATCHER] Lease held by 60217, valid until 21:14:56",
			"21.53s [Process: 60222] [WATCHER] Lease held by 60217 expired at 21:14:56, attempting takeover",
			"21.53s [Process: 60222] [WATCHER] Takeover successful, now leader until 21:15:08",
			"21.62s [Process: 60226] [WATCHER] Lease held by 60222, valid until 21:15:08",
		}, "leaderless_gap_s", 9.53},
		{"term-leader", []string{
			"12.01s [Process: 60344] Received shutdown signal, releasing lease",
			"12.01s [Process: 60344] Lease released",
			"12.32s [Process: 60349] [LEADER] Acquired lease at 21:15:47, valid until 21:15:56",
		}, "leaderless_gap_s", 0.31},
		{"empty-file", []string{
			"3.01s [Process: 63010] [WATCHER] Could not read lease file, will retry",
			"3.32s [Process: 63015] [WATCHER] Could not read lease file, will retry",
			"3.63s [Process: 63019] [WATCHER] Could not read lease file, will retry",
			"6.01s [Process: 63010] [WATCHER] Could not read lease file, will retry",
			"15.63s [Process: 63019] [WATCHER] Could not read lease file, will retry",
		}, "wedged", true},
	}
	cases = append(cases, struct {
		name  string
		lines []string
		field string
		want  any
	}{"takeover-race", []string{
		"12.10s [Process: 200] [WATCHER] Takeover successful, now leader until 21:14:59",
		"12.10s [Process: 300] [WATCHER] Takeover successful, now leader until 21:14:59",
	}, "max_leaders", 2})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Lookup(c.name)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Run(Options{})
			if err != nil {
				t.Fatal(err)
			}
			lines := map[string]bool{}
			for _, l := range r.Trace.LogLines() {
				lines[l] = true
			}
			for _, l := range c.lines {
				if !lines[l] {
					t.Errorf("missing the post's line %q", l)
				}
			}
			if got := r.Fields[c.field]; got != c.want {
				t.Errorf("%s = %v, want %v", c.field, got, c.want)
			}
		})
	}
	t.Run("empty-file has no leader", func(t *testing.T) {
		s, _ := Lookup("empty-file")
		r, _ := s.Run(Options{})
		if r.Fields["leaders"] != 0 {
			t.Errorf("leaders = %v, want 0", r.Fields["leaders"])
		}
		for _, l := range r.Trace.LogLines() {
			if !strings.HasSuffix(l, "Could not read lease file, will retry") {
				t.Errorf("unexpected line %q", l)
			}
		}
	})
}

// The race experiments: the naive variant elects two leaders in some
// trials, the O_EXCL one never.
func TestRaceScenarios(t *testing.T) {
	for _, c := range []struct {
		name      string
		wantMulti bool
	}{{"naive-race", true}, {"excl-race", false}} {
		s, _ := Lookup(c.name)
		r, err := s.Run(Options{})
		if err != nil {
			t.Fatal(err)
		}
		multi := r.Fields["trials_with_multiple_leaders"].(int)
		if (multi > 0) != c.wantMulti {
			t.Errorf("%s: %d trials with more than one leader, want some: %v", c.name, multi, c.wantMulti)
		}
		if r.Fields["trials"] != 30 || r.Fields["trials_not_one_leader"].(int) != multi {
			t.Errorf("%s: fields %v", c.name, r.Fields)
		}
	}
	// The same experiment on the other variant swaps the verdicts.
	s, _ := Lookup("excl-race")
	r, err := s.Run(Options{Variant: "seed-naive"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Fields["variant"] != "seed-naive" {
		t.Errorf("variant = %v", r.Fields["variant"])
	}
}

// The worst gap is not the post's 12 s: whole-second expiry adds up to a
// second, and a kill between a renewal's truncate and write wedges.
func TestWorstGap(t *testing.T) {
	if testing.Short() {
		t.Skip("searches ~4000 runs")
	}
	s, _ := Lookup("worst-gap")
	r, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	gap := r.Fields["worst_gap_s"].(float64)
	if gap <= 12 || gap > 13 {
		t.Errorf("worst gap %v s, want in (12, 13]: lease 9 s + up to 1 s of whole-second rounding + watch 3 s", gap)
	}
	wedges := r.Fields["wedging_kills"].([]string)
	if len(wedges) != 1 || !strings.HasPrefix(wedges[0], "open-trunc") {
		t.Errorf("wedging kills %v, want exactly the one after the renewal's open(O_TRUNC)", wedges)
	}
}

func TestLookupScenario(t *testing.T) {
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "kill-leader") {
		t.Errorf("error %v should name the valid scenarios", err)
	}
	s, _ := Lookup("steady")
	if _, err := s.Run(Options{Variant: "nope"}); err == nil || !strings.Contains(err.Error(), "seed-naive") {
		t.Errorf("error %v should name the valid variants", err)
	}
}

// The naive race's rate over 1,000 trials of the scenario's launch model,
// the README's "60 / 1000": its first 30 trials are the scenario's 2 / 30.
func TestNaiveRaceRate(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 trials of 30 processes")
	}
	multi := 0
	for k := range 1000 {
		cfg := RaceTrial(Options{Variant: "seed-naive"}, 1, k)
		tr, err := prepare(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if tr.MaxConcurrentLeaders() > 1 {
			multi++
		}
	}
	if multi != 60 {
		t.Errorf("%d / 1000 trials with more than one leader; the README says 60 / 1000", multi)
	}
}

// The reference algorithm's watchers are notified of every renewal and
// time the lease from when they saw it, so after a SIGKILL a watcher takes
// over one lease after the last renewal it saw (9.53 s + 9 s = 18.53 s,
// 6.53 s after the kill at 12.00 s), not a lease plus a watch interval
// after it; after a SIGTERM the leader releases and a watcher acquires at
// once.
func TestReferenceFailover(t *testing.T) {
	for _, c := range []struct {
		name     string
		min, max float64
	}{{"kill-leader", 6.53, 6.53}, {"term-leader", 0, 0.01}} {
		s, _ := Lookup(c.name)
		r, err := s.Run(Options{Variant: "reference"})
		if err != nil {
			t.Fatal(err)
		}
		gap, ok := r.Fields["leaderless_gap_s"].(float64)
		if !ok || gap < c.min || gap > c.max {
			t.Errorf("%s on reference: leaderless gap %v s, want in [%v, %v]", c.name, r.Fields["leaderless_gap_s"], c.min, c.max)
		}
		if r.Fields["max_leaders"] != 1 || r.Fields["leaders"] != 2 {
			t.Errorf("%s on reference: fields %v, want one leader at a time and two in all", c.name, r.Fields)
		}
	}
}
