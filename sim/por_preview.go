package sim

// KillWakes reports, while Explore.OnTie runs, whether a SIGKILL of
// process proc now could make another process's activity runnable at
// this instant: it holds a flock lock another process waits for (its
// death releases it), or lease servers are in use (its death ends its
// sessions). A reduced exploration predicts from it that a run that
// chooses the kill would be cut short (spec's exploreDPOR).
func (w *World) KillWakes(proc int) bool {
	if proc < 0 || proc >= len(w.procs) || len(w.servers) > 0 {
		return true
	}
	p := w.procs[proc]
	// (h3 fix) The kill looks at the world (observe): a timer of another
	// process due now fires there, and what it cancels wakes its waiters
	// at this instant, candidates the tie did not have.
	for _, q := range w.procs {
		if q == p || q.dead || q.stopped {
			continue
		}
		now := q.clock.mono(max(w.now, w.tieAt)) // (the tie's instant: now is not moved to it before the pick)
		for _, t := range q.timers {
			if t.armed && now >= t.at {
				return true
			}
		}
	}
	for _, x := range w.ctxWaiters {
		select {
		case <-x.done:
			return true
		default:
		}
	}
	for _, d := range p.fds.fds {
		if d.ino == nil || !d.locked {
			continue
		}
		for _, x := range w.lockWaiters {
			if x.ino == d.ino && x.a.p != p {
				return true
			}
		}
	}
	return false
}

// MayDependOnKill reports whether the step f might not commute with a
// SIGKILL of process proc, whatever the kill touches (porKill): f is
// proc's, global or stands for faults, or touches leadership, a flock
// lock, a server or a change count.
func (f Footprint) MayDependOnKill(proc int) bool {
	if int(f.proc) == proc || f.global || f.killable || f.dies {
		return true
	}
	for _, x := range f.acc {
		switch x.obj.kind {
		case objLead, objLock, objServer, objChanges:
			return true
		}
	}
	return false
}

// LastStepInstant returns, while Explore.OnStep runs, the instant of the
// step just recorded.
func (w *World) LastStepInstant() int64 {
	if w.por == nil || len(w.por.steps) == 0 {
		return -1
	}
	return w.por.steps[len(w.por.steps)-1].t
}
