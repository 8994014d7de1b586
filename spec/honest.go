package spec

import (
	"fmt"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// CheckHonestRole reports the first stretch in which a process's user
// code held a live leader context (Trace.Leadership) while the algorithm
// did not report leading (Proc.Role and Proc.Lead: Trace.ReportedLeadership):
// a leader that lets its user act on a term it no longer claims, such as
// one whose context outlives the local deadline it reported. The other
// way round (reporting leadership the user's context does not show) is
// harmless and allowed. Recorded traces, whose leadership is reported,
// are not judged.
func CheckHonestRole(tr *trace.Trace, iv []trace.Interval) *Violation {
	if tr.Recorded {
		return nil
	}
	reported := tr.ReportedLeadership()
	for _, x := range iv {
		covered := x.From // how far reported leadership covers x, from its start
		for _, r := range reported {
			if r.Proc == x.Proc && r.From <= covered && r.To >= covered {
				covered = max(covered, r.To)
			}
		}
		if covered < x.Seen {
			return &Violation{Property: HonestRole, At: time.Duration(covered),
				PIDs:   []int{tr.Procs[x.Proc].PID},
				Detail: fmt.Sprintf("process %s's code saw its leader context live until %s, but the algorithm reported leading only until %s", tr.ProcName(x.Proc), secs(time.Duration(x.Seen)), secs(time.Duration(covered)))}
		}
	}
	return nil
}
