package spec

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// The scripted runs below each pin one rule of the reference's waits after
// a loss of the server's data (lostUntil, holdLost) or a record the server
// dropped early (Vanishing): holdUntil, waitedFor and the hold's stated
// lease. Each run is one fixed script of faults at chosen instants, over
// several seeds (the seed draws the system calls' latency and the order of
// steps at one instant), judged by Check. They pass on the reference and
// fail, in every seed, on the planted mistake each names (the mutants of
// a probe's mutants.py).
//
// M10-lost-hold-overwrites (holdUntil = expiry for a loss a read shows,
// not the max) has no test: it is equivalent. Every value holdUntil takes
// is at most t + max(LeaseDuration, longest) for the instant t it is set
// (a seen record's lease, leaseOf, is at most that: longest covers every
// lease read, a process's own records state its own lease or the lost
// one's), and t and longest only grow, while lostUntil's expiry is at
// least now + max(LeaseDuration, longest): the max never changes it. (An
// instrumented run of 22,500 random runs with losses, steps and pauses:
// 9,248 read-detected losses with a hold already set, none above expiry.)

const ms = time.Millisecond

// holdSeeds is how many seeds each script runs with, on each variant.
const holdSeeds = 10

// holdRuns runs procs and faults on each variant, seeds 1 to holdSeeds,
// and reports every violation Check finds. HOLDLOG=1 logs the runs.
func holdRuns(t *testing.T, variants []string, horizon time.Duration, procs []sim.ProcSpec, faults []sim.Fault) {
	t.Helper()
	bad := 0
	for _, variant := range variants {
		for seed := uint64(1); seed <= holdSeeds; seed++ {
			cfg := sim.Config{Variant: variant, Seed: seed, Horizon: horizon, Lease: lease.DefaultConfig(),
				Procs: procs, SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond, Faults: faults}
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			failed := false
			for _, v := range Check(tr) {
				if v.Violation != nil {
					failed = true
					t.Errorf("%s, seed %d: %s: %v", variant, seed, v.Property, v.Violation)
				}
			}
			if failed {
				bad++
			}
			if os.Getenv("HOLDLOG") != "" && (failed || seed == 1) {
				t.Logf("%s, seed %d:\n%s", variant, seed, strings.Join(tr.LogLines(), "\n"))
			}
			tr.Release()
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d runs violated a property", bad, len(variants)*holdSeeds)
	}
}

// Kills M1-hold-ended-by-new-version (holdUntil cleared with the back-off
// when a read shows a new version or a release). A wait for a lost lease
// outlives another process's record made and released meanwhile: leader
// 100 (9 s lease, last renewal at 6 s) is paused from 6.2 s to 14.2 s,
// still leading; watcher 200 is paused across the loss of the server's
// data at 6.5 s; 300, started after the loss (it saw no lease: its term
// beside 100's is excused), creates version 1 and leads. 200 reads it,
// below the version it saw, and waits the lost lease out (until 16.5 s);
// 300 is SIGTERMed at 8 s and releases. With the mutant the release ends
// 200's wait and it leads at 8 s beside 100.
func TestHoldOutlivesAFreshRecordsRelease(t *testing.T) {
	holdRuns(t, []string{"redis", "sql", "etcd"}, 30*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * ms}, {PID: 300, Start: 6600 * ms}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, At: 6200 * ms, Dur: 8 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 6300 * ms, Dur: 1200 * ms},
			{Kind: trace.Lose, At: 6500 * ms},
			{Kind: trace.Term, Proc: 2, At: 8 * time.Second},
		})
}

// Kills M4-vanish-hold-overwrites (a record seen and dropped early sets
// holdUntil to its own expiry, forgetting a longer wait already set).
// Mixed leases, a loss and a wall-clock step: as above, 100 leads paused
// (6.2 s to 14.2 s), 200 is paused across the loss at 6.5 s, and 300,
// started after it with a 4 s lease renewed every second, creates and
// leads; 200 reads 300's version 1 below the one it saw and waits the
// lost lease out until 16.5 s. 300 is SIGKILLed at 8.7 s (its record,
// version 3, renewed at 8.6 s) and a 10 s step of the wall clock at 8.8 s
// makes Redis and SQL drop that record; 200's poll at 11.6 s finds it
// vanished, to be waited out until 12.6 s. With the mutant that replaces
// the wait for the lost lease and 200 leads at 12.6 s beside 100.
func TestVanishDoesNotShortenALossWait(t *testing.T) {
	short := lease.Config{LeaseDuration: 4 * time.Second, RenewInterval: time.Second, WatchInterval: time.Second}
	holdRuns(t, []string{"redis", "sql"}, 30*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * ms}, {PID: 300, Start: 6600 * ms, Lease: short}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, At: 6200 * ms, Dur: 8 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 6300 * ms, Dur: 1200 * ms},
			{Kind: trace.Lose, At: 6500 * ms},
			{Kind: trace.Kill, Proc: 2, At: 8700 * ms},
			{Kind: trace.Jump, At: 8800 * ms, Delta: 10 * time.Second},
		})
}

