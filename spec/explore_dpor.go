package spec

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/leaselab/leaselab/sim"
)

// dporNode is a choice of the current schedule's path. A fault's or the
// setup's choice runs every alternative in turn; a tie's (the order of
// same-instant steps) runs only the candidates in its backtrack set: the
// one first chosen, and those the races of later schedules add, less
// those asleep there.
type dporNode struct {
	tie       bool
	n         int
	backtrack uint64 // a tie's candidates to run
	done      uint64 // a tie's candidates run
	cands     []sim.Candidate
	// sleep is the sleep set before the step this choice belongs to
	// (for a fault's choice, with the step's tie's siblings run before).
	sleep []sleeper
	// first is, for each candidate of a tie run (bit c of firstSet for
	// candidate c), what its step touched and the faults it stands for.
	first    []sleeper
	firstSet uint64
	// wakes marks the SIGKILLs among cands that could make another
	// process's activity runnable (sim.World.KillWakes).
	wakes uint64
	// inst is the tie's instant; reps, for each process whose pause has
	// been run from the tie, the first such (pauseDoomed).
	inst int64
	reps []pauseRep
}

// A sleeper is an activity whose next step has been run from an
// equivalent state: until a step dependent on that one runs, running it
// again gives a schedule equivalent to one already run (Godefroid's sleep
// sets).
type sleeper struct {
	c  sim.Candidate
	fp sim.Footprint
	// global marks a step at which a global fault (a power loss, a clock
	// jump) could also have been chosen. It stands for it too, while one
	// can still be chosen (sim.World.FaultsLeft). (A process's faults are
	// candidates of their own, and sleep as themselves.)
	global bool
}

// footprint is what the sleeper stands for while global faults can still
// be chosen.
func (s sleeper) footprint(global bool) sim.Footprint {
	if s.global && global {
		return s.fp.WithFaults(true)
	}
	return s.fp
}

// DPORStats counts what a reduced exploration did beyond its schedules.
type DPORStats struct {
	Races   int // races each run found past the choice that made it new (those before it, the run it replays had)
	Blocked int // runs cut short where every candidate slept (not counted as schedules)
	Pruned  int // SIGKILLs not run at a tie: their runs would have been cut short (doomed)
	Pauses  int // pauses not run at a tie: another length's runs were all cut short at its instant (pauseDoomed)
}

// exploreDPOR explores depth first, as exploreSubtree, with dynamic
// partial-order reduction at the ties (Flanagan and Godefroid, POPL
// 2005) and sleep sets: after each run, every race between two steps of
// one instant (sim.World.Races: dependent steps of different activities,
// not ordered through a third) adds, at the tie before the first step,
// the second step's activity, or every candidate when it was not one; an
// activity whose step from a tie has been run sleeps in the later
// branches of that tie until a step dependent on it runs, and a run
// whose candidates all sleep at a tie, or that must step an activity
// asleep, stops there; a SIGKILL whose run would stop so right after it
// is not run (doomed). Each Mazurkiewicz
// trace of same-instant steps (each order of dependent steps, with the
// faults and the setup) is run once; TestDPORSound holds it to the full
// search.
func exploreDPOR(o ExploreOptions, limit int, progress func(schedules, violations int)) (ExploreResult, error) {
	return exploreDPORWith(o, limit, progress, nil)
}

