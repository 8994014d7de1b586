package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
)

// maxEstimate is the largest estimated space explore starts without -force.
const maxEstimate = 5e6

func cmdExplore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	var o spec.ExploreOptions
	fs.StringVar(&o.Variant, "variant", "reference", "variant to explore (valid: "+lease.VariantNames()+")")
	fs.IntVar(&o.Procs, "procs", 2, "processes, all started at the same instant")
	fs.IntVar(&o.Crashes, "crashes", 0, "SIGKILLs per schedule, each at any scheduling point")
	fs.IntVar(&o.Terms, "terms", 0, "SIGTERMs per schedule")
	fs.IntVar(&o.Pauses, "pauses", 0, "pauses per schedule, of three lengths (shorter than renew, between renew and lease, longer than lease)")
	fs.IntVar(&o.FSErrors, "fserrs", 0, "ENOSPC failures injected into file system calls per schedule")
	fs.IntVar(&o.Jumps, "jumps", 0, "wall-clock steps forward by the lease per schedule")
	fs.IntVar(&o.Powers, "powers", 0, "power losses per schedule, each at any scheduling point with every outcome for the disk (journal prefixes, one torn file); every process restarts 1 s later")
	fs.IntVar(&o.Drifts, "drifts", 0, "processes whose clocks run slow or fast by the drift bound the algorithm is configured for (1%)")
	fs.IntVar(&o.Preemptions, "preemptions", 0, "deviations from the default schedule (delay bounding)")
	fs.BoolVar(&o.DPOR, "dpor", false, "every order of dependent same-instant steps, by dynamic partial-order reduction with sleep sets, instead of -preemptions (one core)")
	fs.BoolVar(&o.Merge, "merge", false, "cut a schedule where it reaches a state already searched from, up to the order of independent steps, with no more budget left (one core)")
	fs.DurationVar(&o.Horizon, "horizon", 27*time.Second, "simulated time of each schedule (default three leases)")
	skews := fs.String("skews", "", "wall-clock offsets a process may start with, comma list (e.g. 0,5s)")
	limit := fs.Int("max-schedules", 0, "stop after this many schedules (0: none; the result is then incomplete)")
	force := fs.Bool("force", false, "start even if the estimated space is larger than 5,000,000 schedules")
	asJSON := fs.Bool("json", false, "print one JSON object")
	replay := fs.String("replay", "", "replay one schedule from the decision file a violation printed")
	var out outDir
	out.register(fs, "the decision file of each violation")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("explore takes flags only (got %s)", strings.Join(pos, " "))
	}
	if _, err := lease.LookupVariant(o.Variant); err != nil {
		return err
	}
	if o.Procs < 1 || o.Procs > 8 || o.Crashes < 0 || o.Terms < 0 || o.Pauses < 0 || o.FSErrors < 0 || o.Jumps < 0 || o.Powers < 0 || o.Drifts < 0 || o.Preemptions < 0 {
		return usagef("bounds out of range: want 1 to 8 -procs and budgets of 0 or more")
	}
	// check's limits (a probe: -horizon 1ns explored one empty schedule and
	// said "complete, no violation"; a day took 860 MB for one schedule,
	// and more grows without end).
	if o.Horizon < sim.MinHorizon || o.Horizon > sim.MaxHorizon {
		return usagef("-horizon %v: want a length of simulated time from %v to %v", o.Horizon, sim.MinHorizon, sim.MaxHorizon)
	}
	if *limit < 0 {
		return usagef("-max-schedules %d: want 0 (no limit) or more", *limit)
	}
	if o.DPOR && o.Preemptions != 0 {
		return usagef("-dpor runs every order of dependent steps: it takes no -preemptions bound")
	}
	if o.DPOR && o.Merge {
		return usagef("-merge cuts the delay-bounded search; -dpor has its own reduction: choose one")
	}
	if o.Merge && o.Preemptions > spec.MaxMergeDeviations {
		return usagef("-merge takes at most -preemptions %d", spec.MaxMergeDeviations)
	}
	if *skews != "" {
		var canon []string
		for _, f := range strings.Split(*skews, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				return usagef("-skews: %v", err)
			}
			o.Skews = append(o.Skews, d)
			canon = append(canon, d.String())
		}
		// As the replay lines and decision files say it, one way: a
		// file's header is compared with these flags (sameSetup).
		*skews = strings.Join(canon, ",")
	}
	o.Limit = *limit
	if *replay != "" {
		return exploreReplay(o, exploreFlags(o, *skews), *replay, stdout)
	}
	if o.Merge {
		defer mergeGC()()
	}
	est, steps, err := spec.EstimateSchedules(o)
	if err != nil {
		return usagef("%v", err)
	}
	if o.DPOR {
		est = -1 // the reduction's size is known only by running it
	}
	if est > maxEstimate && !*force && o.Limit == 0 {
		return usagef("these bounds give about %.2g schedules (%d scheduling points per schedule); lower them, set -max-schedules, or pass -force", est, steps)
	}
	total := int64(est)
	if o.Limit > 0 && (total < 0 || int64(o.Limit) < total) {
		total = int64(o.Limit)
	}
	bar := newProgress(stderr, total, "schedules", *asJSON)
	res, err := spec.Explore(o, func(n, found int) {
		bar.set(int64(n), fmt.Sprintf("%d violations", found))
	})
	bar.done()
	if err != nil {
		return err
	}
	flags := exploreFlags(o, *skews)
	vs := []exploreViolation{}
	for _, v := range res.Violations {
		path, err := out.path(fmt.Sprintf("%s-%s.decisions", o.Variant, v.Property))
		if err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		err = sim.WriteDecisions(f, flags, v.Decisions)
		if err1 := f.Close(); err == nil {
			err = err1
		}
		if err != nil {
			return err
		}
		vs = append(vs, exploreViolation{Property: v.Property, Steps: v.Steps, AtS: v.At.Seconds(), Detail: v.Detail,
			Replay: "leaselab explore " + flags + " -replay " + path})
	}
	if *asJSON {
		err := writeJSON(stdout, exploreReport{Variant: o.Variant, Bounds: exploreBounds{
			Procs: o.Procs, Crashes: o.Crashes, Terms: o.Terms, Pauses: o.Pauses, FSErrors: o.FSErrors, Jumps: o.Jumps,
			Powers: o.Powers, Drifts: o.Drifts, Preemptions: o.Preemptions, DPOR: o.DPOR, Merge: o.Merge, HorizonS: o.Horizon.Seconds(), Skews: *skews},
			Schedules: res.Schedules, States: res.Merge.States, Cut: res.Merge.Cut, Complete: res.Complete, Violations: vs,
			WallS: res.Wall.Seconds(), Estimate: est})
		if err == nil && len(res.Violations) > 0 {
			err = errViolation
		}
		return err
	}
	fmt.Fprintf(stdout, "# explore %s: %d schedules in %.2f s (%.0f/s), complete: %v\n", flags, res.Schedules, res.Wall.Seconds(),
		float64(res.Schedules)/res.Wall.Seconds(), res.Complete)
	if o.Preemptions == 0 && !o.DPOR {
		// "complete" is within the bounds; with no preemption the bounds
		// hold the default order only (a probe read "complete: true, no
		// violation" for the seed as a proof). An exploration cut short
		// (-max-schedules) is not complete at all, and says only the order.
		note := "with -preemptions 0 the processes ran in the default order only; -preemptions N or -dpor searches their interleavings"
		if res.Complete {
			note = "complete within its bounds: " + note
		}
		fmt.Fprintln(stdout, "# "+note)
	}
	if o.DPOR {
		fmt.Fprintf(stdout, "# partial-order reduction: %d races, %d runs cut short (every step asleep), %d SIGKILLs and %d pauses not run (their runs would be)\n", res.DPOR.Races, res.DPOR.Blocked, res.DPOR.Pruned, res.DPOR.Pauses)
	}
	if o.Merge {
		fmt.Fprintf(stdout, "# merged: %d runs cut short at a state already searched from, %d states remembered\n", res.Merge.Cut, res.Merge.States)
	}
	for i, v := range res.Violations {
		fmt.Fprintf(stdout, "VIOLATION %s in %d steps\n  %s\n", v.Property, v.Steps, v.Violation.String())
		for _, l := range v.Trace.Excerpt(0, v.At) {
			fmt.Fprintf(stdout, "    %s\n", l)
		}
		fmt.Fprintf(stdout, "  replay: %s\n", vs[i].Replay)
	}
	if len(res.Violations) == 0 {
		fmt.Fprintln(stdout, "# no violation")
	}
	if len(res.Violations) > 0 {
		return errViolation
	}
	return nil
}