// Kills M9-waitedfor-not-reset (the version of a vanished record waited
// out is not forgotten when a record or a release is read). A version
// that vanished once can vanish again after a loss, on another record:
// a step at 3.5 s drops 100's version 2 (100 is paused 3.1 s to 7.5 s),
// which 200 waits out (waitedFor 2); 100 makes version 3 and leads on.
// 200 is paused across the loss at 14 s; 300, started after it, creates
// version 1 and leads; 200 reads it at 14.5 s (a loss: waited out until
// 23.5 s), then 300's renewal, version 2, at 17.1 s. 300 is paused from
// 17.2 s to 24.7 s, leading, and a second step at 17.5 s drops its version
// 2. 200's
// poll at 20.1 s finds version 2 vanished: it waits it out, until 26.1 s.
// With the mutant it takes it for the version 2 it waited out before the
// loss and leads at 23.5 s beside 300.
func TestVanishedVersionRepeatedAfterALossIsWaitedOut(t *testing.T) {
	holdRuns(t, []string{"redis", "sql"}, 40*time.Second,
		[]sim.ProcSpec{{PID: 100}, {PID: 200, Start: 100 * ms}, {PID: 300, Start: 14100 * ms}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, At: 3100 * ms, Dur: 4400 * ms},
			{Kind: trace.Jump, At: 3500 * ms, Delta: 10 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 13800 * ms, Dur: 700 * ms},
			{Kind: trace.Lose, At: 14 * time.Second},
			{Kind: trace.Stop, Proc: 2, At: 17200 * ms, Dur: 7500 * ms},
			{Kind: trace.Jump, At: 17500 * ms, Delta: 10 * time.Second},
		})
}

// Kills M5-hold-lost-own-ttl (the hold renews with its own lease, not the
// lost one's) and M6-hold-lost-renew-late (the hold's first renewal, the
// one that states the lost lease's length, a renew interval late): mixed
// leases, a loss and a kill. 100 leads with a 27 s lease (last renewal at
// 9 s) and is paused from 9.3 s to 32.3 s, still leading. 200 (9 s lease)
// read version 2 and is paused from 4 s to 15.5 s; 300 (9 s) read version
// 4 and is paused from 9.5 s to 15 s; the server loses its data at 10 s.
// 400, started after the loss, creates version 1, leads, and is SIGTERMed
// at 12 s (the release moves the counter to 2). 300 wakes, creates
// version 3, below the 4 it saw, and holds it over 100's lost lease,
// stating 27 s at once (version 4). 300 is SIGKILLed at 15.8 s. 200 wakes
// at 15.5 s to a version above the 2 it saw, no loss it can tell, and
// waits out the lease the record states: 27 s, past 100's term. With
// either mutant the record states 9 s and 200 leads at 24.5 s beside 100.
func TestHoldStatesTheLostLeasesLength(t *testing.T) {
	long := lease.Config{LeaseDuration: 27 * time.Second, RenewInterval: 3 * time.Second, WatchInterval: 3 * time.Second}
	holdRuns(t, []string{"redis", "sql", "etcd"}, 50*time.Second,
		[]sim.ProcSpec{{PID: 100, Lease: long}, {PID: 200, Start: 100 * ms}, {PID: 300, Start: 200 * ms}, {PID: 400, Start: 10500 * ms}},
		[]sim.Fault{
			{Kind: trace.Stop, Proc: 0, At: 9300 * ms, Dur: 23 * time.Second},
			{Kind: trace.Stop, Proc: 1, At: 4 * time.Second, Dur: 11500 * ms},
			{Kind: trace.Stop, Proc: 2, At: 9500 * ms, Dur: 5500 * ms},
			{Kind: trace.Lose, At: 10 * time.Second},
			{Kind: trace.Term, Proc: 3, At: 12 * time.Second},
			{Kind: trace.Kill, Proc: 2, At: 15800 * ms},
		})
}