// exploreDPORWith is exploreDPOR; each, if set, is called with every
// schedule's world after its run (not with the runs cut short).
func exploreDPORWith(o ExploreOptions, limit int, progress func(schedules, violations int), each func(*sim.World)) (ExploreResult, error) {
	keep := keeper(o)
	var res ExploreResult
	var stack []dporNode
	var prefix []int
	var choices []dporChoice // (each run's, reused)
	for {
		r, err := dporRun(o, prefix, stack, choices[:0])
		if err != nil {
			return res, err
		}
		if r.blocked {
			res.DPOR.Blocked++
		} else {
			res.Schedules++
			if each != nil {
				each(r.w)
			}
			keep(&res, r.w.Trace(), r.log)
			if progress != nil {
				progress(res.Schedules, len(res.Violations))
			}
		}
		for j := len(stack); j < len(r.log); j++ {
			ch := r.at(j)
			nd := dporNode{n: r.log[j].N, sleep: ch.sleep}
			if c := ch.cands; ch.tie {
				nd.tie, nd.cands = true, c
				nd.backtrack, nd.done = 1<<r.log[j].V, 1<<r.log[j].V
				// A process's fault is a candidate at every tie while its
				// budget lasts, and never races (a run that does not
				// choose it never runs it): every tie tries each, and
				// sleep sets keep a fault tried at one tie from being
				// tried again after steps independent of it.
				for k, cd := range c {
					if cd.Act < 0 {
						nd.backtrack |= 1 << k
					}
				}
				nd.wakes = ch.wakes
				nd.inst = ch.inst
				if cd := c[r.log[j].V]; cd.Act <= sim.CandPause {
					nd.reps = []pauseRep{{proc: cd.Proc, v: r.log[j].V}}
				}
				if ch.hasFirst {
					nd.setFirst(r.log[j].V, ch.first)
				}
			}
			stack = append(stack, nd)
		}
		// A pause first run from a tie whose run went on past the tie's
		// instant stands for no other length (pauseDoomed).
		for j := range r.log {
			nd := &stack[j]
			for k := range nd.reps {
				if rp := &nd.reps[k]; rp.v == r.log[j].V && (!r.blocked || r.endInst != nd.inst) {
					rp.escaped = true
				}
			}
		}
		if i := len(prefix) - 1; i >= 0 && stack[i].tie {
			if ch := r.at(i); ch.hasFirst && stack[i].firstSet&(1<<r.log[i].V) == 0 {
				stack[i].setFirst(r.log[i].V, ch.first)
			}
		}
		for _, race := range r.w.Races(r.from) {
			nd := &stack[r.ties[race.Tie]]
			switch {
			case race.Disables && anyAsleep(nd, race.Cands):
				// A death disabled an activity that sleeps at its tie: the
				// schedules that run it first from there are covered, but
				// not those that run other steps first and it before the
				// death (whose races with those steps a run where it
				// never steps cannot show). Every candidate. (Found by
				// TestDPORSoundRandomToys: toy 297, a SIGTERM handler's
				// exit, lost 1 of 48 traces.)
				nd.backtrack |= 1<<len(nd.cands) - 1
			case race.Every:
				nd.backtrack |= race.Cands
			case nd.backtrack&race.Cands == 0:
				nd.backtrack |= race.Cands & -race.Cands // one of them: the lowest
			}
			res.DPOR.Races++
		}
		r.w.Release()
		if r.blocked {
			r.w.Trace().Release() // (a schedule's is kept, or released by keep)
		}
		choices = r.choices
		// Backtrack to the last choice with an alternative left.
		i, v := len(r.log)-1, 0
		for ; i >= 0; i-- {
			nd := &stack[i]
			if nd.tie {
				found := false
				// (A doomed kill's death race may add candidates: the
				// set left is taken again after each.)
				for left := nd.awake(); left != 0; left = nd.awake() {
					v = bits.TrailingZeros64(left)
					nd.done |= 1 << v
					if doomed(o, stack, r.log, i, v) {
						res.DPOR.Pruned++
						continue
					}
					if pauseDoomed(nd, v) {
						res.DPOR.Pauses++
						continue
					}
					found = true
					break
				}
				if found {
					break
				}
				continue
			}
			if r.log[i].V+1 < nd.n {
				v = r.log[i].V + 1
				break
			}
		}
		if i < 0 {
			res.Complete = true
			return res, nil
		}
		if limit > 0 && res.Schedules >= limit {
			return res, nil
		}
		prefix = prefix[:0]
		for _, c := range r.log[:i] {
			prefix = append(prefix, c.V)
		}
		prefix = append(prefix, v)
		stack = stack[:i+1]
	}
}