// mergeGC sets the collector's target back to Go's default 100 for a
// merged search, unless GOGC is set, and returns what restores it. main's
// 400 is for searches that keep almost nothing; a merged search keeps its
// states, gigabytes at its bounds' end, and its peak is what decides
// whether it runs at all (2026-12-06, `explore -variant flock -procs 2
// -crashes 1 -pauses 1 -preemptions 1 -horizon 6s -merge`: 165 MB and
// 38.4 s at 400, 81 MB and 42.6 s at 100).
func mergeGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(100)
	return func() { debug.SetGCPercent(old) }
}

// exploreFlags are the flags that replay a search's schedules: -powers
// and -drifts only when set, so that the replay lines of searches without
// them read as they always have.
func exploreFlags(o spec.ExploreOptions, skews string) string {
	s := fmt.Sprintf("-variant %s -procs %d -crashes %d -terms %d -pauses %d -fserrs %d -jumps %d -preemptions %d -horizon %v",
		o.Variant, o.Procs, o.Crashes, o.Terms, o.Pauses, o.FSErrors, o.Jumps, o.Preemptions, o.Horizon)
	if o.Powers != 0 {
		s += fmt.Sprintf(" -powers %d", o.Powers)
	}
	if o.Drifts != 0 {
		s += fmt.Sprintf(" -drifts %d", o.Drifts)
	}
	if skews != "" {
		s += " -skews " + skews
	}
	if o.DPOR {
		s += " -dpor"
	}
	return s
}

