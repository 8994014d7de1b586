package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// The property names, fixed: the CLI and the tests print them.
const (
	ExclusiveLeadership = "exclusive-leadership"
	Fencing             = "fencing"
	NoWedge             = "no-wedge"
	FailoverBound       = "failover-bound"
	LinearizableStore   = "linearizable-store"
	// HonestRole: the algorithm reports leading (Proc.Role, Proc.Lead)
	// whenever its user's leader context is live (CheckHonestRole).
	HonestRole = "honest-role"
)

// Properties lists every property in the order they are checked.
var Properties = []string{ExclusiveLeadership, Fencing, NoWedge, FailoverBound, LinearizableStore, HonestRole, StableLeadership, NoBusyLoop, BoundedFiles, BoundedActivities, NoOwnExit, StoppedCallback, LeaderKnown, ErrorsReported}

// Violation is the first point at which a run breaks a property.
type Violation struct {
	Property string
	At       time.Duration // true time of the violation
	PIDs     []int         // the processes involved
	Events   []int         // indices of the trace events that show it
	Detail   string
	// HTML is set for linearizable-store: porcupine's visualisation, to
	// be written to a file on request.
	HTML func(path string) error

	// settler fills in the details of a violation decided before they
	// were worked out (decideLinearizable); a search calls it, through
	// settle, only for the runs it keeps.
	settler func(*Violation)
	// release gives back memory the violation's details refer to, for a
	// search's run it does not keep (decideLinearizable's history).
	release func()
}

// settle fills in v's details if they were left for later (nil: nothing).
func (v *Violation) settle() {
	if v != nil && v.settler != nil {
		f := v.settler
		v.settler = nil
		f(v)
	}
}

// releaseAll gives back the memory of a dropped run's verdicts: none of
// them may be used after.
func releaseAll(vs []Verdict) {
	for _, v := range vs {
		if v.Violation != nil && v.Violation.release != nil {
			f := v.Violation.release
			v.Violation.release, v.Violation.settler = nil, nil
			f()
		}
	}
}

// settleAll settles every violation of a run's verdicts.
func settleAll(vs []Verdict) {
	for _, v := range vs {
		v.Violation.settle()
	}
}

func (v *Violation) String() string {
	return fmt.Sprintf("%s at %s: %s", v.Property, secs(v.At), v.Detail)
}

// Verdict is one property's result on one run.
type Verdict struct {
	Property   string
	Applicable bool   // false: the run lacks what the property is about (fencing without epochs)
	Reason     string // why it is not Applicable
	Violation  *Violation
}

// Slack absorbs what is not the algorithm's: system-call latency and timer
// lateness between a lease's expiry and the step that notices it.
const Slack = 100 * time.Millisecond

// Bounds are the times the liveness properties allow.
type Bounds struct {
	// Wedge: the longest a live, unpaused process may go without any
	// process leading: lease + watch + the variant's clock tolerance.
	Wedge time.Duration
	// Kill and Term: the longest from a SIGKILL (SIGTERM) of the leader
	// to the next leader.
	Kill, Term time.Duration
}

// BoundsFor returns the bounds for a run of variant v with config c. A
// variant that is notified of changes and wakes when the lease it saw can
// expire owes no watch interval: a crash fails over in one lease (plus its
// drift margin), a release at once.
//
// A variant whose leadership is a kernel lock (flock) owes no lease
// either: a SIGKILL or SIGTERM of the leader hands the lock to a waiting
// process at once (Slack: a few system calls). It may be leaderless only
// while a process backs off after an I/O error, at most WatchInterval on
// its own clock, which may run slow by the drift bound (slowWait).
func BoundsFor(v lease.Variant, c lease.Config) Bounds {
	lag := v.Claims.ExpiryLag
	if v.Claims.OwnClock {
		lag += c.DriftLag()
	}
	if v.Claims.Handover == lease.KernelLock {
		return Bounds{Wedge: slowWait(c.WatchInterval, sim.DriftBoundOf(c)) + lag + Slack, Kill: Slack, Term: Slack}
	}
	watch := c.WatchInterval
	if v.Claims.Handover == lease.Notified {
		watch = 0
	}
	b := c.LeaseDuration + watch + lag + Slack
	return Bounds{Wedge: b, Kill: b, Term: watch + Slack}
}

