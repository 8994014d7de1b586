package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/trace"
)

var scaled = scaledConfig

// The failover measurement measures what it says: after a SIGKILL the
// reference's watchers wait out the lease (at least a lease less the time
// since the last renewal they saw), after a SIGTERM they take over at once.
func TestFailoverMeasures(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for about 6 s")
	}
	v, _ := lease.LookupVariant("reference")
	rows, err := measureFailover(leaselabBinary(t), failoverSubject{label: v.Name, variant: v}, scaled, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if len(r.gaps) != 2 || r.missed != 0 {
			t.Fatalf("%s: gaps %v, %d missed: want 2 gaps and none missed (no wedge)", r.signal, r.gaps, r.missed)
		}
		// A SIGTERM is a hand-over, far less than a lease; a SIGKILL is
		// waited out, about a lease (the last renewal came up to a renew
		// interval before the kill). The bounds tell the two apart and
		// allow what a loaded machine adds.
		lo, hi := time.Duration(0), scaled.LeaseDuration/2
		if r.signal == trace.Kill {
			lo, hi = scaled.LeaseDuration/2, scaled.LeaseDuration+time.Second
		}
		for _, g := range r.gaps {
			if g < lo || g > hi { // 0: a hand-over faster than the harness reads two pipes (gapMeter)
				t.Errorf("%s gap %v outside [%v, %v]", r.signal, g, lo, hi)
			}
		}
		t.Logf("%s: %v (bound %v)", r.signal, r.gaps, r.bound)
	}
}

// BenchmarkFailover is the README's failover table: for each variant (and
// the reference over a real Redis, etcd, PostgreSQL and SQLite, in memory,
// and etcd and SQLite on the disk), real
// processes, 30 SIGKILLs and 30 SIGTERMs of the leader at random instants
// (3 of each with -short), the leaderless gap's median, p99 and max, each
// also as a ratio to the variant's bound (see failoverBound). The targets
// are ratios of at most 1.
func BenchmarkFailover(b *testing.B) {
	n := 30
	if testing.Short() {
		n = 3
	}
	bin := leaselabBinary(b)
	var subjects []failoverSubject
	for _, name := range []string{"seed", "reference", "flock"} {
		v, err := lease.LookupVariant(name)
		if err != nil {
			b.Fatal(err)
		}
		subjects = append(subjects, failoverSubject{label: name, variant: v})
	}
	// The servers keep their data in memory (PostgreSQL: fsync off): the
	// rows measure the hand-over's protocol, not the disk's flushes. The
	// "(disk)" rows are etcd and SQLite with their data on the disk, for
	// what the fsyncs add.
	onDisk := func(sub failoverSubject) failoverSubject {
		sub.label += " (disk)"
		return sub
	}
	subjects = append(subjects,
		serverSubject("redis", servertest.Redis(b, "").Addr),
		serverSubject("etcd", servertest.Etcd(b).Endpoint()),
		serverSubject("postgres", servertest.Postgres(b).DSN()),
		serverSubject("sqlite", filepath.Join(servertest.MemDir(b), "lease.db")),
		onDisk(serverSubject("etcd", servertest.EtcdOnDisk(b).Endpoint())),
		onDisk(serverSubject("sqlite", filepath.Join(b.TempDir(), "lease.db"))))
	for _, sub := range subjects {
		b.Run(sub.label, func(b *testing.B) {
			var rows []failoverRow
			var err error
			for range b.N {
				// A measurement cut short (no leader for a while on a
				// loaded machine, a server that stalled) keeps the rows it
				// has and says why, as leaselab failover does: a benchmark
				// measures, the tests judge.
				if rows, err = measureFailover(bin, sub, scaled, 3, n, 1); err != nil {
					b.Logf("%s: cut short: %v", sub.label, err)
					b.ReportMetric(1, "cut-short")
				}
			}
			for _, r := range rows {
				s := r.signal.String()
				// Every gap, for what p99 of 30 (their maximum) cannot
				// say: one slow hand-over, or a slower whole.
				b.Logf("%s %s gaps (sorted): %v", sub.label, s, r.gaps)
				b.ReportMetric(ms(r.quantile(0.5)), s+"-median-ms")
				b.ReportMetric(ms(r.quantile(0.99)), s+"-p99-ms")
				b.ReportMetric(ms(r.quantile(1)), s+"-max-ms")
				b.ReportMetric(ratio(r.quantile(0.99), r.bound), s+"-p99/bound")
				b.ReportMetric(float64(r.missed), s+"-missed")
			}
		})
	}
}

