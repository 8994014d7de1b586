package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// usageError is bad input: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const usage = `usage:
  leaselab scenario NAME [-variant V] [-json] [-trace] [-lease D -renew D -watch D]
                                                         run one of the post's experiments
  leaselab check [-variant V | -all] [-runs N] [-seed S] [-procs P] [-faults LIST] [-scheduler random|pct]
                 [-max-drift F] [-keep-going] [-smallest] [-props LIST] [-json]
                                                         search random setups, schedules and faults for violations
  leaselab replay -variant V -seed S [setup flags as check printed] [-json] [-trace] [-html FILE]
                                                         replay one run exactly
  leaselab viz -variant V -seed S [setup flags as check printed] -o run.html
                                                         draw one run as a self-contained HTML timeline
  leaselab explore [-variant V] [-procs N] [-crashes K] [-terms K] [-pauses K] [-fserrs K] [-jumps K] [-preemptions K]
                   [-horizon D] [-skews LIST] [-max-schedules N] [-json] [-replay FILE]
                                                         every schedule within the bounds, depth first
  leaselab run -path LOCKFILE [-variant V | -store flock] [-id N] [-lease D -renew D -watch D] [-- CMD ARGS]
                                                         a real leader-election process (runs CMD while it leads)
  leaselab torture [-variant V] [-procs N] [-duration D] [-faults kill,stop,term] [-seed S] [-trials N]
                   [-lease D -renew D -watch D] [-exec 'CMD {lock}'] [-json] [-keep]
                                                         real processes, real signals, the same checks
  leaselab failover [-variants LIST] [-n N] [-procs N] [-lease D -renew D -watch D] [-json | -markdown]
                                                         leaderless gap after SIGKILL and SIGTERM of the leader, real processes
  leaselab variants [-json]                              list the algorithm's variants
scenarios: %s
variants:  %s
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, errViolation) {
		return 1
	}
	fmt.Fprintln(stderr, "leaselab:", err)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, lease.ErrUnknownVariant) || errors.Is(err, sim.ErrUnknownScenario) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command\n"+usage, sim.ScenarioNames(), lease.VariantNames())
	}
	switch args[0] {
	case "scenario":
		return cmdScenario(args[1:], stdout)
	case "variants":
		return cmdVariants(args[1:], stdout)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "replay":
		return cmdReplay(args[1:], stdout)
	case "explore":
		return cmdExplore(args[1:], stdout, stderr)
	case "run":
		return cmdRun(args[1:], stdout, stderr)
	case "viz":
		return cmdViz(args[1:], stdout)
	case "torture":
		return cmdTorture(args[1:], stdout, stderr)
	case "failover":
		return cmdFailover(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprintf(stdout, usage, sim.ScenarioNames(), lease.VariantNames())
		return nil
	}
	return usagef("unknown command %q (valid: scenario, check, replay, explore, viz, run, torture, failover, variants, help)", args[0])
}

// parse parses flags that may come before or after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
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

func cmdScenario(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scenario", flag.ContinueOnError)
	variant := fs.String("variant", "", "run the experiment on this variant (valid: "+lease.VariantNames()+")")
	asJSON := fs.Bool("json", false, "print one JSON object")
	trace := fs.Bool("trace", false, "also print every event of the run")
	var o sim.Options
	fs.DurationVar(&o.Lease.LeaseDuration, "lease", 9*time.Second, "lease duration")
	fs.DurationVar(&o.Lease.RenewInterval, "renew", 3*time.Second, "renew interval")
	fs.DurationVar(&o.Lease.WatchInterval, "watch", 3*time.Second, "watch interval")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("scenario needs one NAME (valid: %s)", sim.ScenarioNames())
	}
	s, err := sim.LookupScenario(pos[0])
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

func cmdVariants(args []string, stdout io.Writer) error {
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
		var vs []map[string]string
		for _, v := range lease.Variants() {
			vs = append(vs, map[string]string{"name": v.Name, "summary": v.Summary})
		}
		return writeJSON(stdout, map[string]any{"variants": vs})
	}
	for _, v := range lease.Variants() {
		fmt.Fprintf(stdout, "%-12s %s\n", v.Name, v.Summary)
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