// slowWait is how long, in true time, a wait of d on a clock running slow
// by rho parts per million lasts: d/(1-rho), computed here and not by
// the code under test (as safeDeadline is). A flock waiter's back-off is
// such a wait, and its bound was d unstretched: at a drift bound of 30%,
// a watcher retrying every watch interval after a full disk took 4.3 s
// against no-wedge's 3.1 s, and no-wedge and stable-leadership blamed
// flock with no process paused (a review, 2026-12-07). A clock that may
// stop (rho of a million or more) has no bound: a wait then counts twice.
func slowWait(d time.Duration, rho int64) time.Duration {
	if rho >= 1_000_000 {
		return 2 * d
	}
	l, r := int64(d), 1_000_000-rho
	return time.Duration(l/r*1_000_000 + l%r*1_000_000/r) // l·1e6/r without overflow
}

// envelope widens the run's configuration to every process's own (a
// rolling change of intervals, trace.ProcInfo.Lease): slow has the longest
// lease and watch interval of any process, what liveness must allow (a
// crashed leader's lease is waited out by the slowest watcher that may be
// the only one left); fast has the shortest renew and watch intervals, the
// most often a process may wake.
func envelope(tr *trace.Trace) (slow, fast lease.Config) {
	slow, fast = tr.Run.Lease, tr.Run.Lease
	for _, p := range tr.Procs {
		if l := p.Lease; l.LeaseDuration != 0 {
			slow.LeaseDuration = max(slow.LeaseDuration, l.LeaseDuration)
			slow.WatchInterval = max(slow.WatchInterval, l.WatchInterval)
			fast.RenewInterval = min(fast.RenewInterval, l.RenewInterval)
			fast.WatchInterval = min(fast.WatchInterval, l.WatchInterval)
		}
	}
	return slow, fast
}

// RealSlack is what the liveness bounds allow, on a recorded trace of real
// processes, for what the machine adds to the algorithm's own steps (a
// process waiting for a core, a slow fsync, the harness reading a pipe)
// in place of Slack: a third of the lease, at most a second. A release
// that did not happen still shows, since it costs a whole lease.
func RealSlack(c lease.Config) time.Duration {
	return max(Slack, min(time.Second, c.LeaseDuration/3))
}

// runBounds is the liveness bounds a run of v is judged by: its slowest
// configuration's, with a real machine's slack on a recorded trace.
func runBounds(v lease.Variant, tr *trace.Trace) Bounds {
	slow, _ := envelope(tr)
	if tr.Recorded {
		b := RecordedBounds(v, slow)
		b.Term += tr.Run.StopGrace
		return b
	}
	b := BoundsFor(v, slow)
	if v.Claims.Pushed && !misledByNotices(tr) && !serverUnreachable(tr, v) && v.Claims.Handover != lease.Notified && v.Claims.Handover != lease.KernelLock {
		// Every notice came as sent: a release is taken over at once, a
		// crash in a lease, with no watch interval. A run in which a
		// notice was lost, late, doubled or early is held to the
		// watch interval its watchers still poll at; so is one in which
		// the server was unreachable for a while (a watcher whose reads
		// failed reads again after a back-off of up to a watch interval,
		// and only then starts its clock for a version written meanwhile).
		b.Wedge, b.Kill, b.Term = b.Wedge-slow.WatchInterval, b.Kill-slow.WatchInterval, b.Term-slow.WatchInterval
	}
	if v.Claims.Handover == lease.Notified && readsFailedInStretch(tr) {
		// A watcher notified of changes owes no watch interval while its
		// reads work; one whose reads failed reads again after a back-off
		// that doubles from 10 ms with each failure in a row, up to a
		// watch interval, woken early only by a change, and starts its
		// clock for a version written meanwhile only then (a check with
		// -scheduler random: reads failing for 35 s with EMFILE, then
		// once with ENOSPC as the leader paused for good, left the
		// back-off at 3 s and the lease 10 s without a leader). A run in
		// which a stretch failed reads (EMFILE, a failing disk), where
		// the back-off climbs to its cap, is held to the polled bounds; a
		// one-shot failure's 10 ms is within Slack, and a watcher that
		// waits a watch interval after one (the catalogue's
		// reference~read-error-waits-watch) still shows.
		b.Wedge, b.Kill, b.Term = b.Wedge+slow.WatchInterval, b.Kill+slow.WatchInterval, b.Term+slow.WatchInterval
	}
	if len(losses(tr)) > 0 {
		more := lossAftermath(slow)
		b.Wedge, b.Kill, b.Term = b.Wedge+more, b.Kill+more, b.Term+more
	}
	// Slack covers a hand-over's calls at ordinary latencies; a run that
	// makes them slow (every call, if its choices say so) owes a leader
	// that much later.
	more := HandoverCalls * tr.Run.CallMax
	b.Wedge, b.Kill, b.Term = b.Wedge+more, b.Kill+more, b.Term+more
	return b
}

