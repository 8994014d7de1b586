package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// setupFlags are the flags that, with a seed, determine a run's setup;
// check and replay share them so that a replay line reproduces its run.
type setupFlags struct {
	variant, faults, scheduler string
	procs                      int
	maxDrift, driftBound       float64
	lease                      lease.Config
	horizon                    time.Duration
}

func (f *setupFlags) register(fs *flag.FlagSet, faultsDefault string) {
	fs.StringVar(&f.variant, "variant", "seed", "variant to check (valid: "+lease.VariantNames()+")")
	fs.IntVar(&f.procs, "procs", 0, "processes per run (0: 2 to 5, drawn per run)")
	fs.StringVar(&f.faults, "faults", faultsDefault, "fault kinds: comma list of kill,term,stop,skew,drift,jump,fserr,emfile,power,diskfull,eio,stall,nobootid,samepid,notice, or all (every one; a run over three or more draws a subset: swarm), or none; and lose (a lease server restarted without its data: server variants, only when named)")
	fs.StringVar(&f.scheduler, "scheduler", "mixed", "order of same-instant steps: random, pct, or mixed (each run draws one of the two)")
	fs.Float64Var(&f.maxDrift, "max-drift", -1, "largest clock rate error, as a fraction (-1: the drift bound the algorithm is configured for, -drift-bound, 0.01 unless set)")
	intervalFlags(fs, &f.lease, lease.DefaultConfig())
	fs.DurationVar(&f.lease.RenewDeadline, "renew-deadline", 0, "the reference's local deadline (0: derived from the lease and -drift-bound)")
	fs.Float64Var(&f.driftBound, "drift-bound", 0, "the drift bound the reference is configured for, as a fraction (0: 0.01)")
	fs.DurationVar(&f.horizon, "horizon", 0, "simulated length of each run, up to 24h (0: four leases and watch intervals; a stretch or power loss drawn late lengthens it)")
}