func exploreReplay(o spec.ExploreOptions, flags, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return usagef("%v", err)
	}
	defer f.Close()
	header, list, err := sim.ReadDecisions(f)
	if err != nil {
		return usagef("%s: %v", path, err)
	}
	if err := sameSetup(path, header, flags); err != nil {
		return err
	}
	d := &sim.Decisions{List: list}
	cfg, err := spec.ExploreConfig(o, d)
	if err != nil {
		return usagef("%v", err)
	}
	tr, err := sim.Run(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	if err := d.Err(); err != nil {
		return usagef("setup mismatch: %s does not replay with these flags: %v", path, err)
	}
	fmt.Fprintf(stdout, "# setup: %s\n", tr.Setup())
	for _, l := range tr.Excerpt(0, tr.End) {
		fmt.Fprintln(stdout, l)
	}
	found := false
	for _, v := range spec.Check(tr) {
		if v.Violation != nil {
			found = true
			fmt.Fprintf(stdout, "VIOLATION %s\n", v.Violation)
		}
	}
	if !found {
		fmt.Fprintln(stdout, "# no violation")
		return nil
	}
	return errViolation
}

// exploreReport is explore -json's object. Fields are in the order of
// their names, as the report has always printed them.
type exploreReport struct {
	Bounds     exploreBounds      `json:"bounds"`
	Complete   bool               `json:"complete"`
	Cut        int                `json:"cut"` // runs cut short at a state already searched from (-merge)
	Estimate   float64            `json:"estimate"`
	Schedules  int                `json:"schedules"`
	States     int                `json:"states"` // states remembered: 0 but with -merge
	Variant    string             `json:"variant"`
	Violations []exploreViolation `json:"violations"`
	WallS      float64            `json:"wall_s"`
}

// exploreBounds are the bounds a search ran with.
type exploreBounds struct {
	Crashes     int     `json:"crashes"`
	DPOR        bool    `json:"dpor"`
	Merge       bool    `json:"merge"`
	Drifts      int     `json:"drifts"`
	FSErrors    int     `json:"fserrs"`
	HorizonS    float64 `json:"horizon_s"`
	Jumps       int     `json:"jumps"`
	Pauses      int     `json:"pauses"`
	Powers      int     `json:"powers"`
	Preemptions int     `json:"preemptions"`
	Procs       int     `json:"procs"`
	Skews       string  `json:"skews"`
	Terms       int     `json:"terms"`
}

// exploreViolation is one property a search found broken, with the
// command that replays it.
type exploreViolation struct {
	AtS      float64 `json:"at_s"`
	Detail   string  `json:"detail"`
	Property string  `json:"property"`
	Replay   string  `json:"replay"`
	Steps    int     `json:"steps"`
}