// cuts reports whether event e is a fault that restarts the liveness
// clocks (no-wedge's spans, failover-bound's windows): any fault that took
// effect but a server's notice that a Notice fault touched. A run a notice
// misled is held to the polled bounds instead (misledByNotices), which a
// lost, late or early notice must not break: the watcher still reads every
// watch interval. Cutting at each touched notice left that claim unjudged.
func cuts(e *trace.Event) bool {
	return e.Kind == trace.EvFault && !e.Missed() && e.FaultKind() != trace.Notice
}

// serverUnreachable reports whether the run of v, a server variant, had
// its server unreachable for a while (a DiskEIO stretch: see sim.Fault).
func serverUnreachable(tr *trace.Trace, v lease.Variant) bool {
	if v.Claims.Handover != lease.ServerExpiry {
		return false
	}
	for _, st := range tr.Stretches() {
		if st.Kind == trace.DiskEIO {
			return true
		}
	}
	return false
}

// readsFailedInStretch reports whether a read of the store failed with an
// error (a missing record is no failure) during a stretch fault of its
// process or of the whole machine that fails calls (EMFILE, a failing
// disk).
func readsFailedInStretch(tr *trace.Trace) bool {
	var sts []trace.Stretch
	for _, st := range tr.Stretches() {
		if st.Kind == trace.EMFile || st.Kind == trace.DiskEIO {
			sts = append(sts, st)
		}
	}
	if len(sts) == 0 {
		return false
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.EvStore || e.Store != trace.StoreRead || e.Errno == 0 || e.Res == trace.ResNotFound {
			continue
		}
		for _, st := range sts {
			if (st.Proc < 0 || st.Proc == e.Proc) && st.In(e.T) {
				return true
			}
		}
	}
	return false
}

// misledByNotices reports whether a Notice fault touched the run: a
// server's change notices lost, delayed, duplicated or early.
func misledByNotices(tr *trace.Trace) bool {
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvFault && !e.Missed() && e.FaultKind() == trace.Notice {
			return true
		}
	}
	return false
}

// HandoverCalls is how many system calls or requests, one after another,
// a hand-over may take on top of the algorithm's waits: the leader's
// renewal under way when it is told to go (a dozen, with the listing and
// the sweep), its release (six), the successor's wake, read and
// acquisition (eight). A run's liveness bounds grow by this many of its
// longest calls (trace.Run.CallMax). (Found by FuzzReference: a run whose
// every call took 4.5 ms handed over a SIGTERMed lease in 100.03 ms, 22
// calls, against a bound of 100 ms.)
const HandoverCalls = 32

// RecordedBounds are the liveness bounds a recorded trace of real
// processes running v with c is judged by: BoundsFor's, with RealSlack in
// place of Slack.
func RecordedBounds(v lease.Variant, c lease.Config) Bounds {
	b := BoundsFor(v, c)
	more := RealSlack(c) - Slack
	b.Wedge, b.Kill, b.Term = b.Wedge+more, b.Kill+more, b.Term+more
	return b
}

