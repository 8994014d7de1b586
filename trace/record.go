package trace

import (
	"slices"
	"time"
)

// NewRecorded returns an empty trace for a run that happened outside the
// simulator (real processes under leaselab torture), so that the same
// checks judge it. run names the variant, its lease configuration and the
// lock; the caller adds processes, activities and events, in any order,
// then calls Finish.
func NewRecorded(run Run) *Trace {
	return &Trace{Run: run, Recorded: true}
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

// Add appends e to a recorded trace, with text as its Text (a fault's
// description).
func (tr *Trace) Add(e Event, text string) {
	e.Text = tr.Str(text)
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
