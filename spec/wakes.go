package spec

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

// WakeBase and WakeRate bound how often a process with config c may wake
// on its own clock (trace.Trace.Wakes: a sleep, a ticker's tick or a wait
// for a change that ran out) while nothing changes, not counting the
// wakes that retry a failure (see RetryWakeBound): in any quiet stretch
// of length L, at most WakeBase + WakeRate(c, ppm) x L wakes. The rate is
// a tick of its renewal timer and one of its watch timer each interval,
// on a clock that runs fast by ppm (the fastest any clock of the run
// ran); the base is three wakes (the reaction to the change that opened
// the stretch, a lease's expiry, a local deadline) and two for rounding
// (the first tick of each timer). With the post's intervals that is 5
// wakes and 2/3 of a wake a second: 5.7 in one second, 21 in 24 s. A
// leader that renews every 500 ms (six times as often) wakes 48 times in
// 24 s; a watcher that polls every 50 ms, twenty times a second.
//
// BusyBound allows each wake CallsPerWake system calls, so a process that
// waits between its tries, too briefly, stays under it (a probe's mutants:
// 465 renewals instead of 15 in 48 s, 1,959 listings instead of 123, no
// violation); counting the wakes themselves catches it. Over windows of
// any length, not one second: a first version allowed 5 a second, and a
// review's leader renewing twice a second (six times the design's rate)
// passed.
const WakeBase = 5

// WakeRate is the wakes a second WakeBase's bound allows on top of its
// base: 1s/RenewInterval + 1s/WatchInterval, on a clock ppm fast.
func WakeRate(c lease.Config, ppm int64) float64 {
	r := 1 + float64(ppm)/1e6
	return r * (float64(time.Second)/float64(c.RenewInterval) + float64(time.Second)/float64(c.WatchInterval))
}

// ActWakeRate is the wakes a second WakeBase's bound allows one activity
// (a goroutine: one loop) on top of its base: 1s/min(RenewInterval,
// WatchInterval), on a clock ppm fast. A leader's loop renews, a
// watcher's watches; one that does both in turn waits one interval at a
// time. A
// review's leader renewing twice as often as the design passed the
// process's bound (both timers' rates) in most runs.
func ActWakeRate(c lease.Config, ppm int64) float64 {
	r := 1 + float64(ppm)/1e6
	return r * float64(time.Second) / float64(min(c.RenewInterval, c.WatchInterval))
}

// WakeBound is the most wakes a second RetryWakeBound counts on before its
// retries: a tick of the renewal and of the watch timer at twice the
// clock's rate (a drift below a million ppm runs a clock at most twice as
// fast) and three more, 1 + 1 + 3 = 5 with the post's intervals.
func WakeBound(c lease.Config) int {
	return perSecond(c.RenewInterval/2) + perSecond(c.WatchInterval/2) + 3
}

// RetryWakeBound is the most times a process may wake on its own clock in
// one simulated second while nothing changes, retries included: a wake
// retries a failure when its activity's calls since its previous wake
// include one that failed (failedCall: an error other than ENOENT and
// EEXIST; EWOULDBLOCK from a lock held elsewhere is one), a store
// operation whose outcome is unknown, or a store write that lost a race
// (the record existed, or was another's: the reference backs off after a
// race lost to a record its reads do not show). A correct process backs off after a
// failure, from 1 ms or more, doubling up to WatchInterval: WakeBound's
// wakes and log2(WatchInterval/1ms) + 1 retries, 5 + 13 = 18 with the
// post's intervals. A back-off capped at 50 ms retries twenty times a
// second.
func RetryWakeBound(c lease.Config) int {
	return WakeBound(c) + backoffTries(c.WatchInterval)
}

