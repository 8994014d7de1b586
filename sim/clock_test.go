package sim

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// exactScale is d*(1e6+ppm)/1e6 in exact arithmetic, rounded as scale
// rounds: toward zero for each of the two parts of d. It is the reference
// for scale's overflow-avoiding formula.
func exactScale(d, ppm int64) *big.Int {
	q, r := d/1e6, d%1e6
	x := new(big.Int).Mul(big.NewInt(q), big.NewInt(1e6+ppm))
	y := new(big.Int).Mul(big.NewInt(r), big.NewInt(ppm))
	y.Quo(y, big.NewInt(1e6))
	x.Add(x, y)
	return x.Add(x, big.NewInt(r))
}

var ppms = []int64{-999999, -999000, -500000, -100000, -1000, -200, -1, 0, 1, 50, 200, 1000, 123457, 500000, 999999, 1000000}

func TestScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ppm := range ppms {
		prev := int64(0)
		for _, d := range []int64{0, 1, 2, 999, 999_999, 1_000_000, 1_000_001, 1_999_999, 3e9, 3e9 + 7, 86400e9, 1e15} {
			got := scale(d, ppm)
			if want := exactScale(d, ppm); !want.IsInt64() || want.Int64() != got {
				t.Errorf("scale(%d, %d) = %d, want %v", d, ppm, got, want)
			}
			// Exact to within one ns of d*(1e6+ppm)/1e6.
			exact := new(big.Int).Mul(big.NewInt(d), big.NewInt(1e6+ppm))
			exact.Quo(exact, big.NewInt(1e6))
			diff := new(big.Int).Sub(exact, big.NewInt(got))
			if diff.CmpAbs(big.NewInt(1)) > 0 {
				t.Errorf("scale(%d, %d) = %d, off by %v from %v", d, ppm, got, diff, exact)
			}
			if got < prev {
				t.Errorf("scale(%d, %d) = %d < an earlier value %d: not monotonic", d, ppm, got, prev)
			}
			prev = got
		}
		// Monotonic, step by step, across the 1e6 boundary where the
		// formula switches between its two parts.
		for _, base := range []int64{0, 999_990, 5_999_990, 1e12 - 10} {
			for d := base; d < base+20; d++ {
				if a, b := scale(d, ppm), scale(d+1, ppm); b < a {
					t.Errorf("scale(%d, %d) = %d > scale(%d) = %d", d, ppm, a, d+1, b)
				}
			}
		}
		for range 1000 {
			d := rng.Int64N(1e15)
			if a, b := scale(d, ppm), scale(d+1, ppm); b < a || b > a+2 {
				t.Errorf("scale(%d, %d) = %d, scale(%d) = %d: not monotonic", d, ppm, a, d+1, b)
			}
		}
	}
}

// checkInverse checks that trueAt(L) is the earliest true time, no earlier
// than the current segment's start, at which c reads at least L.
func checkInverse(t *testing.T, c *procClock, local int64) {
	t.Helper()
	last := c.segs[len(c.segs)-1]
	tt := c.trueAt(local)
	if tt == never {
		// Allowed only when the answer is past any horizon: a clock
		// crawling at a few ppm of true speed.
		exact := new(big.Int).Mul(big.NewInt(local-last.local0), big.NewInt(1e6))
		exact.Quo(exact, big.NewInt(1e6+last.ppm))
		exact.Add(exact, big.NewInt(last.t0))
		if exact.Cmp(big.NewInt(never-2e6)) < 0 {
			t.Errorf("ppm %d: trueAt(%d) = never, but the answer is %v", last.ppm, local, exact)
		}
		return
	}
	if tt < last.t0 {
		t.Errorf("ppm %d: trueAt(%d) = %d, before the segment starting at %d", last.ppm, local, tt, last.t0)
	}
	if m := c.mono(tt); m < local {
		t.Errorf("ppm %d: mono(trueAt(%d) = %d) = %d < %d", last.ppm, local, tt, m, local)
	}
	if tt > last.t0 {
		if m := c.mono(tt - 1); m >= local {
			t.Errorf("ppm %d: mono(trueAt(%d)-1 = %d) = %d >= %d: trueAt is not the earliest", last.ppm, local, tt-1, m, local)
		}
	}
}

