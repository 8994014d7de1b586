package scenario

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Scenario is one of the post's experiments, reproduced in the simulator.
type Scenario struct {
	// Name is how the command line and Lookup name it (kill-leader).
	Name string
	// Summary says in one line what the experiment does.
	Summary string
	// Post is what the post measured, for the README's table.
	Post string
	run  func(o Options) (*Result, error)
}

// Options change a scenario's setup.
type Options struct {
	// Variant runs the experiment on another variant ("": the scenario's).
	Variant string
	// Lease overrides the post's intervals (zero: 9 s / 3 s / 3 s). The
	// post's figures then no longer apply.
	Lease lease.Config
}

func (o Options) variant(def string) string {
	if o.Variant == "" {
		return def
	}
	return o.Variant
}

// Result is a scenario's outcome: the text it prints and the fields of its
// JSON object.
type Result struct {
	// Text is what leaselab scenario prints: the setup, the log in the
	// post's format where there is one run, and a summary.
	Text string
	// Fields are the JSON object's fields (leaselab scenario -json).
	Fields map[string]any
	// Trace is the run the text shows, for scenarios that show one.
	Trace *trace.Trace
}

// ErrUnknown is wrapped by the error Lookup returns for a name that is no
// scenario's.
var ErrUnknown = errors.New("unknown scenario")

// Scenarios returns every scenario in a fixed order.
func Scenarios() []Scenario { return append([]Scenario(nil), scenarios...) }