// dporResult is one run of a reduced exploration.
type dporResult struct {
	w       *sim.World
	log     []sim.Choice
	blocked bool
	ties    []int        // the log index of each tie's choice, by ordinal
	choices []dporChoice // what the run learnt of each choice, by log index (at)
	// from is the first step the prefix's last choice could change
	// (sim.World.StepMark): the steps before it are those of the run
	// the prefix came from, whose races were taken then.
	from    int
	endInst int64 // the instant it was cut short at (if blocked)
}

// dporChoice is what a run learnt of one of its choices.
type dporChoice struct {
	tie   bool // a new tie, whose candidates are cands
	cands []sim.Candidate
	wakes uint64    // its SIGKILLs that could wake another process (dporNode.wakes)
	inst  int64     // a new tie's instant
	sleep []sleeper // a new choice's sleep set
	// first is what the step of a tie's choice touched and stands for
	// (if hasFirst).
	first    sleeper
	hasFirst bool
}

// at returns choice j's record, grown to it.
func (r *dporResult) at(j int) *dporChoice {
	if j >= len(r.choices) {
		r.choices = append(r.choices, make([]dporChoice, j+1-len(r.choices))...)
	}
	return &r.choices[j]
}

// setFirst records what candidate k's step touched.
func (nd *dporNode) setFirst(k int, f sleeper) {
	if nd.first == nil {
		nd.first = make([]sleeper, len(nd.cands))
	}
	nd.first[k], nd.firstSet = f, nd.firstSet|1<<k
}

