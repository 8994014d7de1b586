package spec

import (
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// The checker's deadlines and the world's drift come from the design's
// numbers, worked out here, not from the code under test (a probe planted
// Config.SafeDeadline without its drift factor, and DefaultDriftPPM at
// 0.1%: honest-role asked the one for its bound, the world drifted no
// more than the other, and 20,000 runs passed each). With the post's
// 9 s lease and the 1% drift bound the safe deadline is about
// 9 s x 0.99/1.01 = 8.82 s (8.8209 s in the integer arithmetic both use).
func TestCheckerDeadlinesAreItsOwn(t *testing.T) {
	c := lease.DefaultConfig()
	c.DriftBoundPPM = 0
	if got := sim.DriftBoundOf(c); got != 10_000 {
		t.Errorf("the design's drift bound: %d ppm, want 10000", got)
	}
	o := sim.SetupOptions{Variant: "reference"}
	if err := o.Normalize(); err != nil {
		t.Fatal(err)
	}
	if o.MaxDriftPPM != 10_000 {
		t.Errorf("the world's default drift: %d ppm, want the design's 10000", o.MaxDriftPPM)
	}
	const safe = 8_820_900_000 * time.Nanosecond // 9e9/1.01e6 = 8,910 (whole) x 0.99e6
	if got := deadlineBound(c); got != safe-50*time.Millisecond {
		t.Errorf("honest-role's bound: %v, want %v", got, safe-50*time.Millisecond)
	}
	if got := expectedDeadline(c); got != safe-50*time.Millisecond {
		t.Errorf("the expected deadline: %v, want %v", got, safe-50*time.Millisecond)
	}
	c.RenewDeadline = 6 * time.Second
	if deadlineBound(c) != 6*time.Second || expectedDeadline(c) != 6*time.Second {
		t.Errorf("with a renew deadline of 6 s: bound %v, expected %v", deadlineBound(c), expectedDeadline(c))
	}
	c.RenewDeadline = 9 * time.Second // past the safe one: the bound stays safe
	if deadlineBound(c) != safe {
		t.Errorf("with a renew deadline of 9 s: bound %v, want %v", deadlineBound(c), safe)
	}
	// The code under test agrees today; where it stops agreeing, this
	// says so (the checker does not move with it).
	c.RenewDeadline = 0
	if c.SafeDeadline() != safe || c.DriftBound() != 10_000 {
		t.Errorf("lease's own numbers moved: safe deadline %v, drift bound %d ppm", c.SafeDeadline(), c.DriftBound())
	}
}
