package spec

import (
	"strings"
	"syscall"
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
		Match: emptyLeftBy("open-excl", "close-after-create")},
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

// hasFault reports whether a fault of kind k fired in the run (planned in
// the setup or injected by an exploration).
func hasFault(tr *trace.Trace, k trace.FaultKind) bool {
	for _, e := range tr.Events {
		if e.Kind == trace.EvFault && e.FaultKind() == k && !e.Missed() {
			return true
		}
	}
	return false
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

func lockEmpty(tr *trace.Trace) bool {
	for _, f := range tr.Files {
		if f.Name == tr.Run.LockPath {
			return len(f.Data) == 0
		}
	}
	return false
}

func countLogs(tr *trace.Trace, m lease.Msg) int {
	n := 0
	for _, e := range tr.Events {
		if e.Kind == trace.EvLog && e.Msg == m {
			n++
		}
	}
	return n
}

// emptyLeftBy matches a run that ends with an empty lock file whose last
// writer died right after one of the given calls ("close-after-create" is
// the close that follows the O_EXCL create).
func emptyLeftBy(calls ...string) func(*trace.Trace, *Violation) bool {
	return func(tr *trace.Trace, v *Violation) bool {
		if !lockEmpty(tr) {
			return false
		}
		for p := range tr.Procs {
			var last, prev *trace.Event
			dead := false
			for i := range tr.Events {
				e := &tr.Events[i]
				if int(e.Proc) != p {
					continue
				}
				if e.Kind == trace.EvExit && e.ExitCode() == trace.ExitKilled {
					dead = true
				}
				if e.Kind == trace.EvSyscall {
					prev, last = last, e
				}
			}
			if !dead || last == nil || last.Errno != 0 || last.Op == trace.OpClose && (prev == nil || prev.Errno != 0) {
				continue // its last call failed: it created nothing
			}
			for _, c := range calls {
				switch {
				case c == "open-excl" && last.Op == trace.OpOpen && last.Flag&int32(lease.O_EXCL) != 0,
					c == "open-trunc" && last.Op == trace.OpOpen && last.Flag&int32(lease.O_TRUNC) != 0,
					c == "close-after-create" && last.Op == trace.OpClose && prev != nil && prev.Op == trace.OpOpen && prev.Flag&int32(lease.O_EXCL) != 0:
					return true
				}
			}
		}
		return false
	}
}

// recreatedAfterRelease reports whether a process, after its release
// removed the lock file, made the lock path exist again: an open with
// O_CREAT (the seed's os.WriteFile) or a rename or link onto it (the
// proposed fixes' renewal).
func recreatedAfterRelease(tr *trace.Trace) bool {
	removed := map[int16]bool{}
	lock := tr.Run.LockPath
	for _, e := range tr.Events {
		switch {
		case e.Kind == trace.EvStore && e.Store == trace.StoreRelease && e.Res == trace.ResOK:
			removed[e.Proc] = true
		case e.Kind != trace.EvSyscall || !removed[e.Proc] || e.Errno != 0:
		case e.Op == trace.OpOpen && e.Flag&int32(lease.O_CREATE) != 0 && tr.S(e.Path) == lock,
			(e.Op == trace.OpRename || e.Op == trace.OpLink) && tr.S(e.Path2) == lock:
			return true
		}
	}
	return false
}

// procIndex returns the index in tr.Procs of the process with the given
// pid, or -1.
func procIndex(tr *trace.Trace, pid int) int {
	for i, p := range tr.Procs {
		if p.PID == pid {
			return i
		}
	}
	return -1
}

// pair returns the two processes a violation names, as indices in
// tr.Procs; ok is false unless it names two processes of the run.
func pair(tr *trace.Trace, v *Violation) (a, b int, ok bool) {
	if len(v.PIDs) != 2 {
		return 0, 0, false
	}
	a, b = procIndex(tr, v.PIDs[0]), procIndex(tr, v.PIDs[1])
	return a, b, a >= 0 && b >= 0
}

// bothSawNoLockFile matches naive-race: each of the two leaders led
// through a create whose stat found no lock file, and both stats came
// before either create returned, so each checked, saw no file, and
// created its own.
func bothSawNoLockFile(tr *trace.Trace, v *Violation) bool {
	a, b, ok := pair(tr, v)
	if !ok {
		return false
	}
	statA, doneA, okA := createAfterNoFile(tr, a, int64(v.At))
	statB, doneB, okB := createAfterNoFile(tr, b, int64(v.At))
	return okA && okB && max(statA, statB) < min(doneA, doneB)
}

// createAfterNoFile returns the event indices of process p's last
// successful create up to true time t: the stat in it that found no lock
// file, and the create's return. ok is false if p made no successful
// create up to t, or made it without such a stat.
func createAfterNoFile(tr *trace.Trace, p int, t int64) (stat, done int, ok bool) {
	lock := tr.Run.LockPath
	stat, sawNone := -1, false
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T > t {
			break
		}
		if int(e.Proc) != p {
			continue
		}
		switch {
		case e.Kind == trace.EvStoreCall:
			sawNone = false
		case e.Kind == trace.EvSyscall && e.Op == trace.OpStat && e.Errno.Sys() == syscall.ENOENT && tr.S(e.Path) == lock:
			stat, sawNone = i, true
		case e.Kind == trace.EvStore && e.Store == trace.StoreCreate && e.Res == trace.ResOK:
			done, ok = i, sawNone
		}
	}
	return stat, done, ok
}

