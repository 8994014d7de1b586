package main

import (
	"fmt"
	"html/template"
	"os"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// A timeline is a run drawn as one self-contained HTML page: a row per
// process with its role over time (watcher, leader, paused, dead), the
// lease validity it believed in, every fault as a marker, the store's
// record over time, and each violation highlighted. Every drawn event
// carries its trace line: hovering shows it, clicking puts it in the
// detail pane. No script, style or font is fetched: the page opens
// offline.
type timeline struct {
	Title      string
	Subtitle   string
	Verdict    string
	Violations []vizViolation
	Width      int
	Height     int
	Ticks      []vizTick
	Rows       []vizRow
	Marks      []vizMark // faults, across the process rows
	Spans      []vizSpan // violation spans, across every row
	StoreY     int
	Store      []vizSeg
	StoreOps   []vizMark
	Log        []string
}

type vizViolation struct {
	Property, Detail, At string
	Href                 string // porcupine's view, for linearizable-store
}

type vizTick struct {
	X     float64
	Label string
}

type vizRow struct {
	Label  string
	Y      int
	Segs   []vizSeg // role bar
	Pauses []vizSeg // SIGSTOP to SIGCONT, over the role bar
	Lease  []vizSeg // believed lease validity
}

type vizSeg struct {
	X, W  float64
	Class string
	Label string
	Line  string // trace line shown on hover and click
}

type vizMark struct {
	X     float64
	Y, H  int
	Class string
	Line  string
}

type vizSpan struct {
	X, W  float64
	Y, H  int
	Class string
	Line  string
}

const (
	vizLeft  = 110 // label column
	vizWidth = 1100
	vizRowH  = 34
	vizTop   = 40
)

// buildTimeline lays out trace tr with its verdicts.
func buildTimeline(tr *trace.Trace, verdicts []spec.Verdict, title string, hrefs map[string]string) *timeline {
	end := int64(tr.End)
	if end <= 0 {
		end = 1
	}
	x := func(t int64) float64 {
		t = max(0, min(t, end))
		return vizLeft + float64(t)/float64(end)*vizWidth
	}
	w := func(from, to int64) float64 { return max(x(to)-x(from), 0.5) }
	tl := &timeline{Title: title, Width: vizLeft + vizWidth + 20}
	tl.Subtitle = fmt.Sprintf("%d processes, %s of run", len(tr.Procs), time.Duration(end).Round(time.Millisecond))
	step := tickStep(time.Duration(end))
	for t := int64(0); t <= end; t += int64(step) {
		tl.Ticks = append(tl.Ticks, vizTick{x(t), fmt.Sprintf("%gs", time.Duration(t).Seconds())})
	}
	n := len(tr.Procs)
	rows := make([]vizRow, n)
	for p := range tr.Procs {
		rows[p] = vizRow{Label: "pid " + tr.ProcName(p), Y: vizTop + p*vizRowH}
	}
	// Role segments: a state per process, changed by role events, pauses
	// and death.
	type state struct {
		role    lease.Role
		paused  bool
		pauseAt int64
		pauseLn string
		dead    bool
		from    int64
		line    string
		lead    int64 // start of the believed lease, -1 if none
		leadTo  int64
		leadLn  string
	}
	st := make([]state, n)
	for p := range st {
		st[p] = state{from: int64(tr.Procs[p].Start), lead: -1}
	}
	class := func(s state) (string, string) {
		switch {
		case s.dead:
			return "dead", "dead"
		case s.role == lease.RoleLeader:
			return "leader", "leader"
		}
		return "watcher", "watcher"
	}
	flush := func(p int, t int64) {
		s := st[p]
		if t > s.from {
			c, label := class(s)
			rows[p].Segs = append(rows[p].Segs, vizSeg{X: x(s.from), W: w(s.from, t), Class: c, Label: label, Line: s.line})
		}
		st[p].from = t
	}
	endLease := func(p int, t int64) {
		s := &st[p]
		if s.lead >= 0 {
			to := min(t, s.leadTo)
			if to > s.lead {
				rows[p].Lease = append(rows[p].Lease, vizSeg{X: x(s.lead), W: w(s.lead, to), Class: "lease", Line: s.leadLn})
			}
			s.lead = -1
		}
	}
	endPause := func(p int, t int64) {
		s := &st[p]
		if s.paused {
			rows[p].Pauses = append(rows[p].Pauses, vizSeg{X: x(s.pauseAt), W: w(s.pauseAt, t), Class: "paused", Label: "paused", Line: s.pauseLn})
			s.paused = false
		}
	}
	var storeFrom int64
	storeLabel, storeLine := "no record", "the store before any write"
	storeFlush := func(t int64) {
		if t > storeFrom {
			c := "rec"
			if storeLabel == "no record" || storeLabel == "released" {
				c = "norec"
			}
			tl.Store = append(tl.Store, vizSeg{X: x(storeFrom), W: w(storeFrom, t), Class: c, Label: storeLabel, Line: storeLine})
		}
		storeFrom = t
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T > end {
			break
		}
		line := tr.Format(i)
		switch {
		case e.Kind == trace.EvFault && e.Proc >= 0:
			p := int(e.Proc)
			kind := e.FaultKind()
			tl.Marks = append(tl.Marks, vizMark{X: x(e.T), Y: rows[p].Y - 4, H: vizRowH - 6, Class: "fault " + kind.String(), Line: line})
			switch kind {
			case trace.Stop, trace.Suspend:
				if !e.Missed() && !st[p].paused {
					st[p].paused, st[p].pauseAt, st[p].pauseLn = true, e.T, line
				}
			case trace.Cont:
				endPause(p, e.T)
			}
		case e.Kind == trace.EvFault:
			tl.Marks = append(tl.Marks, vizMark{X: x(e.T), Y: vizTop - 4, H: n*vizRowH - 6, Class: "fault world", Line: line})
		case e.Kind == trace.EvRole:
			p := int(e.Proc)
			flush(p, e.T)
			st[p].role, st[p].line = e.Role, line
			if e.Role != lease.RoleLeader {
				endLease(p, e.T)
			}
		case e.Kind == trace.EvLead:
			p := int(e.Proc)
			endLease(p, e.T)
			st[p].lead, st[p].leadTo, st[p].leadLn = e.T, e.Deadline(), line
		case e.Kind == trace.EvExit:
			p := int(e.Proc)
			flush(p, e.T)
			endLease(p, e.T)
			endPause(p, e.T)
			st[p].dead, st[p].line = true, line
		case e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Store != trace.StoreRead:
			storeFlush(e.T)
			switch r := e.Record(); {
			case e.Store == trace.StoreRelease:
				storeLabel = "released"
			case r.Until != 0: // the seed's record: its expiry, in Unix seconds
				storeLabel = fmt.Sprintf("%d until %s", r.Holder, time.Unix(r.Until, 0).UTC().Format("15:04:05"))
			default: // a versioned store's record
				storeLabel = fmt.Sprintf("%d v%d", r.Holder, r.Version)
			}
			storeLine = line
			tl.StoreOps = append(tl.StoreOps, vizMark{X: x(e.T), Class: "op", Line: line})
		case e.Kind == trace.EvStore && (e.Res == trace.ResCorrupt || e.Res == trace.ResUnknown):
			tl.StoreOps = append(tl.StoreOps, vizMark{X: x(e.T), Class: "op odd", Line: line})
		}
	}
	for p := range st {
		flush(p, end)
		endLease(p, end)
		endPause(p, end)
	}
	storeFlush(end)
	tl.StoreY = vizTop + n*vizRowH + 10
	tl.Rows = rows
	tl.Height = tl.StoreY + vizRowH + 30
	for i := range tl.StoreOps {
		tl.StoreOps[i].Y, tl.StoreOps[i].H = tl.StoreY-2, vizRowH-10
	}
	// Violations.
	iv := tr.Leadership()
	for _, v := range verdicts {
		if v.Violation == nil {
			continue
		}
		x0 := v.Violation
		vv := vizViolation{Property: x0.Property, Detail: x0.Detail, At: fmtSecs(x0.At), Href: hrefs[x0.Property]}
		tl.Violations = append(tl.Violations, vv)
		from, to := violationSpan(tr, iv, x0)
		tl.Spans = append(tl.Spans, vizSpan{X: x(from), W: max(w(from, to), 3), Y: vizTop - 8, H: tl.StoreY + vizRowH - vizTop,
			Class: "violation", Line: x0.Property + ": " + x0.Detail})
	}
	if len(tl.Violations) == 0 {
		tl.Verdict = "No violation: every property holds on this run."
	} else {
		tl.Verdict = fmt.Sprintf("%d of %d properties violated.", len(tl.Violations), len(verdicts))
	}
	tl.Log = tr.Excerpt(0, tr.End)
	return tl
}

// violationSpan is the stretch of the run a violation is about: where two
// leaders overlap, where nobody leads, or a sliver at its instant.
func violationSpan(tr *trace.Trace, iv []trace.Interval, v *spec.Violation) (int64, int64) {
	at := int64(v.At)
	switch v.Property {
	case spec.ExclusiveLeadership:
		for i, a := range iv {
			for _, b := range iv[i+1:] {
				if a.Proc != b.Proc && a.From < b.To && b.From < a.To && max(a.From, b.From) == at {
					return at, min(a.To, b.To)
				}
			}
		}
	case spec.NoWedge, spec.FailoverBound:
		// The leaderless stretch that contains the instant.
		from, to := int64(0), int64(tr.End)
		for _, x := range iv {
			if x.To <= at {
				from = max(from, x.To)
			}
			if x.From >= at {
				to = min(to, x.From)
			}
		}
		return from, to
	}
	return at, at + int64(time.Millisecond)
}

func tickStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute} {
		if d/s <= 20 {
			return s
		}
	}
	return 10 * time.Minute
}