func TestTrueAtInvertsMono(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	locals := []int64{-5, 0, 1, 2, 3, 999_999, 1_000_000, 1_000_001, 3e9, 3e9 + 1, 9e9, 60e9, 86400e9}
	for _, ppm := range ppms {
		c := newProcClock(ppm, 0)
		for _, l := range locals {
			checkInverse(t, &c, l)
		}
		// At a few ppm of true speed trueAt steps through up to 1e6/(1e6+ppm)
		// candidates; keep those cases few.
		n := 2000
		if 1e6+ppm < 1e4 {
			n = 20
		}
		for range n {
			checkInverse(t, &c, rng.Int64N(100e9))
		}
		for range 200 {
			checkInverse(t, &c, rng.Int64N(1e6))
		}
	}
	// The same after rate changes: trueAt uses the latest segment.
	for range 200 {
		c := newProcClock(ppms[rng.IntN(len(ppms))], 0)
		at := int64(0)
		for range 3 {
			at += rng.Int64N(10e9)
			c.setRate(at, ppms[rng.IntN(len(ppms))])
		}
		now := c.mono(at)
		m := 50
		if 1e6+c.segs[len(c.segs)-1].ppm < 1e4 {
			m = 2
		}
		for range m {
			checkInverse(t, &c, now+rng.Int64N(30e9))
		}
		// A local time already past maps to the segment's start, the
		// earliest time the current rate describes.
		if got := c.trueAt(now - 1); got != at {
			t.Errorf("trueAt of a past reading = %d, want the segment start %d", got, at)
		}
	}
}

func TestSetRateContinuity(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		ppm0, ppm1 := ppms[rng.IntN(len(ppms))], ppms[rng.IntN(len(ppms))]
		c := newProcClock(ppm0, 0)
		at := 1 + rng.Int64N(100e9)
		before := c.mono(at)
		earlier := make([]int64, 0, 5)
		probes := []int64{0, 1, at / 2, at - 1, at}
		for _, p := range probes {
			earlier = append(earlier, c.mono(p))
		}
		c.setRate(at, ppm1)
		if got := c.mono(at); got != before {
			t.Fatalf("ppm %d -> %d at %d: mono jumps from %d to %d", ppm0, ppm1, at, before, got)
		}
		// The past is unchanged.
		for i, p := range probes {
			if got := c.mono(p); got != earlier[i] {
				t.Errorf("ppm %d -> %d at %d: mono(%d) changed from %d to %d", ppm0, ppm1, at, p, earlier[i], got)
			}
		}
		// Monotonic across the change, and running at the new rate after.
		if a, b, cc := c.mono(at-1), c.mono(at), c.mono(at+1); a > b || b > cc {
			t.Errorf("ppm %d -> %d at %d: mono around the change = %d, %d, %d", ppm0, ppm1, at, a, b, cc)
		}
		d := rng.Int64N(10e9)
		if got, want := c.mono(at+d), before+scale(d, ppm1); got != want {
			t.Errorf("ppm %d -> %d: mono(%d after the change) = %d, want %d", ppm0, ppm1, d, got, want)
		}
	}
	// Three segments: each reading comes from its own segment.
	c := newProcClock(0, 0)
	c.setRate(10e9, 1000)    // from 10 s: 1 ms/s fast
	c.setRate(20e9, -500000) // from 20 s: half speed
	for _, tc := range []struct{ t, want int64 }{
		{5e9, 5e9},
		{10e9, 10e9},
		{15e9, 15e9 + 5e6},
		{20e9, 20e9 + 10e6},
		{30e9, 25e9 + 10e6},
	} {
		if got := c.mono(tc.t); got != tc.want {
			t.Errorf("mono(%v) = %v, want %v", time.Duration(tc.t), time.Duration(got), time.Duration(tc.want))
		}
	}
	// At half speed 25.01 s local is reached around 30 s true (within a ns:
	// scale rounds the correction toward zero).
	if got := c.trueAt(25e9 + 10e6); got < 30e9-1 || got > 30e9 {
		t.Errorf("trueAt(25.01s) = %v, want 30s within 1ns", time.Duration(got))
	}
	checkInverse(t, &c, 25e9+10e6)
	// The cap: a reading reached only after centuries is "never", and
	// trueAt returns at once instead of overflowing.
	crawl := newProcClock(-999999, 0)
	if got := crawl.trueAt(86400e9); got != never {
		t.Errorf("trueAt(1 day) at -999999 ppm = %d, want never (%d)", got, int64(never))
	}
	if got := crawl.trueAt(1e9); got < 999_999e9 || got > 1_000_000e9 {
		t.Errorf("trueAt(1s) at -999999 ppm = %v, want about 1e6 s", time.Duration(got))
	}
}