// wakeViolation reports the first simulated second in which a process woke
// on its own clock more often than WakeBound allows (retries left out) or
// RetryWakeBound (retries in), with nothing changed; nil when none did,
// or when the trace has no wakes (a recorded one).
func wakeViolation(tr *trace.Trace, c lease.Config) *Violation {
	if len(tr.Wakes) == 0 {
		return nil
	}
	allBound := RetryWakeBound(c)
	ppm := fastestDrift(tr)
	perNs := WakeRate(c, ppm) / float64(time.Second)
	perNsAct := ActWakeRate(c, ppm) / float64(time.Second) // one activity runs one loop
	// Most runs end here: no process's wakes, retries and all, break the
	// regular bounds in any window at all, changes or not (nor, then, the
	// retries' bound).
	if !anyDenser(tr, perNs, perNsAct) {
		return nil
	}
	all := make([][]int64, len(tr.Procs))
	regular := make([][]int64, len(tr.Procs))
	byAct := make([][][]int64, len(tr.Procs)) // each activity's regular wakes
	failed := make([][]bool, len(tr.Procs))   // per activity: a failure since its last wake
	for p := range failed {
		failed[p] = make([]bool, len(tr.Acts[p]))
		byAct[p] = make([][]int64, len(tr.Acts[p]))
	}
	i := 0
	for _, wk := range tr.Wakes {
		for ; i < len(tr.Events) && tr.Events[i].T < wk.T; i++ {
			e := &tr.Events[i]
			if e.Proc < 0 || int(e.Act) >= len(failed[e.Proc]) {
				continue
			}
			if failedAttempt(e) {
				failed[e.Proc][e.Act] = true
			}
		}
		all[wk.Proc] = append(all[wk.Proc], wk.T)
		if f := failed[wk.Proc]; int(wk.Act) < len(f) {
			if !f[wk.Act] {
				regular[wk.Proc] = append(regular[wk.Proc], wk.T)
				byAct[wk.Proc][wk.Act] = append(byAct[wk.Proc][wk.Act], wk.T)
			}
			f[wk.Act] = false
		}
	}
	ch := changes(tr)
	var first *Violation
	for p, ts := range regular {
		if from, k := quietLinear(ts, ch, p, perNs); k >= 0 && (first == nil || time.Duration(ts[k]) < first.At) {
			first = wakeDetail(tr, p, ts, from, k, ch, "retries of a failure not counted",
				fmt.Sprintf("bound %d and %.2f a second of the stretch: its timers' ticks, on its fastest clock", WakeBase, perNs*float64(time.Second)))
		}
	}
	for p, acts := range byAct {
		for _, ts := range acts {
			if from, k := quietLinear(ts, ch, p, perNsAct); k >= 0 && (first == nil || time.Duration(ts[k]) < first.At) {
				first = wakeDetail(tr, p, ts, from, k, ch, "all of one activity, retries of a failure not counted",
					fmt.Sprintf("bound %d and %.2f a second of the stretch: one timer's ticks, the shorter interval's, on its fastest clock", WakeBase, perNsAct*float64(time.Second)))
			}
		}
	}
	for p, ts := range all {
		if from, k := quietDense(ts, ch, p, allBound); k >= 0 && (first == nil || time.Duration(ts[k]) < first.At) {
			first = wakeDetail(tr, p, ts, from, k, ch, "retries of failures included", fmt.Sprintf("bound %d a second", allBound))
		}
	}
	return first
}

// fastestDrift is the largest clock drift of the run, in ppm: a process's
// own at its start, or a drift fault's (which sets one process's, or the
// leader's and the opposite for every other).
func fastestDrift(tr *trace.Trace) int64 {
	ppm := int64(0)
	for _, p := range tr.Procs {
		ppm = max(ppm, abs(p.DriftPPM))
	}
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.EvFault && e.FaultKind() == trace.Drift && !e.Missed() {
			ppm = max(ppm, abs(e.DriftPPM()))
		}
	}
	return ppm
}

// quietLinear finds the first of process p's wakes ts (in time order)
// that makes a window of quiet for p (see changes) hold more than
// WakeBase + perNs x its length: count = k-i+1 > perNs (t_k - t_i) +
// WakeBase, i.e. (k - perNs t_k) - (i - perNs t_i) > WakeBase - 1. It
// returns the window's first wake and that wake, or -1, -1.
func quietLinear(ts []int64, ch []change, p int, perNs float64) (int, int) {
	k := 0
	segFrom := int64(-1)
	minU, minAt := 0.0, -1 // the least i - perNs t_i in the stretch so far
	for j, t := range ts {
		for ; k < len(ch) && ch[k].t <= t; k++ {
			if ch[k].by != int16(p) && ch[k].t > segFrom {
				segFrom, minAt = ch[k].t, -1 // a new stretch
			}
		}
		u := float64(j) - perNs*float64(t)
		if minAt < 0 || u < minU {
			minU, minAt = u, j
		}
		if u-minU > WakeBase-1 {
			return minAt, j
		}
	}
	return -1, -1
}

// failedAttempt reports whether the event is a failed attempt of its
// process, which a back-off may follow: a failed call (failedCall), a
// store operation of unknown outcome, or a store write that lost a race.
func failedAttempt(e *trace.Event) bool {
	return isCall(e) && failedCall(e) || e.Kind == trace.EvStore && lostOrUnknown(e)
}