// Check evaluates every property on a run.
func Check(tr *trace.Trace) []Verdict {
	vs := decide(tr)
	settleAll(vs)
	return vs
}

// decide is Check with linearizable-store's details left for settle
// (decideLinearizable).
func decide(tr *trace.Trace) []Verdict {
	v, err := lease.LookupVariant(tr.Run.Variant)
	if err != nil {
		panic(err) // a trace is made from a valid config
	}
	b := runBounds(v, tr)
	iv := tr.Leadership()
	el := eligible(tr) // when each process could lead: three properties ask
	history := !tr.Recorded || hasStoreHistory(tr)
	lin := history
	vs := []Verdict{
		{Property: ExclusiveLeadership, Applicable: true, Violation: CheckExclusive(tr, iv)},
		// (Fencing over the run until its first loss: a term that starts
		// after it has no EvStarted there, and no epoch to compare.)
		{Property: Fencing, Applicable: v.Epochs, Violation: checkFencingIf(v.Epochs, untilLoss(tr), iv)},
		{Property: NoWedge, Applicable: true, Violation: checkNoWedge(tr, iv, b, el)},
		{Property: FailoverBound, Applicable: true, Violation: checkFailover(tr, iv, b, el)},
		{Property: LinearizableStore, Applicable: lin, Violation: checkLinearizableIf(lin, untilLoss(untilPowerLoss(tr)))},
		{Property: HonestRole, Applicable: !tr.Recorded, Violation: ifSimulated(tr, func() *Violation { return checkHonestRole(tr, iv, v) })},
		{Property: StableLeadership, Applicable: !tr.Recorded, Violation: ifSimulated(tr, func() *Violation { return checkStableLeadership(tr, iv, b, el) })},
		{Property: NoBusyLoop, Applicable: !tr.Recorded, Violation: ifSimulated(tr, func() *Violation { return CheckNoBusyLoop(tr) })},
		{Property: BoundedFiles, Applicable: tr.LockDir.Watched && v.Claims.Files != nil, Violation: CheckBoundedFiles(tr)},
		{Property: BoundedActivities, Applicable: !tr.Recorded, Violation: CheckBoundedActivities(tr)},
		{Property: NoOwnExit, Applicable: !tr.Recorded, Violation: CheckNoOwnExit(tr)},
		{Property: StoppedCallback, Applicable: !tr.Recorded, Violation: CheckStoppedCallback(tr)},
		leaderKnownVerdict(v, tr, iv, b, el),
		errorsReportedVerdict(v, tr),
	}
	if !v.Epochs {
		vs[1].Reason = "no epochs"
	}
	if !history {
		vs[4].Reason = "no store history: the processes reported no store operation (a program run by -exec reports only its log lines)"
	}
	if tr.Recorded {
		vs[5].Reason = "a recorded trace: its roles are all it says"
		vs[6].Reason = "a recorded trace: the real machine's stalls are not in it"
		vs[7].Reason = "a recorded trace: no system calls in it"
		vs[9].Reason = "a recorded trace: its processes' goroutines are not counted"
		vs[10].Reason = "a recorded trace: its signals are the harness's"
		vs[11].Reason = "a recorded trace: the real processes do not report their callbacks"
	}
	switch {
	case !tr.LockDir.Watched:
		vs[8].Reason = "the directory was not counted"
	case v.Claims.Files == nil:
		vs[8].Reason = "no bound stated"
	}
	return vs
}

// hasStoreHistory reports whether the trace records any store operation.
func hasStoreHistory(tr *trace.Trace) bool {
	for i := range tr.Events {
		if k := tr.Events[i].Kind; k == trace.EvStore || k == trace.EvStoreCall {
			return true
		}
	}
	return false
}

