package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// The launch model of the race scenarios: the post started 30 processes
// "at once" from a shell loop. A loop forks one process every 5 ms, and
// each reaches main up to 10 ms after its fork (runtime start-up varies),
// so starts overlap and sometimes fall within one system call of each
// other. The O_EXCL variant must elect one leader whatever the overlap;
// the naive one elects two whenever a second process's stat lands between
// the first's stat and create.
const (
	raceProcs   = 30
	raceTrials  = 30
	raceSpawn   = 250 * time.Microsecond
	raceJitter  = time.Millisecond
	raceHorizon = 2 * time.Second // before the first watch tick at 3 s
)

func raceRunner(defaultVariant string) func(Options) (*Result, error) {
	return func(o Options) (*Result, error) {
		o.Variant = o.variant(defaultVariant)
		name := "naive-race"
		if defaultVariant == "seed" {
			name = "excl-race"
		}
		return runRace(name, o, 1)
	}
}

// RaceTrial returns the simulator setup of trial number trial (from 0) of
// the race experiments with the given seed: 30 processes launched as the
// launch model above says, on o's variant ("seed" if none). naive-race and
// excl-race run trials 0 to 29 with seed 1.
func RaceTrial(o Options, seed uint64, trial int) sim.Config {
	rng := rand.New(rand.NewPCG(seed, uint64(trial)))
	cfg := sim.Config{Variant: o.variant("seed"), Lease: o.Lease, Seed: rng.Uint64(), Horizon: raceHorizon,
		SyscallMin: scenSyscallMin, SyscallMax: scenSyscallMax, TimerLateMax: scenTimerLate}
	for i := range raceProcs {
		start := time.Duration(i)*raceSpawn + time.Duration(rng.Int64N(int64(raceJitter)))
		cfg.Procs = append(cfg.Procs, sim.ProcSpec{PID: 70000 + 7*i, Start: start})
	}
	return cfg
}

func runRace(name string, o Options, seed uint64) (*Result, error) {
	variant := o.Variant
	counts := make([]string, raceTrials)
	multi, notOne, most := 0, 0, 0
	var detail strings.Builder
	for k := range raceTrials {
		cfg := RaceTrial(o, seed, k)
		tr, err := prepare(&cfg)
		if err != nil {
			return nil, err
		}
		n := tr.MaxConcurrentLeaders()
		counts[k] = fmt.Sprint(n)
		most = max(most, n)
		if n > 1 {
			multi++
			fmt.Fprintf(&detail, "# trial %d: %d leaders; setup: %s\n", k+1, n, cfg)
		}
		if n != 1 {
			notOne++
		}
	}
	text := fmt.Sprintf("# scenario %s, variant %s: %d trials of %d processes, seed %d\n", name, variant, raceTrials, raceProcs, seed) +
		detail.String() +
		strings.Join(counts, " ") + "\n" +
		fmt.Sprintf("trials with more than one leader: %d / %d (max simultaneous leaders: %d)\n", multi, raceTrials, most) +
		fmt.Sprintf("trials that did not produce exactly one leader: %d / %d\n", notOne, raceTrials)
	return &Result{Text: text, Fields: map[string]any{
		"scenario": name, "variant": variant, "trials": raceTrials, "procs": raceProcs,
		"trials_with_multiple_leaders": multi, "trials_not_one_leader": notOne, "max_leaders": most,
	}}, nil
}

// gapSetup is one point of the worst-gap search: the leader starts at s0,
// the watchers d1 and d2 after it, and the leader is killed k after its
// fourth renewal (at s0+12 s with the post's intervals).
type gapSetup struct{ s0, d1, d2, k time.Duration }

// killAfter is when the leader's fourth renewal falls.
func killAfter(o Options) time.Duration { return 4 * o.Lease.RenewInterval }

func (g gapSetup) config(o Options) sim.Config {
	cfg := postConfig(o, sim.DefaultWallBase)
	cfg.Procs = []sim.ProcSpec{
		{PID: 60217, Start: g.s0},
		{PID: 60222, Start: g.s0 + g.d1},
		{PID: 60226, Start: g.s0 + g.d2},
	}
	kill := g.s0 + killAfter(o) + g.k
	cfg.Faults = []sim.Fault{{Kind: trace.Kill, Proc: 0, At: kill}}
	cfg.Horizon = kill + 2*(o.Lease.LeaseDuration+o.Lease.WatchInterval) + time.Second
	// Normalize cannot fail on this setup; it fills in the intervals so that
	// the setup prints as it ran.
	_ = cfg.Normalize()
	return cfg
}

// gapOf runs one setup and returns the leaderless gap after the kill in ns,
// or -1 if no process led again before the horizon.
func gapOf(cfg sim.Config) (int64, *trace.Trace, error) {
	tr, err := prepare(&cfg)
	if err != nil {
		return 0, nil, err
	}
	f, ok := tr.FirstFault()
	if !ok {
		return 0, tr, fmt.Errorf("worst-gap: the kill did not fire")
	}
	t, ok := tr.FirstLeaderAfter(f)
	if !ok {
		return -1, tr, nil
	}
	return t - f, tr, nil
}

