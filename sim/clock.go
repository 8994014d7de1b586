package sim

import (
	"math"
	"time"
)

// The clock model. True time t is the simulator's; each process reads its
// own clocks, derived from t:
//
//	mono(t) = t - boot + drift_p(t)                      (CLOCK_MONOTONIC)
//	wall(t) = base + mono(t) + boot + skew_p + steps(t)  (CLOCK_REALTIME)
//
// boot is the true instant the process's machine booted: 0 for the run's
// first boot, and after a power loss the instant the machine came back,
// from which a monotonic clock counts again (a lease deadline kept on
// CLOCK_MONOTONIC across a reboot, in a file, is then a wait of the last
// boot's uptime: a probe's fix the simulator approved while its clocks
// ran on across a power loss, helper-110); the wall clock reads on.
//
// On one machine every process shares both clocks: drift and skew are zero
// and a wall-clock step (NTP, an operator) moves every process's wall time
// at once. A per-process skew or drift stands for a process on another
// machine sharing the directory (a time namespace offsets the monotonic
// clock, never the wall clock: not modelled). Rates are integer
// parts per million so that runs are bit-identical on every machine (no
// floating point, no fused multiply-add).

// rateSeg is one piece of a process's piecewise-linear monotonic clock.
type rateSeg struct {
	t0, local0 int64 // at true time t0 the local clock read local0
	ppm        int64 // rate error from t0 on: local runs (1e6+ppm)/1e6 as fast
}

// procClock is one process's clocks.
type procClock struct {
	segs  []rateSeg  // ordered by t0; segs[0].t0 == boot
	skew  int64      // wall offset in ns
	first [1]rateSeg // segs' first array, after init
	// own marks the machine's own clock: one segment, of no drift, so
	// that local readings are true times (mono and trueAt inline for it).
	own bool
	// boot is the true instant its machine booted (reboot).
	boot int64
}

func newProcClock(ppm, skew int64) procClock {
	return procClock{segs: []rateSeg{{ppm: ppm}}, skew: skew, own: ppm == 0}
}

// init makes c the clock newProcClock(ppm, skew) returns, in place: its
// first segment lives in c, so a process whose rate never changes costs
// no allocation (c must not be copied afterwards).
func (c *procClock) init(ppm, skew int64) {
	*c = procClock{skew: skew, first: [1]rateSeg{{ppm: ppm}}, own: ppm == 0}
	c.segs = c.first[:]
}

// scale returns d*(1e6+ppm)/1e6 without overflow for |d| < 2^63/1e6 s.
func scale(d, ppm int64) int64 {
	return d + d/1e6*ppm + d%1e6*ppm/1e6
}

// mono returns the local monotonic reading at true time t. It inlines
// for the common case, the machine's own clock (a run reads clocks a few
// times a system call).
func (c *procClock) mono(t int64) int64 {
	if c.own {
		return t
	}
	return c.monoDrifted(t)
}

//go:noinline (so that mono inlines)
func (c *procClock) monoDrifted(t int64) int64 {
	s := c.segs[len(c.segs)-1]
	for i := len(c.segs) - 1; s.t0 > t && i > 0; i-- {
		s = c.segs[i-1]
	}
	return s.local0 + scale(t-s.t0, s.ppm)
}

// trueAt returns the earliest true time at which the local monotonic clock
// reads at least local, assuming the current rate holds from now on. Like
// mono it inlines for the machine's own clock (its one segment starts at
// 0 reading 0), where a reading within reach is its own true time.
func (c *procClock) trueAt(local int64) int64 {
	if c.own && uint64(local-1) < ownMax-1 {
		return local // 0 < local < ownMax
	}
	return c.trueAtRest(local)
}

// ownMax bounds the readings of the machine's own clock that trueAt
// returns as they are: trueAtRest's answer for them (d/1e6 < never/1e6).
const ownMax = never / 1_000_000 * 1_000_000

//go:noinline (so that trueAt inlines)
func (c *procClock) trueAtRest(local int64) int64 {
	s := c.segs[len(c.segs)-1]
	d := local - s.local0
	if d <= 0 {
		return s.t0
	}
	if s.ppm == 0 {
		// No drift (a segment after a drift fault's end; the machine's
		// own clock is answered by trueAt itself): the rest's answer
		// without its divisions by a variable (two in a row: 12 ns in a
		// loop on the machine of 2026-12-07; scale is the identity).
		if d/1e6 >= (never-s.t0)/1e6 {
			return never
		}
		return s.t0 + d
	}
	// invert scale: t = d*1e6/(1e6+ppm), rounded up so mono(t) >= local.
	den := 1e6 + s.ppm
	if d/den >= (never-s.t0)/1e6 {
		// A clock crawling at a few ppm of true speed: the answer is past
		// any horizon, and computing it would overflow.
		return never
	}
	t := d/den*1e6 + (d%den*1e6+den-1)/den
	for scale(t, s.ppm) < d {
		t++
	}
	for t > 0 && scale(t-1, s.ppm) >= d {
		t--
	}
	return s.t0 + t
}

// never is a true time past any run's horizon (146 years), which trueAt
// returns when the local reading would be reached later still.
const never = math.MaxInt64 / 2

// setRate changes the drift from true time t on.
func (c *procClock) setRate(t, ppm int64) {
	c.segs = append(c.segs, rateSeg{t0: t, local0: c.mono(t), ppm: ppm})
	c.own = false
}

// reboot makes c a clock of a machine that booted at true time at: its
// monotonic reading is 0 then, at the rate it had, and its wall clock
// reads as before (less the drift it had gathered). Idempotent.
func (c *procClock) reboot(at int64) {
	ppm := c.segs[len(c.segs)-1].ppm
	c.segs = append(c.segs[:0], rateSeg{t0: at, ppm: ppm})
	c.boot, c.own = at, false
}

// wallStep is a step of the machine's wall clock at true time T.
type wallStep struct {
	t, delta int64
}

// wallOf returns process p's wall clock at true time t.
func (w *World) wallOf(c *procClock, t int64) time.Time {
	ns := w.base + c.mono(t) + c.boot + c.skew
	for _, s := range w.steps {
		if s.t <= t {
			ns += s.delta
		}
	}
	return time.Unix(0, ns).UTC()
}

// reboot starts the machine's boot at true time at (after a power loss):
// the clocks of the processes that start from then on count from it
// (procClock.reboot): those configured to start later, now, and those a
// restart adds (addProc).
func (w *World) reboot(at int64) {
	w.bootAt = at
	for i, q := range w.procs {
		if !q.dead && i < len(w.cfg.Procs) && int64(w.cfg.Procs[i].Start) > w.now {
			q.clock.reboot(at)
		}
	}
}