// dporRun runs the schedule that replays prefix, whose choices are the
// nodes of stack, and then takes, at each new tie, the first candidate
// awake.
func dporRun(o ExploreOptions, prefix []int, stack []dporNode, choices []dporChoice) (dporResult, error) {
	r := dporResult{choices: choices}
	d := &dfs{prefix: slices.Clone(prefix)}
	var w *sim.World // (set before it runs; the setup's choices come before)
	d.ask = func(i int) {
		if i == len(prefix)-1 && w != nil && !o.everyRace {
			r.from = w.StepMark()
		}
	}
	cfg, err := ExploreConfig(o, d)
	if err != nil {
		return r, err
	}
	// The sleep set is followed from the last choice of the prefix on:
	// before it, the run replays steps whose sleep sets the nodes hold.
	var cur []sleeper
	active := false
	activate := func() {
		active = true
		i := len(prefix) - 1
		if i < 0 {
			return
		}
		nd := &stack[i]
		cur = append(cur[:0], nd.sleep...)
		if nd.tie {
			for k, c := range nd.cands {
				if nd.firstSet&(1<<k) != 0 && k != prefix[i] && nd.done&(1<<k) != 0 {
					f := nd.first[k]
					f.c = c
					cur = append(cur, f)
				}
			}
		}
	}
	stepStart := len(d.log) // the choices made before the run are the setup's
	var tooMany error
	cfg.Explore.DPOR = true
	instant := int64(-1)
	cfg.Explore.OnTie = func(cands []sim.Candidate) bool {
		i := len(d.log)
		// A fault asleep stands for itself at the instant it slept at: at
		// a later instant it is another transition (a fault can come at
		// any instant; an activity's step comes at the one its past
		// fixes), and wakes.
		if t := w.TieInstant(); t != instant {
			instant = t
			kept := cur[:0]
			for _, s := range cur {
				if s.c.Act >= 0 {
					kept = append(kept, s)
				}
			}
			cur = kept
		}
		if i < len(prefix) {
			r.ties = append(r.ties, i)
			return false
		}
		if !active {
			activate()
		}
		if len(cands) > 64 {
			tooMany = fmt.Errorf("explore -dpor: %d steps tie at one instant; at most 64 are supported", len(cands))
			return true
		}
		for k, c := range cands {
			if !asleep(cur, c) {
				for len(d.prefix) < i {
					d.prefix = append(d.prefix, d.log[len(d.prefix)].V)
				}
				d.prefix = append(d.prefix, k)
				r.ties = append(r.ties, i)
				ch := r.at(i)
				ch.tie, ch.cands, ch.inst = true, slices.Clone(cands), w.TieInstant()
				for k, c := range cands {
					if c.Act == sim.CandKill && w.KillWakes(c.Proc) {
						ch.wakes |= 1 << k
					}
				}
				return false
			}
		}
		r.endInst = w.TieInstant()
		return true
	}
	cfg.Explore.OnStep = func(fp sim.Footprint) bool {
		n := len(d.log)
		if !active && n >= len(prefix) {
			activate()
		}
		// A tie's step that also had faults to choose from stands, as a
		// sleeper, for them all.
		tied, faults := -1, false
		for j := stepStart; j < n; j++ {
			if j < len(r.choices) && r.choices[j].tie || j < len(prefix) && stack[j].tie {
				tied = j
			} else {
				faults = true
			}
		}
		// An activity asleep that steps with no tie (it was the only
		// candidate, no fault was offered) and no choice of a fault at its
		// step: every schedule from here runs it next, and it stands for
		// them all. The run stops there, as at a tie whose candidates all
		// sleep. (A SIGKILL chosen where the others all sleep, its budget
		// then spent, leaves one: before this, each such run went on to
		// the horizon as a schedule run already, reordered: 182,500 of
		// flock -procs 2 -crashes 1's 185,342 duplicate schedules.)
		stop := active && tied < 0 && n == stepStart && asleep(cur, fp.Cand())
		if stop {
			r.endInst = w.LastStepInstant()
		}
		if tied >= 0 {
			ch := r.at(tied)
			ch.first, ch.hasFirst = sleeper{fp: fp, global: faults && (o.Powers > 0 || o.Jumps > 0 || o.FSErrors > 0)}, true
		}
		// The candidates of the tie the step was chosen at, and how many
		// of them are activities.
		var tieCands []sim.Candidate
		if tied >= 0 && tied < len(r.choices) && r.choices[tied].tie {
			tieCands = r.choices[tied].cands
		} else if tied >= 0 && tied < len(stack) {
			tieCands = stack[tied].cands
		}
		acts := 0
		for _, c := range tieCands {
			if c.Act >= 0 {
				acts++
			}
		}
		for j := stepStart; j < n; j++ {
			if j >= len(prefix) {
				r.at(j).sleep = slices.Clone(cur)
			}
		}
		if active {
			_, global := w.FaultsLeft()
			kept := cur[:0]
			for _, s := range cur {
				// A sleeping activity's step t stands for the schedules
				// that run it first; after a fault it stands for [t,
				// ..., fault] only if the fault is offered again after t
				// at this instant: a fault is offered when a step is
				// picked, so only if another activity was a candidate
				// beside t where the fault was chosen (it is still ready
				// after t there). Else the fault wakes t. (Found by
				// TestDPORSound: with every sleeper kept, toy-racy with a
				// pause and a SIGTERM lost 48 of 3,430 traces.)
				if fp.Fault() && s.c.Act >= 0 && !(acts >= 2 && slices.Contains(tieCands, s.c)) {
					continue
				}
				if !s.footprint(global).Dependent(fp) {
					kept = append(kept, s)
				}
			}
			cur = kept
		}
		stepStart = n
		return stop
	}
	w, err = sim.New(cfg)
	if err != nil {
		return r, err
	}
	if len(prefix) == len(d.log) {
		activate() // the prefix is the setup's: every step is new
	}
	w.Run()
	if tooMany != nil {
		return r, tooMany
	}
	r.w, r.log = w, d.log
	r.blocked = w.Stopped()
	// Choices made after the last step (none is expected) sleep as the
	// run ended.
	for j := stepStart; j < len(d.log); j++ {
		if j >= len(prefix) {
			r.at(j).sleep = slices.Clone(cur)
		}
	}
	return r, nil
}

