package sim

import (
	"slices"
	"time"
)

// NewRecordedTrace returns an empty trace for a run that happened outside
// the simulator (real processes under leaselab torture), so that the same
// checks judge it. cfg names the variant and its lease configuration; the
// caller adds processes, activities and events, in any order, then calls
// Finish.
func NewRecordedTrace(cfg Config) *Trace {
	return &Trace{Config: cfg, Recorded: true}
}

// AddProc adds a process with holder id pid started at true time start,
// with one activity named "main", and returns its index.
func (tr *Trace) AddProc(pid int, start time.Duration) int {
	tr.Procs = append(tr.Procs, ProcInfo{PID: pid, Start: start})
	tr.Acts = append(tr.Acts, []string{"main"})
	return len(tr.Procs) - 1
}

// Act returns the number of process p's activity called name, adding it
// if it is new.
func (tr *Trace) Act(p int, name string) int16 {
	for i, n := range tr.Acts[p] {
		if n == name {
			return int16(i)
		}
	}
	tr.Acts[p] = append(tr.Acts[p], name)
	return int16(len(tr.Acts[p]) - 1)
}

// Add appends e to a recorded trace, with path as its Path string
// (fault descriptions).
func (tr *Trace) Add(e Event, path string) {
	e.Path = tr.str(path)
	tr.Events = append(tr.Events, e)
}

// Finish orders a recorded trace's events by time (stably: events of one
// instant keep the order they were added in) and sets its end.
func (tr *Trace) Finish(end time.Duration) {
	slices.SortStableFunc(tr.Events, func(a, b Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	tr.End = end
}

// Classify maps a Store operation's error to the outcome the trace
// records for the linearizability check, as the simulator does for its
// own processes: a real process's history uses it too.
func Classify(op StoreOp, err error) StoreRes { return classify(op, err) }
