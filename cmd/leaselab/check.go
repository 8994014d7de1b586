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
)

// setupFlags are the flags that, with a seed, determine a run's setup;
// check and replay share them so that a replay line reproduces its run.
type setupFlags struct {
	variant, faults, scheduler string
	procs                      int
	maxDrift, driftBound       float64
	lease                      lease.Config
}

func (f *setupFlags) register(fs *flag.FlagSet, faultsDefault string) {
	fs.StringVar(&f.variant, "variant", "seed", "variant to check (valid: "+lease.VariantNames()+")")
	fs.IntVar(&f.procs, "procs", 0, "processes per run (0: 2 to 5, drawn per run)")
	fs.StringVar(&f.faults, "faults", faultsDefault, "fault kinds: comma list of kill,term,stop,skew,drift,jump,fserr, or all, or none")
	fs.StringVar(&f.scheduler, "scheduler", "random", "order of same-instant steps: random or pct")
	fs.Float64Var(&f.maxDrift, "max-drift", 0.001, "largest clock rate error, as a fraction")
	intervalFlags(fs, &f.lease, lease.DefaultConfig())
	fs.DurationVar(&f.lease.RenewDeadline, "renew-deadline", 0, "the reference's local deadline (0: derived from the lease and -drift-bound)")
	fs.Float64Var(&f.driftBound, "drift-bound", 0, "the drift bound the reference is configured for, as a fraction (0: 0.01)")
}

