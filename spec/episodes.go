package spec

import (
	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// Episodes returns every distinct violation of a run that verdicts (its
// Check) found broken, in the verdicts' order, each property's by time:
// every overlap of two leaders, every span without a leader beyond the
// bound, every failover past its bound; for the other properties, whose
// first violation is what the run shows (a register's history is
// linearizable or not; a bound on files or calls is crossed first once),
// that one.
func Episodes(tr *trace.Trace, verdicts []Verdict) []Violation {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		return nil
	}
	var iv []trace.Interval
	var el [][]span
	b := runBounds(v, tr)
	var out []Violation
	for _, vd := range verdicts {
		if vd.Violation == nil {
			continue
		}
		if iv == nil {
			iv, el = tr.Leadership(), eligible(tr)
		}
		switch vd.Property {
		case ExclusiveLeadership:
			out = append(out, allExclusive(tr, iv)...)
		case NoWedge:
			out = append(out, allWedges(tr, iv, b, el)...)
		case FailoverBound:
			failoverWindows(tr, iv, b, el, func(_ bool, x *Violation) bool {
				if x != nil {
					out = append(out, *x)
				}
				return true
			})
		default:
			out = append(out, *vd.Violation)
		}
	}
	return out
}