// A wedge is counted as a missed failover, and the measurement goes on: a
// seed leader killed between the truncation and the write of a renewal
// leaves an empty lock file, which no seed process ever takes over (the
// post's empty-file bug; BenchmarkFailover met it on the real kernel). The
// test empties the file right after each SIGKILL, as that death does.
func TestFailoverCountsWedges(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for about 10 s")
	}
	afterFailoverSignal = func(sig trace.FaultKind, lock string) {
		if sig == trace.Kill {
			os.Truncate(lock, 0)
		}
	}
	defer func() { afterFailoverSignal = nil }()
	v, _ := lease.LookupVariant("seed")
	rows, err := measureFailover(leaselabBinary(t), failoverSubject{label: v.Name, variant: v}, scaled, 3, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := 0
		if r.signal == trace.Kill {
			want = 1
		}
		if r.missed != want || len(r.gaps) != 1-want {
			t.Errorf("%s: missed %d, gaps %v; want %d missed", r.signal, r.missed, r.gaps, want)
		}
	}
}

// An unreachable server is one row's error: the rows measured are kept,
// and the exit status is 2, bad input, as run's (1 until 2026-12-07, which
// told it from a failover that missed its bound only by the table). With
// nothing else to measure it exits 2 at once: TestBadInput.
func TestFailoverKeepsRowsPastAnUnreachableServer(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for about 3 s")
	}
	addr := servertest.Unreachable(t)
	code, out, errOut := runCLI("failover", "-variants", "reference", "-n", "1", "-procs", "2", "-redis", addr, "-bin", leaselabBinary(t))
	if code != 2 {
		t.Errorf("exit %d, want 2; stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "leaselab: failover redis: redisstore: ") {
		t.Errorf("stderr does not name the unreachable server: %q", errOut)
	}
	for _, want := range []string{"| reference | SIGKILL | 1 |", "| reference | SIGTERM | 1 |", "| redis | - | error: redisstore: " + addr} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// The failover gap is measured from the end of the victim's leadership to
// the next leader line stamped after the signal, whatever order the
// harness read the two pipes in: a successor stamped before the victim's
// step-down (its reader goroutine ran first under load) is a hand-over
// too fast to measure, not an earlier term's line to discard.
func TestGapMeter(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	for _, c := range []struct {
		name   string
		kill   bool
		events [][3]int64 // victim?, leader?, stamp in ms
		want   time.Duration
		found  bool
	}{
		{"SIGKILL, then a leader", true, [][3]int64{{0, 1, 900}}, 900 * time.Millisecond, true},
		{"SIGTERM: step-down, then a leader", false, [][3]int64{{1, 0, 5}, {0, 1, 7}}, 2 * time.Millisecond, true},
		{"SIGTERM: step-down read first, stamped after the leader", false, [][3]int64{{1, 0, 8}, {0, 1, 7}}, 0, true},
		{"SIGTERM: the leader read before the step-down", false, [][3]int64{{0, 1, 7}, {1, 0, 8}}, 7 * time.Millisecond, true},
		{"a leader line from before the signal", true, [][3]int64{{0, 1, -1}}, 0, false},
		{"the victim's own leader line", true, [][3]int64{{1, 1, 3}}, 0, false},
	} {
		g := gapMeter{sent: 0, end: 0, ended: c.kill}
		var got time.Duration
		found := false
		for _, e := range c.events {
			if gap, ok := g.see(e[0] == 1, e[1] == 1, ms(e[2])); ok && !found {
				got, found = gap, true
			}
		}
		if found != c.found || got != c.want {
			t.Errorf("%s: gap %v (found %v), want %v (%v)", c.name, got, found, c.want, c.found)
		}
	}
}
