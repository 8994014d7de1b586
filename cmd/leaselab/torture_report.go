package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// tortureReport is torture's -json report of a run. Its fields are
// declared in the order they print, which is alphabetical: the order the
// report has always printed in.
type tortureReport struct {
	Commands  int            `json:"commands,omitempty"` // -singleton: commands started
	Dir       string         `json:"dir,omitempty"`      // the logs, histories and timeline, when kept
	DurationS float64        `json:"duration_s"`         // the signals' phase, before the recovery
	Episodes  map[string]int `json:"episodes"`           // violations, by property: every episode (overlap, wedge, late failover) counts
	// FailoverJudged and LeaderSignals: on how many of the SIGKILLs and
	// SIGTERMs that hit a leader failover-bound was judged (a successor,
	// or the bound, came before any other fault, and another process ran).
	FailoverJudged int                `json:"failover_judged"`
	Failovers      []failoverReport   `json:"failovers"`
	LeaderSignals  int                `json:"leader_signals"`
	Members        []memberReport     `json:"members,omitempty"` // faults of the store's servers (a test's cluster)
	Procs          int                `json:"procs"`
	Properties     []string           `json:"properties"` // the properties that apply to the variant
	RecoveryS      float64            `json:"recovery_s"` // the phase without signals that ends the run
	Seed           uint64             `json:"seed"`
	Signals        map[string]int     `json:"signals"` // signals sent, by kind
	Started        int                `json:"started"` // processes started, replacements included
	Terms          int                `json:"terms"`   // leadership terms
	Variant        string             `json:"variant"`
	Violations     []tortureViolation `json:"violations"`
}

type tortureViolation struct {
	AtS      float64 `json:"at_s"`
	Detail   string  `json:"detail"`
	HTML     string  `json:"html,omitempty"` // porcupine's page, for linearizable-store
	PIDs     []int   `json:"pids"`
	Property string  `json:"property"`
}

type failoverReport struct {
	AtS    float64 `json:"at_s"`
	GapMs  float64 `json:"gap_ms"`
	PID    int     `json:"pid"`
	Signal string  `json:"signal"`
}

func propertyNames(vs []spec.Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Applicable {
			out = append(out, v.Property)
		}
	}
	return out
}

