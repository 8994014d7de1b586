package sim

import (
	"fmt"
	"strings"

	"github.com/leaselab/leaselab/trace"
)

// setup is a run's configuration and what became of each configured
// fault: the trace's Run.Setup.
type setup struct {
	cfg   Config
	fates []FaultFate // per cfg.Faults
	// stopAt and stopN, when stopN is set, say that the run stopped at
	// true time stopAt after stopN system calls (Config.MaxSyscalls).
	stopAt int64
	stopN  int
}

// stopped records that the run stopped at true time t, before its
// horizon, after n system calls.
func (s *setup) stopped(t int64, n int) { s.stopAt, s.stopN = t, n }

// fate records what became of the configured fault f.
func (s *setup) fate(f Fault, what FaultFate) {
	if f.idx > 0 && f.idx <= len(s.fates) {
		s.fates[f.idx-1] = what
	}
}

// String is the configuration as Config.String prints it, with each fault
// that never fired marked "never fired" (its process had died, or the call
// it waited for was never made) and each that found no leader to hit
// marked so: what a reader of the setup can take as really exercised.
func (s *setup) String() string {
	if s.stopN > 0 {
		return fmt.Sprintf("%s stopped=[at %s after %d system calls, before the horizon]", s.faults(), trace.Secs(s.stopAt), s.stopN)
	}
	return s.faults()
}

// faults is the configuration with the fates of its faults.
func (s *setup) faults() string {
	c := s.cfg
	if len(c.Faults) == 0 {
		return c.String()
	}
	faults := c.Faults
	c.Faults = nil
	var b strings.Builder
	b.WriteString(c.String())
	for i, f := range faults {
		switch s.fates[i] {
		case fired:
			fmt.Fprintf(&b, " fault=[%s]", f)
		case noLeader:
			fmt.Fprintf(&b, " fault=[%s, no leader to hit]", f)
		default:
			fmt.Fprintf(&b, " fault=[%s, never fired]", f)
		}
	}
	return b.String()
}

// Fates returns the faults a simulated run was configured with and what
// became of each, in Config.Faults' order (nil, nil for a trace the
// simulator did not make). The slices are the run's: valid until its
// trace is released, and not to be changed.
func Fates(tr *trace.Trace) ([]Fault, []FaultFate) {
	s, ok := tr.Run.Setup.(*setup)
	if !ok || s == nil {
		return nil, nil
	}
	return s.cfg.Faults, s.fates
}