func (f *setupFlags) options() (sim.SetupOptions, error) {
	kinds, err := sim.ParseFaults(f.faults)
	if err != nil {
		return sim.SetupOptions{}, usagef("-faults: %v", err)
	}
	if f.maxDrift < 0 || f.maxDrift >= 1 {
		return sim.SetupOptions{}, usagef("-max-drift %v: want a fraction in [0, 1)", f.maxDrift)
	}
	if f.driftBound < 0 || f.driftBound >= 1 {
		return sim.SetupOptions{}, usagef("-drift-bound %v: want a fraction in [0, 1)", f.driftBound)
	}
	f.lease.MaxDriftPPM = int64(f.driftBound*1e6 + 0.5)
	o := sim.SetupOptions{Variant: f.variant, Procs: f.procs, Faults: kinds, MaxDriftPPM: int64(f.maxDrift*1e6 + 0.5),
		Lease: f.lease, Scheduler: f.scheduler}
	if o.MaxDriftPPM == 0 {
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
	runs := fs.Int("runs", 1000, "runs per variant")
	seed := fs.Uint64("seed", 1, "search seed: run i's seed is derived from it")
	keep := fs.Bool("keep-going", false, "run all -runs instead of stopping at the first violation")
	props := fs.String("props", "all", "properties to check (comma list)")
	smallest := fs.Bool("smallest", false, "report, per property, only the smallest violating run (with -keep-going: of all -runs)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	markdown := fs.Bool("markdown", false, "print the verdict table (variants by properties) that the README keeps")
	byFault := fs.Bool("by-fault", false, "search each fault kind of -faults (and none) separately")
	htmlDir := fs.String("html-dir", os.TempDir(), "where to write porcupine's visualisation of a linearizable-store violation")
	outPath := fs.String("o", "", "write the first violating run as an HTML timeline to `FILE`")
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
	type job struct{ variant, faults string }
	var jobs []job
	for _, v := range variants {
		for _, f := range faultSets {
			jobs = append(jobs, job{v, f})
		}
	}
	var reports []map[string]any
	found := false
	bar := newProgress(stderr, int64(*runs*len(jobs)), "runs", *asJSON || *markdown)
	doneBefore, foundBefore := 0, 0
	for _, jb := range jobs {
		sf.variant, sf.faults = jb.variant, jb.faults
		o, err := sf.options()
		if err != nil {
			return err
		}
		rep, err := spec.Search{Setup: o, Runs: *runs, Seed: *seed, KeepGoing: *keep, Properties: want, Smallest: *smallest}.Run(func(done, n int) {
			bar.set(int64(doneBefore+done), fmt.Sprintf("%d violations", foundBefore+n))
		})
		if err != nil {
			return err
		}
		doneBefore += rep.Runs
		foundBefore += len(rep.Found)
		if *outPath != "" && !found && len(rep.Found) > 0 {
			f := rep.Found[0]
			verdicts := spec.Check(f.Trace)
			hrefs := map[string]string{}
			for _, v := range verdicts {
				if v.Violation != nil && v.Violation.HTML != nil {
					p := strings.TrimSuffix(*outPath, ".html") + "-porcupine.html"
					if err := v.Violation.HTML(p); err == nil {
						hrefs[v.Property] = filepath.Base(p)
					}
				}
			}
			if err := writeTimelineFile(*outPath, f.Trace, verdicts, fmt.Sprintf("leaselab: %s, seed %d", rep.Variant, f.RunSeed), hrefs); err != nil {
				return usagef("-o %s: %v", *outPath, err)
			}
		}
		found = found || len(rep.Found) > 0
		j := reportJSON(rep, o, *htmlDir)
		reports = append(reports, j)
		if !*asJSON && !*markdown {
			printReport(stdout, rep, o, j)
		}
	}
	bar.done()
	if *markdown {
		writeVerdicts(stdout, reports)
		return nil
	}
	if *asJSON {
		if len(reports) == 1 {
			writeJSON(stdout, reports[0])
		} else {
			writeJSON(stdout, map[string]any{"variants": reports})
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

func reportJSON(rep spec.Report, o sim.SetupOptions, htmlDir string) map[string]any {
	vs := []map[string]any{}
	for i, f := range rep.Found {
		v := map[string]any{"property": f.Property, "seed": f.RunSeed, "run": f.Run,
			"at_s": f.At.Seconds(), "pids": f.PIDs, "detail": f.Detail, "replay": f.Replay}
		if f.HTML != nil && i == firstOf(rep.Found, f.Property) {
			path := filepath.Join(htmlDir, fmt.Sprintf("leaselab-%s-%d.html", rep.Variant, f.RunSeed))
			if err := f.HTML(path); err == nil {
				v["html"] = path
			} else {
				v["html_error"] = err.Error()
			}
		}
		vs = append(vs, v)
	}
	rps := 0.0
	if rep.Elapsed > 0 {
		rps = float64(rep.Runs) / rep.Elapsed.Seconds()
	}
	return map[string]any{"variant": rep.Variant, "runs": rep.Runs, "faults": sim.FaultNames(o.Faults),
		"scheduler": o.Scheduler, "violations": vs, "counts": rep.Counts, "runs_per_s": rps,
		"wall_s": rep.Elapsed.Seconds()}
}

func firstOf(fs []spec.Found, prop string) int {
	for i, f := range fs {
		if f.Property == prop {
			return i
		}
	}
	return -1
}

func printReport(w io.Writer, rep spec.Report, o sim.SetupOptions, j map[string]any) {
	fmt.Fprintf(w, "# check %s: %d runs, faults %s, scheduler %s\n", rep.Variant, rep.Runs, sim.FaultNames(o.Faults), o.Scheduler)
	vs := j["violations"].([]map[string]any)
	for i, f := range rep.Found {
		fmt.Fprintf(w, "VIOLATION %s in run %d (seed %d) at %s\n  %s\n", f.Property, f.Run, f.RunSeed, fmtSecs(f.At), f.Detail)
		fmt.Fprintf(w, "  setup: %s\n", f.Trace.Config)
		for _, l := range f.Trace.Excerpt(f.At-2*o.Lease.WatchInterval-o.Lease.RenewInterval, f.At+time.Millisecond) {
			fmt.Fprintf(w, "    %s\n", l)
		}
		if p, ok := vs[i]["html"]; ok {
			fmt.Fprintf(w, "  porcupine: %s\n", p)
		}
		fmt.Fprintf(w, "  replay: %s\n", f.Replay)
	}
	var counts []string
	for _, p := range spec.Properties {
		if n := rep.Counts[p]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", p, n))
		}
	}
	summary := "no violation"
	if len(counts) > 0 {
		summary = "runs with violations: " + strings.Join(counts, ", ")
	}
	fmt.Fprintf(w, "# %d runs in %.2f s (%.0f runs/s): %s\n", rep.Runs, rep.Elapsed.Seconds(), j["runs_per_s"], summary)
}

func fmtSecs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
}

func cmdReplay(args []string, stdout io.Writer) error { return replayOrViz("replay", args, stdout) }

// cmdViz draws one simulated run as an HTML timeline: replay's flags,
// with -o required.
func cmdViz(args []string, stdout io.Writer) error { return replayOrViz("viz", args, stdout) }

func replayOrViz(name string, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var sf setupFlags
	sf.register(fs, "all")
	seed := fs.Uint64("seed", 0, "the run's seed, as check printed it")
	expect := fs.String("expect", "", "the setup fingerprint check printed; replay refuses a setup that differs")
	asJSON := fs.Bool("json", false, "print one JSON object")
	trace := fs.Bool("trace", false, "print every event, not only the log and faults")
	htmlPath := fs.String("html", "", "write porcupine's visualisation here if the store history is not linearizable")
	decisions := fs.String("decisions", "", "replay a recorded decision list (a property test prints one) instead of -seed")
	outPath := fs.String("o", "", "write the run as an HTML timeline to `FILE`")
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
		return usagef("replay needs -seed (from the replay line check printed) or -decisions FILE, not both")
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
		_, list, err := sim.ReadDecisions(f)
		f.Close()
		if err != nil {
			return usagef("%s: %v", *decisions, err)
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
	if dec != nil {
		if err := dec.Err(); err != nil {
			return usagef("setup mismatch: %s does not replay with these flags: %v", *decisions, err)
		}
	}
	var full strings.Builder
	tr.WriteTrace(&full)
	sum := sha256.Sum256([]byte(full.String()))
	var vs []map[string]any
	var found []*spec.Violation
	for _, v := range spec.Check(tr) {
		if v.Violation != nil {
			found = append(found, v.Violation)
			m := map[string]any{"property": v.Property, "at_s": v.Violation.At.Seconds(), "pids": v.Violation.PIDs, "detail": v.Violation.Detail}
			if v.Violation.HTML != nil && *htmlPath != "" {
				if err := v.Violation.HTML(*htmlPath); err != nil {
					return fmt.Errorf("writing %s: %w", *htmlPath, err)
				}
				m["html"] = *htmlPath
			}
			vs = append(vs, m)
		}
	}
	if *outPath != "" {
		verdicts := spec.Check(tr)
		hrefs := map[string]string{}
		for _, v := range verdicts {
			if v.Violation != nil && v.Violation.HTML != nil {
				p := strings.TrimSuffix(*outPath, ".html") + "-porcupine.html"
				if err := v.Violation.HTML(p); err == nil {
					hrefs[v.Property] = filepath.Base(p)
				}
			}
		}
		title := fmt.Sprintf("leaselab: %s, seed %d", o.Variant, *seed)
		if dec != nil {
			title = fmt.Sprintf("leaselab: %s, decisions %s", o.Variant, filepath.Base(*decisions))
		}
		if err := writeTimelineFile(*outPath, tr, verdicts, title, hrefs); err != nil {
			return usagef("-o %s: %v", *outPath, err)
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
			fmt.Fprintf(stdout, "wrote %s (%s)\n", *outPath, what)
			return nil
		}
	}
	if *asJSON {
		if vs == nil {
			vs = []map[string]any{}
		}
		writeJSON(stdout, map[string]any{"variant": o.Variant, "seed": *seed, "setup": tr.Config.String(),
			"violations": vs, "trace_sha256": hex.EncodeToString(sum[:]), "events": len(tr.Events)})
		return nil
	}
	if dec == nil {
		fmt.Fprintf(stdout, "# replay %s\n", spec.ReplayCommand(o, *seed))
	}
	fmt.Fprintf(stdout, "# setup: %s\n", tr.Config)
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
	fmt.Fprintf(stdout, "# trace sha256 %s\n", hex.EncodeToString(sum[:]))
	return nil
}

// writeVerdicts renders check's JSON reports as the README's verdict
// table: a row per variant, a column per property, each cell "holds in N
// runs", "n/a" or "broken" with the smallest replay found.
func writeVerdicts(w io.Writer, reports []map[string]any) {
	fmt.Fprintf(w, "| variant (faults) | %s |\n|---|%s\n", strings.Join(spec.Properties, " | "), strings.Repeat("---|", len(spec.Properties)))
	for _, r := range reports {
		v, _ := lease.LookupVariant(r["variant"].(string))
		label := "`" + v.Name + "`"
		if f := r["faults"].(string); f != "all" {
			label += " " + f
		}
		fmt.Fprintf(w, "| %s |", label)
		for _, p := range spec.Properties {
			cell := fmt.Sprintf(" holds in %d runs |", r["runs"])
			if p == spec.Fencing && !v.Epochs {
				cell = " n/a (no epochs) |"
			}
			if p == spec.LinearizableStore && strings.Contains(r["faults"].(string), "power") && !v.ServerTTL {
				cell = " n/a (across a power loss) |"
			}
			for _, x := range r["violations"].([]map[string]any) {
				if x["property"] == p {
					cell = fmt.Sprintf(" broken: `%s` |", x["replay"])
					break
				}
			}
			io.WriteString(w, cell)
		}
		io.WriteString(w, "\n")
	}
}