// resumedAt returns when the process that the Stop fault at event i
// paused was continued: its next SIGCONT, or the end of the run if none
// came.
func resumedAt(tr *trace.Trace, i int) int64 {
	p := tr.Events[i].Proc
	for j := i + 1; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; e.Proc == p && e.Kind == trace.EvFault && e.FaultKind() == trace.Cont {
			return e.T
		}
	}
	return int64(tr.End)
}

// pausedPastLease matches paused-leader: one of the two leaders (the
// paused one) was paused (SIGSTOP) after it computed the expiry of a lease
// and before that lease ran out, in true time; a watcher found the lease
// run out and called Takeover on it, and the other leader has led since
// that call (the watcher itself, or a process that found the lock file
// gone). The paused one, resumed, still believes it leads on that lease:
// it has no local deadline to tell it otherwise, and a renewal after the
// pause writes over the new leader's lease.
func pausedPastLease(tr *trace.Trace, v *Violation) bool {
	a, b, ok := pair(tr, v)
	if !ok {
		return false
	}
	lease, at := int64(tr.Run.Lease.LeaseDuration), int64(v.At)
	iv := tr.Leadership()
	fromA, fromB := leadingSince(iv, a, at), leadingSince(iv, b, at)
	if fromA < 0 || fromB < 0 {
		return false
	}
	for c := range tr.Events {
		call := &tr.Events[c]
		if call.T > at {
			break
		}
		if call.Kind != trace.EvStoreCall || call.Store != trace.StoreTakeover {
			continue
		}
		w := recordWrite(tr, call.Record(), c)
		if w < 0 {
			continue
		}
		paused := int(tr.Events[w].Proc)
		pausedFrom, otherFrom := fromA, fromB
		switch paused {
		case a:
		case b:
			pausedFrom, otherFrom = fromB, fromA
		default:
			continue
		}
		read, judged := lastWallReading(tr, paused, w), lastWallReading(tr, int(call.Proc), c)
		if read < 0 || judged < 0 {
			continue
		}
		ran := tr.Events[read].T + lease // when the lease ran out
		if tr.Events[judged].T < ran || otherFrom < call.T || pausedFrom > max(call.T, tr.Events[w].T) {
			continue // taken while live, the other led before, or the paused one leads on a later lease
		}
		for i := read + 1; i < len(tr.Events) && tr.Events[i].T < ran; i++ {
			if e := &tr.Events[i]; int(e.Proc) == paused && e.Kind == trace.EvFault && e.FaultKind() == trace.Stop && !e.Missed() {
				return true
			}
		}
	}
	return false
}

// leadingSince returns when process p began the leadership interval that
// holds true time t, or -1 if it did not lead at t.
func leadingSince(iv []trace.Interval, p int, t int64) int64 {
	for _, x := range iv {
		if x.Proc == p && x.From <= t && t <= x.To {
			return x.From
		}
	}
	return -1
}

// takeover is a takeover attempt on a lease still live in true time, as
// event indices: the holder's wall-clock reading for the expiry it wrote,
// and the taker's reading that judged the lease expired.
type takeover struct {
	writerClock, takerClock int
}

// liveTakeover finds a takeover attempt on a lease still live in true
// time that let a second leader in: some process (the taker) judged
// expired a record that its holder had written less than a lease before,
// in true time, and called Takeover on it; and each of the violation's
// two processes leads as that holder or began leading at or after the
// call, while the lease was still live (the taker itself, another
// watcher taking over at the same time, or a process that found the lock
// file gone after the taker removed it).
func liveTakeover(tr *trace.Trace, v *Violation) (takeover, bool) {
	a, b, ok := pair(tr, v)
	if !ok {
		return takeover{}, false
	}
	lease, at := int64(tr.Run.Lease.LeaseDuration), int64(v.At)
	iv := tr.Leadership()
	fromA, fromB := leadingSince(iv, a, at), leadingSince(iv, b, at)
	if fromA < 0 || fromB < 0 {
		return takeover{}, false
	}
	for c := range tr.Events {
		call := &tr.Events[c]
		if call.T > at {
			break
		}
		if call.Kind != trace.EvStoreCall || call.Store != trace.StoreTakeover {
			continue
		}
		w := recordWrite(tr, call.Record(), c)
		if w < 0 {
			continue
		}
		holder := int(tr.Events[w].Proc)
		x := takeover{writerClock: lastWallReading(tr, holder, w), takerClock: lastWallReading(tr, int(call.Proc), c)}
		if x.writerClock < 0 || x.takerClock < 0 {
			continue
		}
		live := tr.Events[x.writerClock].T + lease // until when the lease was live
		if tr.Events[x.takerClock].T >= live {
			continue
		}
		in := func(p int, from int64) bool { return p == holder || call.T <= from && from < live }
		if in(a, fromA) && in(b, fromB) {
			return x, true
		}
	}
	return takeover{}, false
}