func (f *setupFlags) options() (sim.SetupOptions, error) {
	kinds, err := sim.ParseFaults(f.faults)
	if err != nil {
		return sim.SetupOptions{}, usagef("-faults: %v", err)
	}
	if f.maxDrift != -1 && (f.maxDrift < 0 || f.maxDrift >= 1) {
		return sim.SetupOptions{}, usagef("-max-drift %v: want a fraction in [0, 1), or -1 for the drift bound", f.maxDrift)
	}
	if f.driftBound < 0 || f.driftBound >= 1 {
		return sim.SetupOptions{}, usagef("-drift-bound %v: want a fraction in [0, 1)", f.driftBound)
	}
	f.lease.DriftBoundPPM = int64(f.driftBound*1e6 + 0.5)
	o := sim.SetupOptions{Variant: f.variant, Procs: f.procs, Faults: kinds, MaxDriftPPM: int64(f.maxDrift*1e6 + 0.5),
		Lease: f.lease, Scheduler: f.scheduler, Horizon: f.horizon}
	switch {
	case f.maxDrift == -1:
		o.MaxDriftPPM = 0 // Normalize: the drift bound
	case o.MaxDriftPPM == 0:
		o.MaxDriftPPM = 1 // 0 would mean the default; a drift bound of 1 ppm is as good as none
	}
	if err := o.Normalize(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	var sf setupFlags
	sf.register(fs, "all")
	all := fs.Bool("all", false, "check every variant")
	runs := fs.Int("runs", 10000, "runs per variant (a search stops at the first violating run unless -keep-going)")
	seed := fs.Uint64("seed", 1, "search seed: run i's seed is derived from it")
	keep := fs.Bool("keep-going", false, "run all -runs instead of stopping at the first violation")
	props := fs.String("props", "all", "properties to check: comma list of "+strings.Join(spec.Properties, ",")+", or all")
	smallest := fs.Bool("smallest", false, "report, per property, only the smallest violating run (with -keep-going: of all -runs)")
	show := fs.Int("show", spec.DefaultKeep, "violating runs to print per property, the first found (the others are counted)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	markdown := fs.Bool("markdown", false, "print the verdict table (variants by properties) that the README keeps")
	byFault := fs.Bool("by-fault", false, "search each fault kind of -faults (and none) separately")
	var out outDir
	out.register(fs, "porcupine's page of each linearizable-store violation")
	outPath := fs.String("o", "", "write the first violating run as an HTML timeline to `FILE` (and porcupine's page, if any, beside it)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("check takes flags only (got %s)", strings.Join(pos, " "))
	}
	if *runs <= 0 {
		return usagef("-runs %d: want at least 1", *runs)
	}
	if *show <= 0 {
		return usagef("-show %d: want at least 1", *show)
	}
	want, err := spec.ParseProperties(*props)
	if err != nil {
		return usagef("-props: %v", err)
	}
	variants := strings.Split(sf.variant, ",")
	if *all {
		variants = nil
		for _, v := range lease.Variants() {
			variants = append(variants, v.Name)
		}
	}
	faultSets := []string{sf.faults}
	if *byFault {
		kinds, err := sim.ParseFaults(sf.faults)
		if err != nil {
			return usagef("-faults: %v", err)
		}
		faultSets = []string{"none"}
		for _, k := range kinds {
			faultSets = append(faultSets, k.String())
		}
	}
	type job struct {
		variant, faults string
		o               sim.SetupOptions
	}
	var jobs []job
	for _, v := range variants {
		for _, f := range faultSets {
			if lv, err := lease.LookupVariant(v); *byFault && f == trace.Notice.String() && err == nil && !lv.Claims.Pushed {
				continue // its store sends no notices
			}
			sf.variant, sf.faults = v, f
			o, err := sf.options()
			if err != nil {
				return err
			}
			jobs = append(jobs, job{v, f, o})
		}
	}
	var reports []searchReport
	var timeline []string // written by -o
	found := false
	bar := newProgress(stderr, int64(*runs*len(jobs)), "runs", *asJSON || *markdown)
	doneBefore, foundBefore := 0, 0
	for _, jb := range jobs {
		search := spec.Search{Setup: jb.o, Runs: *runs, Seed: *seed, KeepGoing: *keep, Properties: want, Smallest: *smallest, Keep: *show, DropTraces: true}
		rep, err := search.Run(func(done, n int) {
			bar.set(int64(doneBefore+done), fmt.Sprintf("%d violations", foundBefore+n))
		})
		if err != nil {
			return err
		}
		again, same, err := search.Replays(rep)
		if err != nil {
			return err
		}
		doneBefore += rep.Runs
		foundBefore += len(rep.Found)
		if *outPath != "" && !found && len(rep.Found) > 0 {
			f := rep.Found[0]
			if timeline, err = writeTimelinePage(*outPath, f.Trace, f.Verdicts, fmt.Sprintf("leaselab: %s, seed %d", rep.Variant, f.RunSeed)); err != nil {
				return usagef("-o %s: %v", *outPath, err)
			}
		}
		found = found || len(rep.Found) > 0
		r := newSearchReport(rep, jb.o, *runs, &out)
		r.Replays, r.RunAgain = same, again
		reports = append(reports, r)
		if !*asJSON && !*markdown {
			printReport(stdout, rep, jb.o, r, *smallest)
		} else if *markdown && !same {
			// The verdict table has no line for it: a table whose runs
			// no seed replays says so on standard error.
			fmt.Fprintf(stderr, "leaselab: WARNING: %s: run %d, simulated again with its seed, gave another trace: its runs do not replay exactly\n", rep.Variant, again)
		}
	}
	bar.done()
	if len(timeline) > 0 && !*asJSON && !*markdown {
		fmt.Fprintf(stdout, "# the first violating run drawn: %s\n", strings.Join(timeline, ", "))
	}
	if *markdown {
		writeVerdicts(stdout, reports)
		return nil
	}
	if *asJSON {
		var err error
		if len(reports) == 1 {
			err = writeJSON(stdout, reports[0])
		} else {
			err = writeJSON(stdout, struct {
				Variants []searchReport `json:"variants"`
			}{reports})
		}
		if err != nil {
			return err
		}
	}
	if found {
		return errViolation
	}
	return nil
}

// errViolation makes the exit status 1 without another message.
var errViolation = silentError{}

type silentError struct{}

func (silentError) Error() string { return "" }

// searchReport is check's report on one variant and fault set, as -json
// prints it.
type searchReport struct {
	Variant   string `json:"variant"`
	Runs      int    `json:"runs"`       // runs done
	RunsAsked int    `json:"runs_asked"` // -runs
	Faults    string `json:"faults"`
	Scheduler string `json:"scheduler"`
	// Violations are the violating runs kept: per property the first
	// -show found (or, with -smallest, the smallest).
	Violations []searchViolation `json:"violations"`
	// Counts is how many runs violated each property; NotShown how many
	// of those are not in Violations.
	Counts   map[string]int `json:"counts"`
	NotShown map[string]int `json:"not_shown"`
	RunsPerS float64        `json:"runs_per_s"`
	WallS    float64        `json:"wall_s"`
	// Coverage is what the runs done exercised (spec.Coverage).
	Coverage coverageJSON `json:"coverage"`
	// Replays says whether run RunAgain (the first violating run shown,
	// else run 0), simulated again, gave the same trace (spec.Search.Replays).
	Replays  bool `json:"replays"`
	RunAgain int  `json:"run_again"`
	// notApplicable is the search's Report.NotApplicable, for the
	// verdict table.
	notApplicable map[string]string
}

// coverageJSON is spec.Coverage as -json prints it.
type coverageJSON struct {
	Terms   int `json:"leader_terms"`
	Changed int `json:"runs_leader_changed"`
	// Faults is, per fault kind drawn, in how many runs it was drawn,
	// took effect, and found no leader to hit.
	Faults map[string]kindJSON `json:"faults"`
}

type kindJSON struct {
	Drawn    int `json:"runs_drawn"`
	Fired    int `json:"runs_in_effect"`
	NoLeader int `json:"runs_no_leader,omitempty"`
}

func toCoverageJSON(c spec.Coverage) coverageJSON {
	out := coverageJSON{Terms: c.Terms, Changed: c.Changed, Faults: map[string]kindJSON{}}
	for _, k := range c.Kinds {
		out.Faults[k.Kind.String()] = kindJSON{Drawn: k.Drawn, Fired: k.Fired, NoLeader: k.NoLeader}
	}
	return out
}

type searchViolation struct {
	Property  string  `json:"property"`
	Seed      uint64  `json:"seed"`
	Run       int     `json:"run"`
	AtS       float64 `json:"at_s"`
	PIDs      []int   `json:"pids"`
	Detail    string  `json:"detail"`
	Replay    string  `json:"replay"`
	HTML      string  `json:"html,omitempty"`       // porcupine's page, written into -out-dir
	HTMLError string  `json:"html_error,omitempty"` // why it could not be written
}

// newSearchReport reports rep, writing porcupine's page of the first
// linearizable-store violation of the report into out.
func newSearchReport(rep spec.Report, o sim.SetupOptions, asked int, out *outDir) searchReport {
	r := searchReport{Variant: rep.Variant, Runs: rep.Runs, RunsAsked: asked, Faults: sim.FaultNames(o.Faults), Scheduler: o.Scheduler,
		Coverage:   toCoverageJSON(rep.Coverage),
		Violations: []searchViolation{}, Counts: rep.Counts, NotShown: map[string]int{}, WallS: rep.Elapsed.Seconds(),
		notApplicable: rep.NotApplicable}
	if rep.Elapsed > 0 {
		r.RunsPerS = float64(rep.Runs) / rep.Elapsed.Seconds()
	}
	kept := map[string]int{}
	for _, f := range rep.Found {
		kept[f.Property]++
		v := searchViolation{Property: f.Property, Seed: f.RunSeed, Run: f.Run, AtS: f.At.Seconds(), PIDs: f.PIDs, Detail: f.Detail, Replay: f.Replay}
		if f.HTML != nil && kept[f.Property] == 1 {
			path, err := out.path(fmt.Sprintf("porcupine-%s-%d.html", rep.Variant, f.RunSeed))
			if err == nil {
				err = f.HTML(path)
			}
			if err == nil {
				v.HTML = path
			} else {
				v.HTMLError = err.Error()
			}
		}
		r.Violations = append(r.Violations, v)
	}
	for p, n := range rep.Counts {
		if n > kept[p] {
			r.NotShown[p] = n - kept[p]
		}
	}
	return r
}

func printReport(w io.Writer, rep spec.Report, o sim.SetupOptions, r searchReport, smallest bool) {
	runs := fmt.Sprintf("%d runs", rep.Runs)
	if rep.Runs < r.RunsAsked {
		runs = fmt.Sprintf("%d of %d runs (stopped at the first violating run; -keep-going runs them all)", rep.Runs, r.RunsAsked)
	}
	fmt.Fprintf(w, "# check %s: %s, faults %s, scheduler %s\n", rep.Variant, runs, sim.FaultNames(o.Faults), o.Scheduler)
	for i, f := range rep.Found {
		fmt.Fprintf(w, "VIOLATION %s in run %d (seed %d) at %s\n  %s\n", f.Property, f.Run, f.RunSeed, fmtSecs(f.At), f.Detail)
		fmt.Fprintf(w, "  setup: %s\n", f.Setup)
		for _, l := range f.Excerpt {
			fmt.Fprintf(w, "    %s\n", l)
		}
		if p := r.Violations[i].HTML; p != "" {
			fmt.Fprintf(w, "  porcupine: %s\n", p)
		} else if e := r.Violations[i].HTMLError; e != "" {
			fmt.Fprintf(w, "  porcupine: not written: %s\n", e)
		}
		fmt.Fprintf(w, "  replay: %s\n", f.Replay)
	}
	var counts, hidden []string
	most := 0
	for _, p := range spec.Properties {
		if n := rep.Counts[p]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", p, n))
		}
		if n := r.NotShown[p]; n > 0 {
			hidden = append(hidden, fmt.Sprintf("%s %d", p, n))
			most = max(most, rep.Counts[p])
		}
	}
	if len(hidden) > 0 {
		how := fmt.Sprintf("-show %d prints them all", most)
		if smallest {
			how = fmt.Sprintf("-smallest prints the smallest of each; without it -show %d prints them all", most)
		}
		fmt.Fprintf(w, "# violating runs not printed: %s (%s)\n", strings.Join(hidden, ", "), how)
	}
	summary := "no violation"
	if len(counts) > 0 {
		summary = "runs with violations: " + strings.Join(counts, ", ")
	}
	fmt.Fprintf(w, "# %d runs in %.2f s (%.0f runs/s): %s\n", rep.Runs, rep.Elapsed.Seconds(), r.RunsPerS, summary)
	fmt.Fprintf(w, "# exercised: %s\n", rep.Coverage)
	if !r.Replays {
		fmt.Fprintf(w, "# WARNING: run %d, simulated again with its seed, gave another trace: the variant's code reaches outside the simulator "+
			"(a goroutine started with go, the global math/rand, time.Now, a map's order), so its runs, and the replay lines above, do not replay exactly\n", r.RunAgain)
	}
	if ks := rep.Coverage.Unexercised(unexercisedMin); len(ks) > 0 {
		fmt.Fprintf(w, "# not exercised: %s drawn in %d runs or more, in effect in none: this search did not inflict it\n", sim.FaultNames(ks), unexercisedMin)
	}
}

// unexercisedMin is how many runs must have drawn a fault kind that took
// effect in none before check says it was not exercised.
const unexercisedMin = 20

func fmtSecs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
}