func TestWallOf(t *testing.T) {
	base := time.Date(2025, 10, 14, 21, 14, 38, 0, time.UTC)
	w := &World{base: base.UnixNano()}
	plain := newProcClock(0, 0)
	skewed := newProcClock(0, int64(-1500*time.Millisecond))
	fast := newProcClock(1000, int64(time.Second)) // 1 ms/s fast, 1 s ahead
	check := func(name string, c *procClock, at time.Duration, want time.Time) {
		t.Helper()
		got := w.wallOf(c, int64(at))
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: wallOf(%v) = %v, want %v", name, at,
				got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
	}
	check("plain", &plain, 0, base)
	check("plain", &plain, 7*time.Second, base.Add(7*time.Second))
	check("skewed", &skewed, 0, base.Add(-1500*time.Millisecond))
	check("skewed", &skewed, 10*time.Second, base.Add(8500*time.Millisecond))
	check("fast", &fast, 0, base.Add(time.Second))
	check("fast", &fast, 10*time.Second, base.Add(11*time.Second+10*time.Millisecond))

	// A step applies from its instant on, to every process, and steps add.
	w.steps = []wallStep{{t: int64(5 * time.Second), delta: int64(20 * time.Second)}}
	check("plain before the step", &plain, 5*time.Second-1, base.Add(5*time.Second-1))
	check("plain at the step", &plain, 5*time.Second, base.Add(25*time.Second))
	check("skewed after the step", &skewed, 6*time.Second, base.Add(24500*time.Millisecond))
	check("fast after the step", &fast, 10*time.Second, base.Add(31*time.Second+10*time.Millisecond))
	w.steps = append(w.steps, wallStep{t: int64(8 * time.Second), delta: int64(-30 * time.Second)})
	check("plain between the steps", &plain, 7*time.Second, base.Add(27*time.Second))
	check("plain after both steps", &plain, 9*time.Second, base.Add(-1*time.Second))
	check("skewed after both steps", &skewed, 9*time.Second, base.Add(-2500*time.Millisecond))

	// A step moves the wall clock but not the monotonic one.
	if got := plain.mono(int64(9 * time.Second)); got != int64(9*time.Second) {
		t.Errorf("mono after wall steps = %v, want 9s", time.Duration(got))
	}
	// A skew change moves one process only.
	skewed.skew += int64(2 * time.Second)
	check("skewed after +2s skew", &skewed, 9*time.Second, base.Add(-500*time.Millisecond))
	check("plain after another's skew", &plain, 9*time.Second, base.Add(-1*time.Second))
}

// TestTrueAtNoDrift holds trueAt's shortcut for a clock at the true rate
// to the general inversion's answer, the horizon's edge included.
func TestTrueAtNoDrift(t *testing.T) {
	general := func(t0, local0, local int64) int64 { // trueAt's inversion, ppm 0
		d := local - local0
		if d <= 0 {
			return t0
		}
		den := int64(1e6)
		if d/den >= (never-t0)/1e6 {
			return never
		}
		tt := d/den*1e6 + (d%den*1e6+den-1)/den
		for scale(tt, 0) < d {
			tt++
		}
		for tt > 0 && scale(tt-1, 0) >= d {
			tt--
		}
		return t0 + tt
	}
	rng := rand.New(rand.NewPCG(5, 6))
	c := newProcClock(0, 0)
	c.setRate(7e9, 250) // a segment that does not start at 0 ...
	c.setRate(9e9, 0)   // ... then the true rate again
	s := c.segs[len(c.segs)-1]
	edge := never - s.t0 + s.local0
	locals := []int64{s.local0 - 1, s.local0, s.local0 + 1, edge - 2e6, edge - 1e6 - 1, edge - 1e6, edge - 1, edge, edge + 1}
	for range 1000 {
		locals = append(locals, s.local0+rng.Int64N(1e15))
	}
	for _, l := range locals {
		if got, want := c.trueAt(l), general(s.t0, s.local0, l); got != want {
			t.Errorf("trueAt(%d) = %d, the general inversion %d", l, got, want)
		}
	}
}