// recordWrite returns the index of the store event that wrote record r,
// as read at event i: the last create, renew or takeover that returned r
// before i, or else the first after it (the write was visible before the
// call that made it returned); -1 if none did.
func recordWrite(tr *trace.Trace, r lease.Record, i int) int {
	wrote := func(e *trace.Event) bool {
		return e.Kind == trace.EvStore && e.Res == trace.ResOK && e.Record() == r &&
			(e.Store == trace.StoreCreate || e.Store == trace.StoreRenew || e.Store == trace.StoreTakeover)
	}
	for j := i - 1; j >= 0; j-- {
		if wrote(&tr.Events[j]) {
			return j
		}
	}
	for j := i + 1; j < len(tr.Events); j++ {
		if wrote(&tr.Events[j]) {
			return j
		}
	}
	return -1
}

// lastWallReading returns the index of process p's last wall-clock
// reading before event i, or -1.
func lastWallReading(tr *trace.Trace, p int, i int) int {
	for j := i - 1; j >= 0; j-- {
		if e := &tr.Events[j]; int(e.Proc) == p && e.Kind == trace.EvClock && e.Op == trace.OpClockWall {
			return j
		}
	}
	return -1
}

// wallOffset is how far the wall-clock reading at event i was ahead of
// the machine's wall clock as it would read with no fault (tr.Base plus
// the true time). An EvClock event's N is its reading (trace.EvClock).
func wallOffset(tr *trace.Trace, i int) time.Duration {
	e := &tr.Events[i]
	return time.Duration(e.Reading() - tr.Base.UnixNano() - e.T)
}

// forwardJumps sums the forward steps of the machine's wall clock after
// event i and before event j.
func forwardJumps(tr *trace.Trace, i, j int) time.Duration {
	var d time.Duration
	for k := i + 1; k < j; k++ {
		if e := &tr.Events[k]; e.Kind == trace.EvFault && e.FaultKind() == trace.Jump && !e.Missed() && e.StepBy() > 0 {
			d += e.StepBy()
		}
	}
	return d
}

// takeoverBySkew matches clock-skew: a watcher took over a lease still
// live in true time, and let a second leader in, because its wall clock,
// when it judged the lease expired, read ahead of the holder's clock, when
// the holder computed the expiry, by more than any step of the machine's
// clock between the two readings explains.
func takeoverBySkew(tr *trace.Trace, v *Violation) bool {
	x, ok := liveTakeover(tr, v)
	return ok && wallOffset(tr, x.takerClock)-wallOffset(tr, x.writerClock) > forwardJumps(tr, x.writerClock, x.takerClock)
}

// takeoverByJump matches clock-jump: a watcher took over a lease still
// live in true time, and let a second leader in, after the machine's wall
// clock stepped forward between the holder's reading for the expiry and
// the watcher's reading that judged it expired.
func takeoverByJump(tr *trace.Trace, v *Violation) bool {
	x, ok := liveTakeover(tr, v)
	return ok && forwardJumps(tr, x.writerClock, x.takerClock) > 0
}

// terminatedByDefault matches term-before-handler: the SIGTERM of the
// leader that the failover violation names ended it with the default
// action (no handler installed yet), so it released nothing and its
// lease was left to expire.
func terminatedByDefault(tr *trace.Trace, v *Violation) bool {
	if len(v.Events) != 1 {
		return false
	}
	i := v.Events[0]
	p := tr.Events[i].Proc
	for j := i; j < len(tr.Events); j++ {
		if e := &tr.Events[j]; e.Proc == p && e.Kind == trace.EvExit {
			return e.ExitCode() == trace.ExitTerminated
		}
	}
	return false
}

// pausedOnEmptyLock matches paused-creator: the wedge falls within the
// pause (SIGSTOP) of a process stopped after its O_EXCL create of the
// lock file and before its write, so that for the whole pause the lock
// file was empty: no lease to read or expire, and no create could succeed.
func pausedOnEmptyLock(tr *trace.Trace, v *Violation) bool {
	at := int64(v.At)
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.T > at {
			break
		}
		if e.Proc >= 0 && e.Kind == trace.EvFault && e.FaultKind() == trace.Stop && !e.Missed() &&
			at <= resumedAt(tr, i) && createdUnwritten(tr, int(e.Proc), i) {
			return true
		}
	}
	return false
}

// createdUnwritten reports whether, before event i, process p's last
// successful O_EXCL open of the lock file was followed by no successful
// write of p.
func createdUnwritten(tr *trace.Trace, p int, i int) bool {
	lock := tr.Run.LockPath
	created := false
	for j := range tr.Events[:i] {
		e := &tr.Events[j]
		if int(e.Proc) != p || e.Kind != trace.EvSyscall || e.Errno != 0 {
			continue
		}
		switch {
		case e.Op == trace.OpOpen && e.Flag&int32(lease.O_EXCL) != 0 && tr.S(e.Path) == lock:
			created = true
		case e.Op == trace.OpWrite:
			created = false
		}
	}
	return created
}
