package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/scenario"
)

// usageError is bad input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitStatus is a status to exit with that needs no message: leaselab
// run's when its command's exit ended it (the command's own status).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// wholeProcess is set by main: this process is leaselab itself, not a
// test binary that calls run, so leaselab run may make itself a child
// subreaper and kill the orphans that reach it (singleton.go).
var wholeProcess bool

// command is one of leaselab's commands: its synopsis names every flag it
// takes (TestSynopsesNameEveryFlag holds it to that, and the package doc
// and the README to the synopses).
type command struct {
	name, synopsis, summary string
	run                     func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"scenario", `leaselab scenario NAME [-variant V] [-json] [-trace] [-lease D -renew D -watch D]`,
		"run one of the post's experiments in the simulator and print its log", cmdScenario},
	{"check", `leaselab check [-variant V | -all] [-runs N] [-seed S] [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
               [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D]
               [-props LIST] [-keep-going] [-smallest] [-show N] [-by-fault] [-json | -markdown] [-o FILE] [-out-dir DIR]`,
		"search random setups, schedules and faults for runs that break a property", cmdCheck},
	{"replay", `leaselab replay -variant V (-seed S [-expect H] | -decisions FILE) [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
                [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D] [-json] [-trace] [-o FILE]`,
		"replay one simulated run exactly, from the replay line check printed", cmdReplay},
	{"viz", `leaselab viz -variant V (-seed S [-expect H] | -decisions FILE) [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
             [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D] -o FILE`,
		"draw one simulated run as a self-contained HTML timeline", cmdViz},
	{"explore", `leaselab explore [-variant V] [-procs N] [-crashes K] [-terms K] [-pauses K] [-fserrs K] [-jumps K]
                 [-powers K] [-drifts K] [-preemptions K [-merge] | -dpor] [-horizon D] [-skews LIST] [-max-schedules N]
                 [-force] [-json] [-replay FILE] [-out-dir DIR]`,
		"search every schedule within the bounds, depth first", cmdExplore},
	{"run", `leaselab run (-path LOCKFILE [-variant V] [-store file|flock] | -store redis|etcd|sqlite|postgres -dsn DSN [-name N] [-timeout D])
             [-id N] [-lease D -renew D -watch D] [-shed] [-start-at NS] [-events FILE] [-restart] [-- CMD ARGS]`,
		"a real leader-election process; with a command, a singleton runner", cmdRun},
	{"torture", `leaselab torture [-variant V] [-store file|flock|redis|etcd|sqlite|postgres] [-dsn DSN] [-procs N]
                 [-duration D | -trials N] [-faults kill,stop,term,stall] [-seed S] [-lease D -renew D -watch D]
                 [-exec 'CMD {lock}' | -singleton | -crash-after KIND:N] [-empty-lock] [-bin FILE] [-json] [-o FILE] [-keep]`,
		"real processes, real signals, the simulator's checks on what happened", cmdTorture},
	{"failover", `leaselab failover [-variants LIST] [-n N] [-procs N] [-seed S] [-lease D -renew D -watch D]
                  [-redis ADDR] [-etcd ENDPOINTS] [-postgres URL] [-sqlite] [-bin FILE] [-json | -markdown]`,
		"measure the leaderless gap after SIGKILL and SIGTERM of the leader, real processes", cmdFailover},
	{"variants", `leaselab variants [-json]`, "list the algorithm's variants", cmdVariants},
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() string {
	var ns []string
	for _, c := range commands {
		ns = append(ns, c.name)
	}
	return strings.Join(append(ns, "help"), ", ")
}

// shortUsage is what leaselab alone prints.
const shortUsage = `usage: leaselab COMMAND [flags]
commands: %s
'leaselab help' describes each command; 'leaselab help COMMAND' or 'leaselab COMMAND -h' lists its flags.
`

// writeHelp prints every command's synopsis and summary.
func writeHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: leaselab COMMAND [flags]\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "%s\n    %s\n\n", c.synopsis, c.summary)
	}
	fmt.Fprintf(w, "leaselab help COMMAND (or leaselab COMMAND -h) lists the command's flags with their defaults.\n")
	fmt.Fprintf(w, "scenarios: %s\nvariants:  %s\n", scenario.Names(), lease.VariantNames())
	fmt.Fprintf(w, "exit status: 0 success, 1 a property broken (or a run failed), 2 bad input\n")
}

// helpShown is parse's answer to -h: the command's help went to standard
// output and the exit status is 0.
type helpShown struct{ fs *flag.FlagSet }

func (helpShown) Error() string { return "help requested" }

