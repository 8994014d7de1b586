package spec

import (
	"strings"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// Bug is a known way a variant breaks, as the checker finds it: a search
// (variant, faults) whose runs violate Property by the mechanism that
// Match recognises in the trace. The catalogue is what the README lists,
// what the tests require the checker to keep finding, and what the
// time-to-find benchmark measures.
type Bug struct {
	ID       string
	Variant  string
	Faults   string
	Property string
	Summary  string
	// Post is what the post says of it, and PostNote how.
	Post     Mention
	PostNote string
	// Match reports whether a violation of Property in tr is this bug.
	Match func(tr *trace.Trace, v *Violation) bool
}

// Bugs is the catalogue of the seed variants' bugs.
var Bugs = []Bug{
	{ID: "naive-race", Variant: "seed-naive", Faults: "none", Property: ExclusiveLeadership,
		Summary: "stat, then create: two processes both see no lock file and both lead",
		Post:    Shown, PostNote: "3 / 30 trials",
		Match: bothSawNoLockFile},
	{ID: "empty-after-create", Variant: "seed", Faults: "kill", Property: NoWedge,
		Summary: "a crash between the O_EXCL create and the write leaves an empty lock file; nobody ever leads again",
		Post:    Shown, PostNote: "the empty-file experiment, made by hand",
		Match: emptyLeftBy("open-excl", "close-after-create", "create-open-trunc")},
	{ID: "empty-after-renew", Variant: "seed", Faults: "kill", Property: NoWedge,
		Summary: "a crash between a renewal's open(O_TRUNC) and its write leaves an empty lock file: the same wedge, from every renewal",
		Post:    NotMentioned,
		Match:   emptyLeftBy("open-trunc")},
	{ID: "empty-after-enospc", Variant: "seed", Faults: "fserr", Property: NoWedge,
		Summary: "ENOSPC or EIO on a write after O_TRUNC leaves an empty lock file; the leader steps down after three unreadable reads and the system wedges",
		Post:    NotMentioned,
		Match: func(tr *trace.Trace, v *Violation) bool {
			return lockEmpty(tr) && hasFault(tr, trace.FSError)
		}},
	{ID: "takeover-race", Variant: "seed", Faults: "kill", Property: ExclusiveLeadership,
		Summary: "two watchers see the expiry together; the second's os.Remove deletes the first's fresh lease and both lead",
		Post:    CalledSafe, PostNote: "the post calls this race safe",
		Match: func(tr *trace.Trace, v *Violation) bool {
			return countLogs(tr, lease.MsgTakeover) >= 2
		}},
	{ID: "paused-leader", Variant: "seed", Faults: "stop", Property: ExclusiveLeadership,
		Summary: "a leader paused past its lease still believes it leads when it resumes (no local deadline) and renews over the new leader's lease",
		Post:    InWords, PostNote: "a GC pause evicts a healthy leader",
		Match: pausedPastLease},
	{ID: "clock-skew", Variant: "seed", Faults: "skew", Property: ExclusiveLeadership,
		Summary: "expiry compares the writer's wall clock with the reader's: a watcher whose clock runs ahead takes over a live lease",
		Post:    NotMentioned,
		Match:   takeoverBySkew},
	{ID: "clock-jump", Variant: "seed", Faults: "jump", Property: ExclusiveLeadership,
		Summary: "a wall-clock step forward (NTP, an operator) expires the live lease for every watcher at once",
		Post:    NotMentioned,
		Match:   takeoverByJump},
	{ID: "term-before-handler", Variant: "seed", Faults: "term", Property: FailoverBound,
		Summary: "SIGTERM before signal.Notify is installed kills with the default action: the lease is left to expire",
		Post:    NotMentioned,
		Match:   terminatedByDefault},
	{ID: "term-resurrects", Variant: "seed", Faults: "term", Property: FailoverBound,
		Summary: "SIGTERM during a renewal: the handler removes the lock file, the renewal's O_CREAT|O_TRUNC write recreates it, the process exits; the lease must expire",
		Post:    NotMentioned,
		Match: func(tr *trace.Trace, v *Violation) bool {
			return !lockEmpty(tr) && recreatedAfterRelease(tr)
		}},
	{ID: "term-wedges", Variant: "seed", Faults: "term", Property: NoWedge,
		Summary: "the same race, with the exit between the renewal's O_TRUNC and its write: a graceful shutdown leaves an empty lock file and wedges",
		Post:    NotMentioned,
		Match: func(tr *trace.Trace, v *Violation) bool {
			return lockEmpty(tr) && recreatedAfterRelease(tr)
		}},
	{ID: "paused-creator", Variant: "seed", Faults: "stop", Property: NoWedge,
		Summary: "a process paused between create and write holds an empty lock file: everyone is locked out for the whole pause",
		Post:    NotMentioned,
		Match:   pausedOnEmptyLock},
	{ID: "truncated-read", Variant: "seed", Faults: "none", Property: LinearizableStore,
		Summary: "a watcher reads the lock file between a renewal's O_TRUNC and its write and sees an empty record (harmless to leadership only because O_EXCL then fails)",
		Post:    NotMentioned,
		Match: func(tr *trace.Trace, v *Violation) bool {
			return strings.Contains(v.Detail, "read → corrupt")
		}},
}

// Mention is what the post says of a bug.
type Mention uint8

// What the post says.
const (
	NotMentioned Mention = iota // nothing
	Shown                       // it shows the bug happening
	InWords                     // it describes the failure in words, without showing it
	CalledSafe                  // it discusses the case and calls it safe
)

func (m Mention) String() string {
	switch m {
	case Shown:
		return "shown"
	case InWords:
		return "in words"
	case CalledSafe:
		return "called safe"
	}
	return "not mentioned"
}

// LookupBug returns the catalogued bug with the given ID.
func LookupBug(id string) (Bug, bool) {
	for _, b := range Bugs {
		if b.ID == id {
			return b, true
		}
	}
	return Bug{}, false
}

// Search returns the search that looks for the bug.
func (b Bug) Search(seed uint64, scheduler string, runs int) Search {
	kinds, err := sim.ParseFaults(b.Faults)
	if err != nil {
		panic(err) // the catalogue names valid faults
	}
	return Search{Setup: sim.SetupOptions{Variant: b.Variant, Faults: kinds, Scheduler: scheduler}, Runs: runs, Seed: seed,
		Properties: []string{b.Property}}
}

// Find runs the bug's search until a run shows the bug, and returns that
// run and how many runs it took; ok is false if none of runs did.
func (b Bug) Find(seed uint64, scheduler string, runs int) (f Found, n int, ok bool) {
	s := b.Search(seed, scheduler, runs)
	if err := s.Setup.Normalize(); err != nil {
		panic(err)
	}
	for i := range runs {
		rs := RunSeed(seed, i)
		tr, err := sim.Run(sim.RandomSetup(s.Setup, rs))
		if err != nil {
			panic(err)
		}
		for _, v := range Check(tr) {
			if v.Property == b.Property && v.Violation != nil && b.Match(tr, v.Violation) {
				return Found{Violation: *v.Violation, Run: i, RunSeed: rs, Replay: ReplayCommand(s.Setup, rs), Trace: tr}, i + 1, true
			}
		}
		tr.Release()
	}
	return Found{}, runs, false
}

// ExploreOptions returns the bounds within which an exhaustive
// exploration looks for the bug: two processes (three for the takeover
// race, which needs two watchers), one injection of the bug's fault kind,
// and the preemptions its interleaving needs. ok is false for a fault kind
// the explorer does not inject (wall-clock jumps).
func (b Bug) ExploreOptions() (o ExploreOptions, ok bool) {
	o = ExploreOptions{Variant: b.Variant, Procs: 2, Preemptions: 1, Properties: []string{b.Property}, Match: b.Match}
	switch b.Faults {
	case "kill":
		o.Crashes = 1
	case "term":
		// The handler must interleave with a renewal: up to three
		// deviations from the default schedule (term-wedges needs them all).
		o.Terms, o.Preemptions = 1, 2
		if b.ID == "term-wedges" {
			o.Preemptions, o.Limit = 3, 400_000
		}
	case "stop":
		o.Pauses = 1
	case "fserr":
		o.FSErrors, o.Horizon = 1, 36*time.Second
	case "skew":
		o.Skews = []time.Duration{0, 8 * time.Second}
	case "jump":
		o.Jumps = 1
	}
	if b.ID == "takeover-race" {
		o.Procs = 3
	}
	return o, true
}