// Names returns the scenario names, comma-separated.
func Names() string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// Lookup returns the named scenario.
func Lookup(name string) (Scenario, error) {
	for _, s := range scenarios {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("%w %q (valid: %s)", ErrUnknown, name, Names())
}

// Run runs the scenario on a variant ("" means the scenario's own).
func (s Scenario) Run(o Options) (*Result, error) {
	if o.Variant != "" {
		if _, err := lease.LookupVariant(o.Variant); err != nil {
			return nil, err
		}
	}
	if o.Lease.LeaseDuration != 0 || o.Lease.RenewInterval != 0 || o.Lease.WatchInterval != 0 {
		if err := o.Lease.Validate(); err != nil {
			return nil, err
		}
	} else {
		o.Lease = lease.DefaultConfig()
	}
	return s.run(o)
}

var scenarios []Scenario

func init() {
	scenarios = []Scenario{
		{Name: "steady", Summary: "three processes: one leader renewing every 3 s, two watchers",
			Post: "one leader renewing, two watchers", run: runSteady},
		{Name: "kill-leader", Summary: "the leader is killed with SIGKILL at 12.00 s",
			Post: "leaderless gap 9.53 s", run: runKill},
		{Name: "term-leader", Summary: "the leader gets SIGTERM at 12.01 s and releases the lease",
			Post: "leaderless gap 0.31 s", run: runTerm},
		{Name: "empty-file", Summary: "an empty lock file exists before three processes start",
			Post: "wedged: no leader, ever", run: runEmpty},
		{Name: "naive-race", Summary: "30 trials of 30 processes started at once, stat then create",
			Post: "3 / 30 trials with two leaders", run: raceRunner("seed-naive")},
		{Name: "excl-race", Summary: "30 trials of 30 processes started at once, O_EXCL create",
			Post: "0 / 30 trials with more than one leader", run: raceRunner("seed")},
		{Name: "takeover-race", Summary: "two watchers started together see the dead leader's lease expire at once",
			Post: "safe: O_EXCL decides the winner", run: runTakeoverRace},
		{Name: "worst-gap", Summary: "search kill instants and start offsets for the longest leaderless gap after a SIGKILL",
			Post: "12 s (lease + watch)", run: runWorstGap},
	}
}

// The latency model of the scenarios: a system call takes 5 to 50 µs and
// a timer fires up to 100 µs late. Each is drawn from the run's seed.
const (
	scenSyscallMin = 5 * time.Microsecond
	scenSyscallMax = 50 * time.Microsecond
	scenTimerLate  = 100 * time.Microsecond
)

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// postConfig is the setup of the post's three-process experiments. The
// post's log fixes the pids and, through the ticks it shows (3.53, 3.62),
// when each process started: 60217 and 60222 at 0.53 s and 60226 at
// 0.62 s. 60222's watcher read the leader's old lease at 3.53 while the
// leader renewed at 3.53, so 60222 started a little after 60217 (it lost
// the acquisition) yet set up its ticker before the leader finished
// acquiring; 50 µs reproduces that.
func postConfig(o Options, base time.Time) sim.Config {
	return sim.Config{
		Variant:  o.variant("seed"),
		Lease:    o.Lease,
		Seed:     1,
		WallBase: base,
		Procs: []sim.ProcSpec{
			{PID: 60217, Start: ms(530)},
			{PID: 60222, Start: ms(530) + 50*time.Microsecond},
			{PID: 60226, Start: ms(620)},
		},
		SyscallMin: scenSyscallMin, SyscallMax: scenSyscallMax, TimerLateMax: scenTimerLate,
	}
}

// prepare normalizes cfg so that what the scenario prints is what ran.
func prepare(cfg *sim.Config) (*trace.Trace, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	return sim.Run(*cfg)
}

func header(name, variant string, cfg sim.Config) string {
	return fmt.Sprintf("# scenario %s, variant %s\n# setup: %s\n", name, variant, cfg)
}

func logText(tr *trace.Trace) string {
	var b strings.Builder
	tr.WriteLog(&b)
	return b.String()
}

func round2(d int64) float64 { return math.Round(float64(d)/1e7) / 100 }

func runSteady(o Options) (*Result, error) {
	cfg := postConfig(o, sim.DefaultWallBase)
	cfg.Horizon = 12 * time.Second
	tr, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	leaders := tr.Leaders()
	text := header("steady", cfg.Variant, cfg) + logText(tr) +
		fmt.Sprintf("# leaders: %d, most at once: %d\n", leaders, tr.MaxConcurrentLeaders())
	return &Result{Text: text, Trace: tr, Fields: map[string]any{
		"scenario": "steady", "variant": cfg.Variant, "leaders": leaders,
		"max_leaders": tr.MaxConcurrentLeaders(),
	}}, nil
}

// gapResult runs cfg, whose first fault removes the leader, and reports
// the leaderless gap from that fault to the next leader.
func gapResult(name string, cfg sim.Config, postGap float64) (*Result, error) {
	tr, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	f, _ := tr.FirstFault()
	fields := map[string]any{"scenario": name, "variant": cfg.Variant, "leaders": tr.Leaders(),
		"max_leaders": tr.MaxConcurrentLeaders(), "post_gap_s": postGap}
	text := header(name, cfg.Variant, cfg) + logText(tr)
	if t, ok := tr.FirstLeaderAfter(f); ok {
		gap := round2(t - f)
		fields["leaderless_gap_s"] = gap
		text += fmt.Sprintf("# fault at %s, next leader at %s: leaderless gap %.2f s (post: %.2f s)\n",
			trace.Secs(f), trace.Secs(t), gap, postGap)
	} else {
		fields["leaderless_gap_s"] = nil
		fields["wedged"] = true
		text += fmt.Sprintf("# fault at %s, no leader until the horizon %s (post: %.2f s)\n", trace.Secs(f), trace.Secs(int64(tr.End)), postGap)
	}
	return &Result{Text: text, Trace: tr, Fields: fields}, nil
}

func runKill(o Options) (*Result, error) {
	cfg := postConfig(o, sim.DefaultWallBase)
	cfg.Horizon = 25 * time.Second
	cfg.Faults = []sim.Fault{{Kind: trace.Kill, Proc: sim.Leader, At: 12 * time.Second}}
	return gapResult("kill-leader", cfg, 9.53)
}

// termBase is 0 s of the post's SIGTERM experiment: its log puts 12.32 s
// at 21:15:47.
var termBase = time.Date(2025, 10, 14, 21, 15, 35, 0, time.UTC)

func runTerm(o Options) (*Result, error) {
	cfg := postConfig(o, termBase)
	// The post names 60344 (leader) and 60349 (its watcher ticks at .32);
	// the third pid and the leader's start are not in the post.
	cfg.Procs = []sim.ProcSpec{{PID: 60344, Start: 0}, {PID: 60349, Start: ms(320)}, {PID: 60353, Start: ms(710)}}
	cfg.Horizon = 18 * time.Second
	cfg.Faults = []sim.Fault{{Kind: trace.Term, Proc: sim.Leader, At: ms(12010)}}
	return gapResult("term-leader", cfg, 0.31)
}

func runEmpty(o Options) (*Result, error) {
	cfg := postConfig(o, sim.DefaultWallBase)
	cfg.Procs = []sim.ProcSpec{{PID: 63010, Start: ms(10)}, {PID: 63015, Start: ms(320)}, {PID: 63019, Start: ms(630)}}
	cfg.Files = []sim.File{{Path: sim.DefaultLockPath, Data: ""}}
	cfg.Horizon = 30 * time.Second
	tr, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	bound := cfg.Lease.LeaseDuration + cfg.Lease.WatchInterval
	idle := tr.LeaderlessAtEnd()
	wedged := idle > bound
	text := header("empty-file", cfg.Variant, cfg) + logText(tr) +
		fmt.Sprintf("# leaders: %d; leaderless for the last %s with live processes (bound lease+watch = %v): wedged %v\n",
			tr.Leaders(), trace.Secs(int64(idle)), bound, wedged)
	return &Result{Text: text, Trace: tr, Fields: map[string]any{
		"scenario": "empty-file", "variant": cfg.Variant, "leaders": tr.Leaders(), "wedged": wedged,
		"leaderless_s": round2(int64(idle)),
	}}, nil
}

// runTakeoverRace is the race the post calls safe. Two watchers start at
// the same instant (as a supervisor starts them), so their watch ticks
// coincide; the leader dies at 1 s; at 12.10 s both read the expired
// lease. The second's remove deletes the file the first just created, and
// both take over. (Seed 2 is the first seed of TestSeedTakeoverRaceElects-
// TwoLeaders's search that shows it; most seeds do not.)
func runTakeoverRace(o Options) (*Result, error) {
	cfg := postConfig(o, sim.DefaultWallBase)
	cfg.Seed = 2
	cfg.Procs = []sim.ProcSpec{{PID: 100, Start: 0}, {PID: 200, Start: ms(100)}, {PID: 300, Start: ms(100)}}
	cfg.Faults = []sim.Fault{{Kind: trace.Kill, Proc: 0, At: time.Second}}
	cfg.Horizon = 20 * time.Second
	tr, err := prepare(&cfg)
	if err != nil {
		return nil, err
	}
	most := tr.MaxConcurrentLeaders()
	text := header("takeover-race", cfg.Variant, cfg) + logText(tr) +
		fmt.Sprintf("# most leaders at once: %d (post: the race is safe, one winner)\n", most)
	return &Result{Text: text, Trace: tr, Fields: map[string]any{
		"scenario": "takeover-race", "variant": cfg.Variant, "leaders": tr.Leaders(), "max_leaders": most,
	}}, nil
}