// powerLoss is the index of the run's first power loss, or -1.
func powerLoss(tr *trace.Trace) int {
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvFault && e.FaultKind() == trace.Power {
			return i
		}
	}
	return -1
}

// untilPowerLoss is the part of the run linearizable-store judges. A store
// on a file system is a linearizable register only while the machine
// runs: a power loss takes back whatever was not yet durable (by design,
// for renewals and releases), so the register is judged up to the run's
// first power loss, which ends every operation in flight as a SIGKILL
// would (it may or may not have taken effect), and what must survive it,
// the epochs, is fencing's to check. A server keeps its state when the
// clients' machine loses power: its whole run is judged.
func untilPowerLoss(tr *trace.Trace) *trace.Trace {
	i := powerLoss(tr)
	if i < 0 || tr.Run.Server {
		return tr
	}
	cut := *tr
	cut.Events = tr.Events[:i]
	cut.End = time.Duration(tr.Events[i].T)
	return &cut
}

// ifSimulated runs check on a simulated trace; a recorded one has not what
// it judges.
func ifSimulated(tr *trace.Trace, check func() *Violation) *Violation {
	if tr.Recorded {
		return nil
	}
	return check()
}

func checkLinearizableIf(applicable bool, tr *trace.Trace) *Violation {
	if !applicable {
		return nil
	}
	return decideLinearizable(tr)
}

// CheckExclusive reports the first instant at which two processes lead at
// once, as their users' code saw it: an interval runs from the call of
// OnStartedLeading to the last step at which its context was seen live
// (Interval.Seen and LiveSteps); a paused leader whose context is still
// live when it resumes led all through the pause. Two intervals overlap
// when each began before the other was last seen live, in time or, at one
// instant, in the order of the run's steps (Interval.Overlaps): a leader
// whose context is seen live after another's OnStartedLeading at the same
// instant (a release before the step-down, with every step at one instant
// as in an exploration) overlaps it.
func CheckExclusive(tr *trace.Trace, iv []trace.Interval) *Violation {
	if all := allExclusive(tr, iv); len(all) > 0 {
		return &all[0]
	}
	return nil
}

// allExclusive returns every pair of overlapping leadership intervals, by
// the instant the second began (the first found of those at one instant
// first).
func allExclusive(tr *trace.Trace, iv []trace.Interval) []Violation {
	var out []Violation
	lost := losses(tr)
	for i := range iv {
		for j := range iv {
			a, b := iv[i], iv[j]
			if a.Proc >= b.Proc || !a.Overlaps(b) || len(lost) > 0 && lostExcused(tr, lost, a, b) {
				continue
			}
			at := max(a.From, b.From)
			out = append(out, Violation{Property: ExclusiveLeadership, At: time.Duration(at),
				PIDs:   []int{tr.Procs[a.Proc].PID, tr.Procs[b.Proc].PID},
				Events: []int{roleEvent(tr, a.Proc, a.From), roleEvent(tr, b.Proc, b.From)},
				Detail: fmt.Sprintf("processes %s (leading since %s) and %s (since %s) both lead",
					tr.ProcName(a.Proc), secs(time.Duration(a.From)), tr.ProcName(b.Proc), secs(time.Duration(b.From)))})
		}
	}
	slices.SortStableFunc(out, func(x, y Violation) int { return cmp.Compare(x.At, y.At) })
	return out
}

func roleEvent(tr *trace.Trace, p int, t int64) int {
	for i, e := range tr.Events {
		if e.Kind == trace.EvRole && int(e.Proc) == p && e.T == t {
			return i
		}
	}
	return -1
}

func secs(d time.Duration) string {
	return fmt.Sprintf("%d.%06ds", d/time.Second, d%time.Second/time.Microsecond)
}

// ParseProperties parses a comma list of property names ("" or "all": every one).
func ParseProperties(s string) ([]string, error) {
	if s == "" || s == "all" {
		return Properties, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		ok := false
		for _, p := range Properties {
			ok = ok || p == name
		}
		if !ok {
			return nil, fmt.Errorf("unknown property %q (valid: %s)", name, strings.Join(Properties, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}