// doomed reports whether the run that chooses candidate v at tie i of
// stack (the choices of the path to it are log's) would be cut short at
// the next pick, if v is a SIGKILL: exploreDPORWith then skips it.
// After the kill, the same instant's next pick has the tie's candidates
// but the dead process's and no other, when the kill wakes nobody
// (sim.World.KillWakes), less the SIGKILLs if it spent the budget; and
// the sleep set is the tie's, with the siblings run before it, less the
// sleepers the kill wakes: any that might depend on it
// (sim.Footprint.MayDependOnKill), and every activity when no other
// activity was a candidate at the tie (dporRun's rule). If all sleep,
// the run stops there: at a tie, or, one activity left and no fault
// offered, at its step without a tie, unless a global fault could be
// chosen at that step. Such a run reaches no trace; of its races, the
// one its death makes (its process's other candidates at the tie:
// sim.World.Races) doomed adds here. Its others are between the kill and
// a step before it: the kill commutes with the sleepers, so a run that
// steps a sleeper first and then the kill (the sleeper's branch, where
// the kill is a candidate at the next tie) has them too, as it has the
// kill's reordered trace. (flock -procs 2 -crashes 1, 100 ms: 376,448
// runs cut short without this, 154,814 with it, the same 47,386
// schedules and 44,544 traces; TestDPORSound and
// TestDPORSoundRandomToys hold it to the full search.)
func doomed(o ExploreOptions, stack []dporNode, log []sim.Choice, i, v int) bool {
	nd := &stack[i]
	kill := nd.cands[v]
	if kill.Act != sim.CandKill || nd.wakes&(1<<v) != 0 {
		return false
	}
	used := 0 // the SIGKILLs chosen before it
	for j := range i {
		if stack[j].tie && stack[j].cands[log[j].V].Act == sim.CandKill {
			used++
		}
	}
	acts, faults := 0, 0
	var next []sim.Candidate
	for _, c := range nd.cands {
		switch {
		case c.Act >= 0:
			acts++
			if c.Proc != kill.Proc {
				next = append(next, c)
			}
		case c.Proc == kill.Proc, c.Act == sim.CandKill && used+1 >= o.Crashes:
		default:
			faults++
			next = append(next, c)
		}
	}
	if len(next) == 0 {
		return false // the instant ends
	}
	if len(next) == 1 && faults == 0 && (o.Powers > 0 || o.Jumps > 0 || o.FSErrors > 0) {
		return false
	}
	sleep := slices.Clone(nd.sleep)
	for k, c := range nd.cands {
		if nd.firstSet&(1<<k) != 0 && k != v && nd.done&(1<<k) != 0 {
			f := nd.first[k]
			f.c = c
			sleep = append(sleep, f)
		}
	}
	for _, c := range next {
		slept := false
		for _, s := range sleep {
			if s.c == c && !s.global && !s.fp.MayDependOnKill(kill.Proc) && (c.Act < 0 || acts >= 2) {
				slept = true
				break
			}
		}
		if !slept {
			return false
		}
	}
	var others uint64
	for k, c := range nd.cands {
		if c.Proc == kill.Proc && c.Act != sim.CandKill {
			others |= 1 << k
		}
	}
	switch {
	case others == 0:
	case anyAsleep(nd, others):
		nd.backtrack |= 1<<len(nd.cands) - 1
	default:
		nd.backtrack |= others
	}
	return true
}

// awake returns a tie's candidates to run still (bit c for candidate
// c): in its backtrack set, not run, not asleep.
func (nd *dporNode) awake() uint64 {
	left := nd.backtrack &^ nd.done
	for k, c := range nd.cands {
		if asleep(nd.sleep, c) {
			left &^= 1 << k
		}
	}
	return left
}

// anyAsleep reports whether a candidate of nd in cands (bit c for
// candidate c) sleeps before nd's step.
func anyAsleep(nd *dporNode, cands uint64) bool {
	for k, c := range nd.cands {
		if cands&(1<<k) != 0 && asleep(nd.sleep, c) {
			return true
		}
	}
	return false
}

func asleep(sleep []sleeper, c sim.Candidate) bool {
	for _, s := range sleep {
		if s.c == c {
			return true
		}
	}
	return false
}
