package lease_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

func TestDefaultConfig(t *testing.T) {
	c := lease.DefaultConfig()
	if c.LeaseDuration != 9*time.Second || c.RenewInterval != 3*time.Second || c.WatchInterval != 3*time.Second {
		t.Errorf("DefaultConfig() = lease %v, renew %v, watch %v; want 9s, 3s, 3s",
			c.LeaseDuration, c.RenewInterval, c.WatchInterval)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		lease, renew, watch time.Duration
		want                []string // substrings of the error; nil: no error
	}{
		{9 * s, 3 * s, 3 * s, nil},
		{2 * s, 1 * s, 10 * s, nil},
		{3*s + 1, 3 * s, time.Millisecond, nil},
		// A renewal or a read every microsecond spins (a probe: 6,000 log
		// lines a second at -renew 1us -watch 1us).
		{time.Hour, time.Microsecond, time.Microsecond, []string{"renew 1µs", "watch 1µs", "at least 1ms"}},
		{9 * s, 3 * s, time.Millisecond - 1, []string{"watch 999.999µs", "at least 1ms"}},
		{3 * s, 3 * s, 3 * s, []string{"lease 3s", "renew interval 3s"}},
		{2 * s, 3 * s, 3 * s, []string{"lease 2s", "renew interval 3s"}},
		{0, 3 * s, 3 * s, []string{"positive", "lease 0s", "renew 3s", "watch 3s"}},
		{9 * s, 0, 3 * s, []string{"positive", "lease 9s", "renew 0s", "watch 3s"}},
		{9 * s, 3 * s, 0, []string{"positive", "lease 9s", "renew 3s", "watch 0s"}},
		{-9 * s, 3 * s, 3 * s, []string{"positive", "lease -9s"}},
		{9 * s, -3 * s, 3 * s, []string{"positive", "renew -3s"}},
		{9 * s, 3 * s, -1 * s, []string{"positive", "watch -1s"}},
		{24 * time.Hour, 3 * s, 3 * s, nil},
		// Longer than a record may state: a reader would take the live
		// holder's record for garbage and take over (found by a probe:
		// -lease 25h against -lease 2s, two commands at once).
		{25 * time.Hour, 3 * s, 3 * s, []string{"lease 25h0m0s", "24h0m0s"}},
		{24*time.Hour + time.Millisecond, 3 * s, 3 * s, []string{"longer than"}},
	} {
		c := lease.Config{LeaseDuration: tc.lease, RenewInterval: tc.renew, WatchInterval: tc.watch}
		err := c.Validate()
		if tc.want == nil {
			if err != nil {
				t.Errorf("Validate(lease %v, renew %v, watch %v) = %v, want nil", tc.lease, tc.renew, tc.watch, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Validate(lease %v, renew %v, watch %v) = nil, want an error", tc.lease, tc.renew, tc.watch)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Validate(lease %v, renew %v, watch %v) = %q, want it to mention %q",
					tc.lease, tc.renew, tc.watch, err, w)
			}
		}
		// NewSeedProgram refuses the same configs.
		if _, err := lease.NewSeedProgram(nil, nil, c); err == nil {
			t.Errorf("NewSeedProgram accepted lease %v, renew %v, watch %v", tc.lease, tc.renew, tc.watch)
		}
	}
}

// A watcher whose clock runs slow by the drift bound waits a lease of
// its clock: lease/(1-ρ) of true time, ρ/(1-ρ) of a lease more.
func TestDriftLag(t *testing.T) {
	for _, c := range []struct {
		lease time.Duration
		ppm   int64
		want  time.Duration
	}{
		{9 * time.Second, 0, 90909 * time.Microsecond},           // the default 1%
		{60 * time.Second, 0, 606060 * time.Microsecond},         // a probe's 60.57 s wait is inside it
		{9 * time.Second, 100_000, 1 * time.Second},              // 10%
		{9 * time.Second, 1_000_000, 9 * time.Second},            // a clock that may stop
		{24 * time.Hour, 10_000, 872727272727 * time.Nanosecond}, // no overflow
	} {
		got := lease.Config{LeaseDuration: c.lease, DriftBoundPPM: c.ppm}.DriftLag()
		if d := got - c.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("lease %v at %d ppm: DriftLag %v, want %v", c.lease, c.ppm, got, c.want)
		}
	}
}