func faultList(counts map[string]int) string {
	var parts []string
	for _, k := range []string{"kill", "stop", "term", "stall"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	if parts == nil {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// A failover is the leaderless gap after a leader was signalled.
type failover struct {
	kind trace.FaultKind
	at   int64 // when the signal was sent
	gap  int64 // to the next leader's first step as leader
	pid  int
}

// failovers returns, for every SIGKILL or SIGTERM sent to a process that
// was leading, the time until another process led.
func failovers(tr *trace.Trace) []failover {
	iv := tr.Leadership()
	var out []failover
	for _, e := range tr.Events {
		if e.Kind != trace.EvFault || e.Proc < 0 {
			continue
		}
		kind := e.FaultKind()
		if kind != trace.Kill && kind != trace.Term {
			continue
		}
		leading := false
		for _, x := range iv {
			// (A SIGKILL ends the interval at the signal's own instant.)
			if x.Proc == int(e.Proc) && x.From <= e.T && e.T <= x.To && x.From < x.To {
				leading = true
			}
		}
		if !leading {
			continue
		}
		for _, x := range iv {
			if x.Proc != int(e.Proc) && x.From >= e.T {
				out = append(out, failover{kind: kind, at: e.T, gap: x.From - e.T, pid: tr.Procs[e.Proc].PID})
				break
			}
		}
	}
	return out
}

func gapSummary(gaps []failover) string {
	if len(gaps) == 0 {
		return ""
	}
	var parts []string
	for _, k := range []trace.FaultKind{trace.Kill, trace.Term} {
		var ms []float64
		for _, g := range gaps {
			if g.kind == k {
				ms = append(ms, float64(g.gap)/1e6)
			}
		}
		if len(ms) > 0 {
			slices.Sort(ms)
			parts = append(parts, fmt.Sprintf("%s median %.1f ms max %.1f ms", k, ms[len(ms)/2], ms[len(ms)-1]))
		}
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// ownExitVerdict is the harness's own property no-own-exit: no process
// ended before the run did except by a signal the harness sent (a SIGKILL,
// or a SIGTERM it then obeyed) or the crash point -crash-after aimed at
// it. A program that exits at once, or on an error, would otherwise
// leave nothing to judge: each exit restarts no-wedge's clock, the harness
// replaces it, and a run of processes that never lead passes.
func (c *cluster) ownExitVerdict(end time.Duration) spec.Verdict {
	v := spec.Verdict{Property: NoOwnExit, Applicable: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	var first *child
	for _, k := range c.kids {
		if k.waitT == 0 || k.waitT >= int64(end) || k.killed || k.termed {
			continue
		}
		if c.crashAfter != "" && k.id == 1001 && k.code == -9 {
			continue // the crash point's own SIGKILL
		}
		n++
		if first == nil || k.waitT < first.waitT {
			first = k
		}
	}
	if first != nil {
		pid, said := first.pid(), lastWords(c.dir, first.id)
		v.Violation = &spec.Violation{Property: NoOwnExit, At: time.Duration(first.waitT), PIDs: []int{pid},
			Detail: fmt.Sprintf("process %d exited on its own, status %d, %s after it started, with no signal from the harness (%d of %d processes did)%s",
				pid, first.code, fmtSecs(time.Duration(first.waitT-first.start)), n, len(c.kids), said)}
		return v
	}
	// A SIGTERM excuses an exit only when it is obeyed: the process exits
	// within obeyWithin of the signal (of its SIGCONT, if it was stopped),
	// and, for leaselab's own programs, with status 0, as run and the
	// post's program do. (A probe: a watcher that ignored SIGTERM, and a
	// process that panicked on it, exit status 2, passed while any exit
	// after a SIGTERM, or none, was excused.)
	obey := int64(c.obeyWithin())
	for _, k := range c.kids {
		if !k.termed || k.killed || k.termT == 0 {
			continue
		}
		pid := k.pid()
		switch {
		case k.termT+obey < int64(end) && (k.waitT == 0 || k.waitT > k.termT+obey):
			v.Violation = &spec.Violation{Property: NoOwnExit, At: time.Duration(k.termT + obey), PIDs: []int{pid},
				Detail: fmt.Sprintf("process %d was sent SIGTERM at %s and had not exited %v later (it must stop: a process that ignores SIGTERM is one nobody can stop gracefully)",
					pid, fmtSecs(time.Duration(k.termT)), time.Duration(obey))}
			return v
		case c.exec == "" && k.waitT > 0 && k.waitT < int64(end) && k.code != 0:
			v.Violation = &spec.Violation{Property: NoOwnExit, At: time.Duration(k.waitT), PIDs: []int{pid},
				Detail: fmt.Sprintf("process %d exited with status %d %s after its SIGTERM; told to stop, it exits 0%s",
					pid, k.code, fmtSecs(time.Duration(k.waitT-k.termT)), lastWords(c.dir, k.id))}
			return v
		}
	}
	return v
}

// obeyWithin is how long after its SIGTERM a process must have exited: a
// lease (its release may wait for a store call, a stall may stop it for
// a third of one) and, with -singleton, the grace its command gets to
// stop.
func (c *cluster) obeyWithin() time.Duration {
	d := c.cfg.LeaseDuration + time.Second
	if c.command != nil {
		d += stopGrace
	}
	return d
}

// pid is the process's PID as it reported it, or its harness id.
func (k *child) pid() int {
	if k.hist.pid > 0 {
		return k.hist.pid
	}
	return k.id
}

// lastWords is "; its last line: ..." for process id's log, or "".
func lastWords(dir string, id int) string {
	if line := lastLine(filepath.Join(dir, fmt.Sprintf("proc-%d.log", id))); line != "" {
		return fmt.Sprintf("; its last line: %q", line)
	}
	return ""
}

// lastLine is the last non-empty line of the file at path (of its last
// 4 KiB), or "".
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(len(buf)) {
		f.Seek(fi.Size()-int64(len(buf)), io.SeekStart)
	}
	n, _ := io.ReadFull(f, buf)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// NoOwnExit is the property ownExitVerdict judges.
const NoOwnExit = "no-own-exit"