// cmdReplay replays one simulated run; it exits 1 when the run breaks a
// property, as check does.
func cmdReplay(args []string, stdout, _ io.Writer) error { return replayOrViz("replay", args, stdout) }

// cmdViz draws one simulated run as an HTML timeline: replay's setup
// flags, with -o required. It exits 0 once the page is written, whatever
// the run broke.
func cmdViz(args []string, stdout, _ io.Writer) error { return replayOrViz("viz", args, stdout) }

func replayOrViz(name string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var sf setupFlags
	sf.register(fs, "all")
	seed := fs.Uint64("seed", 0, "the run's seed, as check printed it")
	expect := fs.String("expect", "", "the setup fingerprint check printed; replay refuses a setup that differs")
	decisions := fs.String("decisions", "", "replay a recorded decision list (a property test prints one) instead of -seed")
	var asJSON, trace *bool
	if name == "replay" {
		asJSON = fs.Bool("json", false, "print one JSON object")
		trace = fs.Bool("trace", false, "print every event, not only the log and faults")
	}
	outPath := fs.String("o", "", "write the run as an HTML timeline to `FILE` (with a linearizable-store violation, porcupine's page beside it, linked)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("%s takes flags only (got %s)", name, strings.Join(pos, " "))
	}
	if name == "viz" && *outPath == "" {
		return usagef("viz needs -o FILE.html")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["seed"] == (*decisions != "") {
		return usagef("%s needs -seed (from the replay line check printed) or -decisions FILE, not both", name)
	}
	o, err := sf.options()
	if err != nil {
		return err
	}
	var cfg sim.Config
	var dec *sim.Decisions
	if *decisions != "" {
		f, err := os.Open(*decisions)
		if err != nil {
			return usagef("%v", err)
		}
		header, list, err := sim.ReadDecisions(f)
		f.Close()
		if err != nil {
			return usagef("%s: %v", *decisions, err)
		}
		if err := sameSetup(*decisions, header, spec.SetupFlags(o)); err != nil {
			return err
		}
		dec = &sim.Decisions{List: list}
		cfg = sim.SetupFrom(o, dec)
		cfg.Chooser = dec
	} else {
		if h := spec.SetupHash(o, *seed); *expect != "" && h != *expect {
			return usagef("setup mismatch: -seed %d with these flags gives setup %s, not %s; use the whole replay line check printed", *seed, h, *expect)
		}
		cfg = sim.RandomSetup(o, *seed)
	}
	tr, err := sim.Run(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	cfg.Normalize() // as Run did: the setup the report prints
	if dec != nil {
		if err := dec.Err(); err != nil {
			return usagef("setup mismatch: %s does not replay with these flags: %v", *decisions, err)
		}
	}
	verdicts := spec.Check(tr)
	var found []*spec.Violation
	for _, v := range verdicts {
		if v.Violation != nil {
			found = append(found, v.Violation)
		}
	}
	var written []string
	if *outPath != "" {
		title := fmt.Sprintf("leaselab: %s, seed %d", o.Variant, *seed)
		if dec != nil {
			title = fmt.Sprintf("leaselab: %s, decisions %s", o.Variant, filepath.Base(*decisions))
		}
		if written, err = writeTimelinePage(*outPath, tr, verdicts, title); err != nil {
			return usagef("-o %s: %v", *outPath, err)
		}
	}
	if name == "viz" {
		what := "no violation"
		if len(found) > 0 {
			var ps []string
			for _, v := range found {
				ps = append(ps, v.Property)
			}
			what = "violations: " + strings.Join(ps, ", ")
		}
		fmt.Fprintf(stdout, "wrote %s (%s)\n", strings.Join(written, ", "), what)
		return nil
	}
	var full strings.Builder
	tr.WriteTrace(&full)
	sum := sha256.Sum256([]byte(full.String()))
	if *asJSON {
		type violation struct {
			Property string  `json:"property"`
			AtS      float64 `json:"at_s"`
			PIDs     []int   `json:"pids"`
			Detail   string  `json:"detail"`
		}
		vs := []violation{}
		for _, v := range found {
			vs = append(vs, violation{v.Property, v.At.Seconds(), v.PIDs, v.Detail})
		}
		err := writeJSON(stdout, struct {
			Variant     string      `json:"variant"`
			Seed        uint64      `json:"seed"`
			Setup       string      `json:"setup"`
			Violations  []violation `json:"violations"`
			TraceSHA256 string      `json:"trace_sha256"`
			Events      int         `json:"events"`
			Written     []string    `json:"written,omitempty"`
		}{o.Variant, *seed, cfg.String(), vs, hex.EncodeToString(sum[:]), len(tr.Events), written})
		if err == nil && len(found) > 0 {
			err = errViolation
		}
		return err
	}
	if dec == nil {
		fmt.Fprintf(stdout, "# replay %s\n", spec.ReplayCommand(o, *seed))
	}
	fmt.Fprintf(stdout, "# setup: %s\n", tr.Setup())
	if *trace {
		io.WriteString(stdout, full.String())
	} else {
		for _, l := range tr.Excerpt(0, tr.End) {
			fmt.Fprintln(stdout, l)
		}
	}
	for _, v := range found {
		fmt.Fprintf(stdout, "VIOLATION %s\n", v)
	}
	if len(found) == 0 {
		fmt.Fprintln(stdout, "# no violation")
	}
	for _, p := range written {
		fmt.Fprintf(stdout, "# wrote %s\n", p)
	}
	fmt.Fprintf(stdout, "# trace sha256 %s\n", hex.EncodeToString(sum[:]))
	if len(found) > 0 {
		return errViolation
	}
	return nil
}

// writeTimelinePage writes tr's timeline, with its verdicts, to path and,
// when the run breaks linearizable-store, porcupine's page of its store history beside it
// (PATH-porcupine.html), linked from the timeline. It returns the paths
// written.
func writeTimelinePage(path string, tr *trace.Trace, verdicts []spec.Verdict, title string) ([]string, error) {
	hrefs := map[string]string{}
	var written []string
	for _, v := range verdicts {
		if v.Violation != nil && v.Violation.HTML != nil {
			p := strings.TrimSuffix(path, ".html") + "-porcupine.html"
			if err := v.Violation.HTML(p); err != nil {
				return nil, err
			}
			hrefs[v.Property] = filepath.Base(p)
			written = append(written, p)
		}
	}
	if err := writeTimelineFile(path, tr, verdicts, title, hrefs); err != nil {
		return nil, err
	}
	return append([]string{path}, written...), nil
}

// writeVerdicts renders check's reports as the README's verdict table: a
// row per variant, a column per property, each cell "holds in N runs",
// "n/a" or "broken" with the first replay found.
func writeVerdicts(w io.Writer, reports []searchReport) {
	fmt.Fprintf(w, "| variant (faults) | %s |\n|---|%s\n", strings.Join(spec.Properties, " | "), strings.Repeat("---|", len(spec.Properties)))
	for _, r := range reports {
		v, _ := lease.LookupVariant(r.Variant)
		label := "`" + v.Name + "`"
		if r.Faults != "all" {
			label += " " + r.Faults
		}
		fmt.Fprintf(w, "| %s |", label)
		for _, p := range spec.Properties {
			cell := fmt.Sprintf(" holds in %d runs |", r.Runs)
			if why, ok := r.notApplicable[p]; ok {
				cell = fmt.Sprintf(" n/a (%s) |", why)
			}
			for _, x := range r.Violations {
				if x.Property == p {
					cell = fmt.Sprintf(" broken: `%s` |", x.Replay)
					break
				}
			}
			io.WriteString(w, cell)
		}
		io.WriteString(w, "\n")
	}
}

// sameSetup refuses a decision file written for other flags than those
// given (its header; a file without one is taken as it is): replayed under
// others, its choices drive another setup, which may well replay without
// the violation, and said "no violation" (a probe: explore's seed file
// under -variant reference, another -horizon or -skews).
func sameSetup(path, header, flags string) error {
	if header == "" || header == flags {
		return nil
	}
	// explore's flags bound a search (-crashes ...), check's and replay's
	// draw a setup (-faults ...): a file of the one is no use to the other.
	switch explore := strings.Contains(header, " -crashes "); {
	case explore && !strings.Contains(flags, " -crashes "):
		return usagef("%s was written by explore: replay it with leaselab explore %s -replay %s", path, header, path)
	case !explore && strings.Contains(flags, " -crashes "):
		return usagef("%s was written for replay: replay it with leaselab replay %s -decisions %s", path, header, path)
	}
	return usagef("setup mismatch: %s was written for %q, not these flags (%q): replay it with its own", path, header, flags)
}