func runWorstGap(o Options) (*Result, error) {
	o.Variant = o.variant("seed")
	variant := o.Variant
	runs := 0
	best, bestGap := gapSetup{}, int64(-1)
	watch, renew := o.Lease.WatchInterval, o.Lease.RenewInterval
	try := func(g gapSetup) error {
		if g.s0 < 0 || g.d1 <= 0 || g.d2 <= 0 || g.d1 >= watch || g.d2 >= watch || g.k <= 0 || g.k >= renew {
			return nil
		}
		runs++
		gap, _, err := gapOf(g.config(o))
		if err != nil {
			return err
		}
		if gap > bestGap {
			best, bestGap = g, gap
		}
		return nil
	}
	// A coarse grid over the whole space ...
	// (the leader's start sets where its renewals fall within a wall-clock
	// second, which matters because expiry is whole seconds) ...
	for s0 := time.Duration(0); s0 < time.Second; s0 += 200 * time.Millisecond {
		for d1 := watch / 30; d1 < watch; d1 += watch / 15 {
			for d2 := d1; d2 < watch; d2 += watch / 15 {
				for _, k := range []time.Duration{ms(1), renew / 6, renew / 3, renew / 2, 2 * renew / 3, 5 * renew / 6, renew - ms(10)} {
					if err := try(gapSetup{s0, d1, d2, k}); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	// ... then coordinate descent from the best point, halving the step.
	for step := watch / 30; step >= time.Millisecond; step /= 2 {
		for improved := true; improved; {
			improved = false
			before := bestGap
			for _, g := range []gapSetup{
				{best.s0 + step, best.d1, best.d2, best.k}, {best.s0 - step, best.d1, best.d2, best.k},
				{best.s0, best.d1 + step, best.d2, best.k}, {best.s0, best.d1 - step, best.d2, best.k},
				{best.s0, best.d1, best.d2 + step, best.k}, {best.s0, best.d1, best.d2 - step, best.k},
				{best.s0, best.d1, best.d2, best.k + step}, {best.s0, best.d1, best.d2, best.k - step},
				{best.s0, best.d1 + step, best.d2 + step, best.k}, {best.s0, best.d1 - step, best.d2 - step, best.k},
			} {
				if err := try(g); err != nil {
					return nil, err
				}
			}
			improved = bestGap > before
		}
	}
	cfg := best.config(o)
	_, tr, err := gapOf(cfg)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# scenario worst-gap, variant %s: %d runs over the leader's start s0 in [0,1) s, watcher offsets in (0,%v)\n", variant, runs, watch)
	fmt.Fprintf(&b, "# and the kill instant in (0,%v) after the renewal at s0+%v (grid, then coordinate descent)\n", renew, killAfter(o))
	fmt.Fprintf(&b, "# worst leaderless gap found: %s (post: lease + watch = %v)\n", trace.Secs(bestGap), o.Lease.LeaseDuration+watch)
	fmt.Fprintf(&b, "# worst setup: %s\n", cfg)

	// Kills aimed at each system call of the leader's renewal.
	points, err := crashPoints(o, best)
	if err != nil {
		return nil, err
	}
	var wedging []string
	for _, pt := range points {
		if pt.gap < 0 {
			wedging = append(wedging, pt.name)
			fmt.Fprintf(&b, "# kill right after the renewal's %s: no leader until the horizon (wedged)\n", pt.name)
		} else {
			fmt.Fprintf(&b, "# kill right after the renewal's %s: gap %.2f s\n", pt.name, round2(pt.gap))
		}
	}
	b.WriteString(logText(tr))
	return &Result{Text: b.String(), Trace: tr, Fields: map[string]any{
		"scenario": "worst-gap", "variant": variant, "runs": runs,
		"worst_gap_s": math.Round(float64(bestGap)/1e6) / 1000, "post_worst_gap_s": (o.Lease.LeaseDuration + watch).Seconds(),
		"worst_setup":        cfg.String(),
		"wedging_kills":      wedging,
		"crash_points":       len(points),
		"worst_exceeds_post": time.Duration(bestGap) > o.Lease.LeaseDuration+watch,
	}}, nil
}

type crashPoint struct {
	name string
	gap  int64
}

// crashPoints kills the leader right after each system call it makes in
// its renewal at s0+12 s, and returns the gap each kill leaves.
func crashPoints(o Options, g gapSetup) ([]crashPoint, error) {
	base := g.config(o)
	base.Faults = nil
	tr, err := prepare(&base)
	if err != nil {
		return nil, err
	}
	from := int64(g.s0 + killAfter(o))
	to := from + int64(o.Lease.RenewInterval/3)
	count := map[string]int{}
	var out []crashPoint
	for _, e := range tr.Events {
		if e.Proc != 0 || (e.Kind != trace.EvSyscall && e.Kind != trace.EvLog) {
			continue
		}
		kind := e.Op.String()
		if e.Op == trace.OpOpen {
			kind = sim.CallKind(trace.OpOpen, int(e.Flag))
		}
		if e.Kind == trace.EvLog {
			kind = "log"
		}
		count[kind]++
		if e.T < from || e.T >= to {
			continue
		}
		cfg := g.config(o)
		cfg.Faults = []sim.Fault{{Kind: trace.Kill, Proc: 0, After: kind, Nth: count[kind]}}
		gap, _, err := gapOf(cfg)
		if err != nil {
			return nil, err
		}
		name := kind
		if e.Path != (trace.Str{}) {
			name += " " + tr.S(e.Path)
		}
		out = append(out, crashPoint{name: name, gap: gap})
	}
	return out, nil
}