// writeFlags prints a command's synopsis, summary and every flag with its
// description and default.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	c, _ := lookupCommand(fs.Name())
	fmt.Fprintf(w, "usage: %s\n\n%s.\n\nflags:\n", c.synopsis, c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func main() {
	// leaselab run's supervisor and torture's probe command are this
	// binary too, entered by an argument no command has.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case superviseArg:
			os.Exit(superviseMain(os.Args[2:]))
		case probeArg:
			os.Exit(probeMain(os.Args[2:]))
		}
	}
	wholeProcess = true
	if os.Getenv("GOGC") == "" && searches(os.Args[1:]) {
		// A search allocates a trace a run and keeps almost none: at the
		// default 100 the collector ran so often that check's second
		// core bought little (4,000 runs of reference -faults all, two
		// cores: 2.5 s at 100, 1.73 s at 400, 3.0 s on one core at 400;
		// the heap grows from 34 to 70 MB). GOGC set by the user wins.
		debug.SetGCPercent(400)
	}
	if searches(os.Args[1:]) {
		if err := startWatchdog(os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "leaselab:", err)
			os.Exit(2)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// searches reports whether the command args name runs simulated worlds
// one after another, for which main raises the collector's target. Not
// run: a leader that lives for months keeps its heap at Go's default (at
// 400, a 10 ms renewer settled at 35-40 MB, helper-108).
func searches(args []string) bool {
	return len(args) > 0 && args[0] != "run"
}

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, errViolation) {
		return 1
	}
	if errors.Is(err, errUsageShown) {
		return 2
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	// One line, whatever the error: a client's multi-line message (pgx
	// lists each address it tried) is joined.
	fmt.Fprintln(stderr, "leaselab:", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, lease.ErrUnknownVariant) || errors.Is(err, scenario.ErrUnknown) {
		return 2
	}
	return 1
}

// oneLine joins a multi-line message's lines with "; ".
func oneLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(strings.TrimSpace(l), ":")
	}
	return strings.Join(lines, "; ")
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintf(stderr, shortUsage, commandNames())
		return errUsageShown
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 || len(args) == 2 && args[0] == "help" && args[1] == "help" {
			writeHelp(stdout)
			return nil
		}
		if len(args) > 2 {
			return usagef("help takes one COMMAND (got %s)", strings.Join(args[1:], " "))
		}
		if _, ok := lookupCommand(args[1]); !ok {
			return usagef("help: unknown command %q (valid: %s)", args[1], commandNames())
		}
		return dispatch([]string{args[1], "-h"}, stdout, stderr)
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		return usagef("unknown command %q (valid: %s)", args[0], commandNames())
	}
	err := c.run(args[1:], stdout, stderr)
	var h helpShown
	if errors.As(err, &h) {
		writeFlags(stdout, h.fs)
		return nil
	}
	return err
}

// errUsageShown is exit status 2 once the usage has been printed.
var errUsageShown = errors.New("usage shown")

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpShown{fs}
			}
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, "-"+f.Name) })
			return nil, usagef("%s: %v (valid: %s)", fs.Name(), err, strings.Join(names, ", "))
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func cmdScenario(args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("scenario", flag.ContinueOnError)
	variant := fs.String("variant", "", "run the experiment on this variant (valid: "+lease.VariantNames()+")")
	asJSON := fs.Bool("json", false, "print one JSON object")
	trace := fs.Bool("trace", false, "also print every event of the run")
	var o scenario.Options
	fs.DurationVar(&o.Lease.LeaseDuration, "lease", 9*time.Second, "lease duration")
	fs.DurationVar(&o.Lease.RenewInterval, "renew", 3*time.Second, "renew interval")
	fs.DurationVar(&o.Lease.WatchInterval, "watch", 3*time.Second, "watch interval")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("scenario needs one NAME (valid: %s)", scenario.Names())
	}
	s, err := scenario.Lookup(pos[0])
	if err != nil {
		return err
	}
	o.Variant = *variant
	if err := o.Lease.Validate(); err != nil {
		return usagef("%v", err)
	}
	r, err := s.Run(o)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, r.Fields)
	}
	io.WriteString(stdout, r.Text)
	if *trace && r.Trace != nil {
		fmt.Fprintln(stdout, "# trace")
		return r.Trace.WriteTrace(stdout)
	}
	return nil
}

func cmdVariants(args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("variants", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("variants takes no arguments (got %s)", strings.Join(pos, " "))
	}
	if *asJSON {
		type variant struct {
			Name    string `json:"name"`
			Summary string `json:"summary"`
		}
		var vs []variant
		for _, v := range lease.Variants() {
			vs = append(vs, variant{v.Name, v.Summary})
		}
		return writeJSON(stdout, struct {
			Variants []variant `json:"variants"`
		}{vs})
	}
	// The names' column fits the longest: a registered fix's name may be
	// longer than the built-in ones (a probe's u-link-fsync-mono).
	width := 12
	for _, v := range lease.Variants() {
		width = max(width, len(v.Name))
	}
	for _, v := range lease.Variants() {
		fmt.Fprintf(stdout, "%-*s %s\n", width, v.Name, v.Summary)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

// scaledConfig is the post's intervals divided by ten, the default of the
// commands that run real processes through many failovers (torture,
// failover): many hand-overs fit in a short run.
var scaledConfig = lease.Config{LeaseDuration: 900 * time.Millisecond, RenewInterval: 300 * time.Millisecond, WatchInterval: 300 * time.Millisecond}

// intervalFlags registers -lease, -renew and -watch on fs, into cfg, with
// def's values as defaults.
func intervalFlags(fs *flag.FlagSet, cfg *lease.Config, def lease.Config) {
	fs.DurationVar(&cfg.LeaseDuration, "lease", def.LeaseDuration, "lease duration")
	fs.DurationVar(&cfg.RenewInterval, "renew", def.RenewInterval, "renew interval")
	fs.DurationVar(&cfg.WatchInterval, "watch", def.WatchInterval, "watch interval")
}