// lostOrUnknown reports whether a store operation's outcome was unknown,
// or a write lost a race (the record existed, or was not the one it
// expected): an attempt that failed, which a back-off may follow.
func lostOrUnknown(e *trace.Event) bool {
	switch {
	case e.Store == trace.StoreExpire || e.Store == trace.StoreRead:
		return false
	case e.Res == trace.ResUnknown || e.Res == trace.ResExists || e.Res == trace.ResConflict:
		return true
	}
	return false
}

// anyDenser reports whether some process's wakes, retries and all, hold
// in some window more than WakeBase + perNs x its length, or some
// activity's more than WakeBase + perNsAct x its length (quietLinear,
// with no change).
func anyDenser(tr *trace.Trace, perNs, perNsAct float64) bool {
	if len(tr.Wakes) <= WakeBase {
		return false
	}
	for p := range tr.Procs {
		if denser(tr.Wakes, p, -1, perNs) {
			return true
		}
		for a := range tr.Acts[p] {
			if denser(tr.Wakes, p, a, perNsAct) {
				return true
			}
		}
	}
	return false
}

// denser reports whether process p's wakes (activity act's; -1: all of
// them) hold in some window more than WakeBase + perNs x its length.
func denser(wakes []trace.Wake, p, act int, perNs float64) bool {
	n, minU, seen := 0, 0.0, false
	for _, wk := range wakes {
		if int(wk.Proc) != p || act >= 0 && int(wk.Act) != act {
			continue
		}
		u := float64(n) - perNs*float64(wk.T)
		if !seen || u < minU {
			minU, seen = u, true
		}
		if u-minU > WakeBase-1 {
			return true
		}
		n++
	}
	return false
}

// quietDense finds the first of process p's wakes ts (in time order) that
// is the bound+1-th in one second of quiet for p (no change by the world
// or another process: see changes). It returns the index of that second's
// first wake and of the wake past the bound, or -1, -1.
func quietDense(ts []int64, ch []change, p, bound int) (int, int) {
	lo, k := 0, 0
	segFrom := int64(-1)
	for j, t := range ts {
		for ; k < len(ch) && ch[k].t <= t; k++ {
			if ch[k].by != int16(p) && ch[k].t > segFrom {
				segFrom = ch[k].t
			}
		}
		for lo < j && (ts[lo] < segFrom || t-ts[lo] >= int64(time.Second)) {
			lo++
		}
		if j-lo+1 > bound {
			return lo, j
		}
	}
	return -1, -1
}

// wakeDetail describes process p's busy second of wakes: ts[from] is its
// first, ts[k] the one past the bound.
func wakeDetail(tr *trace.Trace, p int, ts []int64, from, k int, ch []change, what, bound string) *Violation {
	start := ts[from]
	quiet := "from the start"
	for _, c := range ch {
		if c.t > start {
			break
		}
		if c.by != int16(p) {
			quiet = "since " + secs(time.Duration(c.t))
		}
	}
	// Which activities woke, for the detail; and the events that follow
	// the first wake and the one past the bound.
	acts := map[string]int{}
	for _, wk := range tr.Wakes {
		if int(wk.Proc) == p && wk.T >= start && wk.T <= ts[k] {
			acts[tr.Acts[p][wk.Act]]++
		}
	}
	names := make([]string, 0, len(acts))
	for a := range acts {
		names = append(names, a)
	}
	sort.Strings(names)
	for i, a := range names {
		names[i] = fmt.Sprintf("%s x%d", a, acts[a])
	}
	var evs []int
	for _, t := range []int64{start, ts[k]} {
		if i := firstEventOf(tr, p, t); i >= 0 {
			evs = append(evs, i)
		}
	}
	return &Violation{Property: NoBusyLoop, At: time.Duration(ts[k]), PIDs: []int{tr.Procs[p].PID}, Events: evs,
		Detail: fmt.Sprintf("process %s woke on its own clock %d times from %s to %s (%s), %s, with nothing changed %s: no fault, no start or exit, no other process's write (%s)",
			tr.ProcName(p), k-from+1, secs(time.Duration(start)), secs(time.Duration(ts[k])), strings.Join(names, ", "), what, quiet, bound)}
}

// firstEventOf returns the index of process p's first event at or after
// true time t, or -1.
func firstEventOf(tr *trace.Trace, p int, t int64) int {
	i := sort.Search(len(tr.Events), func(i int) bool { return tr.Events[i].T >= t })
	for ; i < len(tr.Events); i++ {
		if int(tr.Events[i].Proc) == p {
			return i
		}
	}
	return -1
}