// writeTimelineFile writes the timeline of tr to path.
func writeTimelineFile(path string, tr *trace.Trace, verdicts []spec.Verdict, title string, hrefs map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cannot write the timeline: %w", err)
	}
	if err := timelineTmpl.Execute(f, buildTimeline(tr, verdicts, title, hrefs)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var timelineTmpl = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"add": func(a, b int) int { return a + b },
	"f":   func(v float64) string { return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".") },
}).Parse(timelineHTML))

const timelineHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}
.sub{color:#666;margin-bottom:8px}
#verdict{padding:6px 10px;border-radius:4px;display:inline-block;margin-bottom:8px}
#verdict.clean{background:#e6f4ea}
#verdict.bad{background:#fde7e7;font-weight:600}
svg text{font:12px system-ui,sans-serif}
.leader{fill:#2e7d32}.watcher{fill:#9ecae1}.paused{fill:#f28e2b;opacity:.85}.reclabel{font-size:11px;fill:#333;pointer-events:none}.dead{fill:#bbb}
.lease{fill:#1b5e20;opacity:.45}
.rec{fill:#c5b0d5}.norec{fill:#eee}
.fault{stroke-width:2}.kill{stroke:#c00}.term{stroke:#e67e00}.stop{stroke:#8e44ad}.cont{stroke:#8e44ad;stroke-dasharray:3 2}
.jump,.skew,.drift{stroke:#0066cc}.fserr{stroke:#555}.world{stroke:#0066cc;stroke-dasharray:4 3}
.op{stroke:#333;stroke-width:1}.odd{stroke:#c00;stroke-width:2}
.violation{fill:#ff0000;opacity:.18;stroke:#c00;stroke-width:1}
.grid{stroke:#ddd}
[data-line]{cursor:pointer}
#detail{font:12px ui-monospace,monospace;white-space:pre-wrap;background:#f6f6f6;padding:8px;min-height:1.5em;margin:8px 0}
details pre{font:12px ui-monospace,monospace;max-height:400px;overflow:auto}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
</style></head><body>
<h1>{{.Title}}</h1>
<div class="sub">{{.Subtitle}}</div>
<div id="verdict" class="{{if .Violations}}bad{{else}}clean{{end}}">{{.Verdict}}</div>
{{range .Violations}}<div class="vio" data-property="{{.Property}}"><b>{{.Property}}</b> at {{.At}}: {{.Detail}}{{if .Href}} — <a href="{{.Href}}">porcupine's view of the store history</a>{{end}}</div>
{{end}}<div class="legend"><span class="leader" style="background:#2e7d32"></span>leader<span style="background:#9ecae1"></span>watcher<span style="background:#f28e2b"></span>paused (over its role)<span style="background:#bbb"></span>dead<span style="background:#1b5e20;opacity:.45"></span>lease it believed valid<span style="background:#c5b0d5"></span>store record (holder, version or expiry)<span style="background:#ff000030;border:1px solid #c00"></span>violation</div>
<svg id="timeline" width="{{.Width}}" height="{{.Height}}" xmlns="http://www.w3.org/2000/svg">
{{range .Ticks}}<line class="grid" x1="{{f .X}}" x2="{{f .X}}" y1="20" y2="{{$.Height}}"/><text x="{{f .X}}" y="14" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .Rows}}<g class="proc" data-label="{{.Label}}"><text x="4" y="{{.Y}}" dy="14">{{.Label}}</text>
{{$y := .Y}}{{range .Segs}}<rect class="{{.Class}}" x="{{f .X}}" y="{{$y}}" width="{{f .W}}" height="18" data-line="{{.Line}}"><title>{{.Label}}: {{.Line}}</title></rect>
{{end}}{{range .Pauses}}<rect class="paused" x="{{f .X}}" y="{{add $y 4}}" width="{{f .W}}" height="10" data-line="{{.Line}}"><title>paused: {{.Line}}</title></rect>
{{end}}{{range .Lease}}<rect class="lease" x="{{f .X}}" y="{{add $y 21}}" width="{{f .W}}" height="5" data-line="{{.Line}}"><title>{{.Line}}</title></rect>
{{end}}</g>
{{end}}<g class="store"><text x="4" y="{{.StoreY}}" dy="14">store</text>
{{range .Store}}<rect class="{{.Class}}" x="{{f .X}}" y="{{$.StoreY}}" width="{{f .W}}" height="18" data-line="{{.Line}}"><title>{{.Label}}: {{.Line}}</title></rect>{{if gt .W 90.0}}<text class="reclabel" x="{{f .X}}" dx="4" y="{{$.StoreY}}" dy="13">{{.Label}}</text>{{end}}
{{end}}{{range .StoreOps}}<line class="{{.Class}}" x1="{{f .X}}" x2="{{f .X}}" y1="{{.Y}}" y2="{{add .Y .H}}" data-line="{{.Line}}"><title>{{.Line}}</title></line>
{{end}}</g>
{{range .Marks}}<line class="{{.Class}}" x1="{{f .X}}" x2="{{f .X}}" y1="{{.Y}}" y2="{{add .Y .H}}" data-line="{{.Line}}"><title>{{.Line}}</title></line>
{{end}}{{range .Spans}}<rect class="{{.Class}}" x="{{f .X}}" y="{{.Y}}" width="{{f .W}}" height="{{.H}}" data-line="{{.Line}}"><title>{{.Line}}</title></rect>
{{end}}</svg>
<div id="detail">Click a bar or marker to see its trace line here.</div>
<details><summary>The run as the post shows it ({{len .Log}} lines)</summary><pre>{{range .Log}}{{.}}
{{end}}</pre></details>
<script>
document.getElementById('timeline').addEventListener('click', ev => {
  const line = ev.target.getAttribute('data-line');
  if (line) document.getElementById('detail').textContent = line;
});
</script>
</body></html>
`
