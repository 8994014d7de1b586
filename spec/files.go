package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// BoundedFiles is the property that the lock's directory never holds more
// names than the variant states (lease.Claims.Files) for the run's
// processes, on top of what was there before the run: a store that leaves
// a file behind per write, or per restart, breaks it in a long enough run.
const BoundedFiles = "bounded-files"

// FileBound is the most names the lock's directory of a run of variant v
// with procs processes may hold, before the names placed there by the
// setup, and whether v states a bound at all.
func FileBound(v lease.Variant, procs int) (int, bool) {
	if v.Claims.Files == nil {
		return 0, false
	}
	return v.Claims.Files.Of(procs), true
}

// CheckBoundedFiles reports the first instant at which the lock's
// directory held more names than its variant's bound for the run's
// processes (every process that ran: restarts after a power loss count)
// plus the names there at the start.
func CheckBoundedFiles(tr *trace.Trace) *Violation {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		panic(err) // a trace is made from a valid config
	}
	bound, ok := FileBound(v, len(tr.Procs))
	if !ok || !tr.LockDir.Watched {
		return nil
	}
	limit := bound + tr.LockDir.Start
	for _, p := range tr.LockDir.Peaks {
		if p.N > limit {
			start := ""
			if tr.LockDir.Start > 0 {
				start = fmt.Sprintf(", and %d there before the run", tr.LockDir.Start)
			}
			return &Violation{Property: BoundedFiles, At: time.Duration(p.T),
				Detail: fmt.Sprintf("the lock's directory holds %d names: the variant's bound is %d for %d processes%s",
					p.N, bound, len(tr.Procs), start)}
		}
	}
	return nil
}
