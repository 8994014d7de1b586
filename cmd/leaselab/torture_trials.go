package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// trialsReport is torture -trials' -json report; as tortureReport, its
// fields are declared in the (alphabetical) order they print.
type trialsReport struct {
	Dir             string           `json:"dir,omitempty"`
	Leaders         []int            `json:"leaders"` // per trial, how many processes became leader
	MaxSimultaneous int              `json:"max_simultaneous"`
	MoreThanOne     int              `json:"more_than_one"`
	NotExactlyOne   int              `json:"not_exactly_one"`
	Procs           int              `json:"procs"`
	Trials          int              `json:"trials"`
	Variant         string           `json:"variant"`
	Violations      []trialViolation `json:"violations"`
	WindowS         float64          `json:"window_s"`
}

type trialViolation struct {
	Detail   string `json:"detail"`
	Leaders  int    `json:"leaders"`
	Property string `json:"property"`
	Trial    int    `json:"trial"`
}

// trials is the post's experiment on the real kernel: in each trial procs
// processes start at once on a fresh lock file (an empty one with
// -empty-lock; the first process crashing at its -crash-after point), and
// the trial counts how many of them became leader before any lease could
// expire. More than one is an exclusive-leadership violation. A trial in
// which none has led by then goes on until the recorded wedge bound: none
// by that bound, with a process alive, is a no-wedge violation (the post's
// empty-file wedge). -o draws the first violating trial, or the last.
func (t torture) trials(n int, w io.Writer, text bool) (*trialsReport, bool, error) {
	window := min(t.cfg.LeaseDuration/2, 2*time.Second)
	wedge := spec.RecordedBounds(t.variant, t.cfg).Wedge
	counts := make([]int, n)
	multi, notOne, maxSim := 0, 0, 0
	vs := []trialViolation{}
	var drawn *trace.Trace // -o's trial
	for i := range n {
		dir := filepath.Join(t.dir, fmt.Sprintf("trial-%d", i+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, false, err
		}
		c := newCluster(t.bin, t.exec, t.variant.Name, t.cfg, dir)
		c.extra, c.remote, c.crashAfter = t.extra, t.remote, t.crashAfter
		if t.emptyLock {
			if err := os.WriteFile(c.lock, nil, 0o644); err != nil {
				return nil, false, err
			}
		}
		var led atomic.Bool
		c.onRole = func(_ *child, r lease.Role, _ int64) {
			if r == lease.RoleLeader {
				led.Store(true)
			}
		}
		if len(t.extra) > 0 {
			c.extra = append(append([]string(nil), t.extra[:len(t.extra)-1]...), fmt.Sprintf("%s-trial-%d", t.extra[len(t.extra)-1], i+1))
		}
		// Every process is started, and waits for this instant to contend:
		// leave time for a slow machine to start them all.
		startAt := monoNow() + int64(250*time.Millisecond) + int64(t.procs)*int64(10*time.Millisecond)
		for range t.procs {
			if _, err := c.spawn(startAt); err != nil {
				c.shutdown()
				return nil, false, err
			}
		}
		if t.exec != "" {
			c.releaseExec(startAt)
		}
		time.Sleep(time.Duration(startAt + int64(window) - monoNow()))
		// The wedge bound counts from the start, or from the last exit
		// (a -crash-after: its record, written just before, is waited out
		// from when it was seen).
		for !led.Load() && monoNow() < c.lastExit(startAt)+int64(wedge) && len(c.alive()) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		alive := len(c.alive())
		tr := c.trace(c.shutdown())
		counts[i] = tr.Leaders()
		sim := tr.MaxConcurrentLeaders()
		maxSim = max(maxSim, sim)
		bad := true
		switch {
		case counts[i] > 1:
			multi++
			vs = append(vs, trialViolation{Property: spec.ExclusiveLeadership, Trial: i + 1, Leaders: counts[i],
				Detail: fmt.Sprintf("trial %d: %d processes became leader (%d at once)", i+1, counts[i], sim)})
		case counts[i] == 0 && alive > 0:
			vs = append(vs, trialViolation{Property: spec.NoWedge, Trial: i + 1,
				Detail: fmt.Sprintf("trial %d: no process became leader within %v of a fresh start (or of the last exit), %d of %d alive", i+1, wedge, alive, t.procs)})
		default:
			bad = false
		}
		if counts[i] != 1 {
			notOne++
		}
		if drawn == nil && bad || drawn == nil && i == n-1 {
			drawn = tr
		}
		t.bar.set(int64(i+1), fmt.Sprintf("%d with more than one leader", multi))
	}
	t.bar.done()
	if text {
		fields := make([]string, n)
		for i, c := range counts {
			fields[i] = fmt.Sprint(c)
		}
		fmt.Fprintln(w, strings.Join(fields, " "))
		fmt.Fprintf(w, "trials with more than one leader: %d / %d (max simultaneous leaders: %d)\n", multi, n, maxSim)
		fmt.Fprintf(w, "trials that did not produce exactly one leader: %d / %d\n", notOne, n)
		for _, v := range vs {
			fmt.Fprintf(w, "VIOLATION %s: %s\n", v.Property, v.Detail)
		}
	}
	if t.out != "" {
		title := fmt.Sprintf("leaselab torture -trials: %s, %d real processes", t.variant.Name, t.procs)
		if err := writeTimelineFile(t.out, drawn, nil, title, nil); err != nil {
			return nil, false, usagef("-o %s: %v", t.out, err)
		}
	}
	rep := &trialsReport{Variant: t.variant.Name, Procs: t.procs, Trials: n, Leaders: counts,
		MoreThanOne: multi, NotExactlyOne: notOne, MaxSimultaneous: maxSim, WindowS: window.Seconds(),
		Violations: vs}
	return rep, len(vs) > 0, nil
}
