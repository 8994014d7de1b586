package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leaselab/leaselab/trace"
)

// A member is one server of a replicated lease store (one of an etcd
// cluster's members) that a torture run can crash and pause beside the
// processes: the store's own fault tolerance under test, with the lease
// algorithm's properties as the judge. Tests supply them
// (TestTortureEtcdCluster); the command has no flag for them, as it
// starts no server.
type member interface {
	Name() string
	// Leader reports whether the member leads its cluster's consensus
	// (raft) now.
	Leader() bool
	Kill() error    // SIGKILL, and wait until it has exited
	Restart() error // start a killed member on its own data, and wait until it serves (answers a status request)
	Pause() error   // SIGSTOP
	Resume() error  // SIGCONT
}

// memberReport is one member fault of a torture run, in its -json report.
type memberReport struct {
	AtS    float64 `json:"at_s"`
	ForS   float64 `json:"for_s"`  // from the fault to the member's restart (serving again) or SIGCONT
	Kind   string  `json:"kind"`   // member-kill or member-stop
	Leader bool    `json:"leader"` // it led its cluster's consensus when hit
	Member string  `json:"member"`
	end    int64   // true time of the outage's end
}

// memberFaults inflicts kinds (MemberKill, MemberStop) on ms until d, by
// a plan drawn from its own stream of seed (the processes' plan is the
// same with or without it). One member is out at a time, so that a
// three-member cluster keeps its quorum: the first fault hits the
// consensus leader, later ones the leader half the time; each outage
// lasts half a lease to three (a restart may take longer: the outage
// ends when the member serves again), and every member is up for one to
// three leases between two. The kinds take turns. The first comes a tenth to a quarter of the
// way into the run. Every fault and its end go into the trace; an error
// (a member that will not restart) ends the plan.
func (c *cluster) memberFaults(ms []member, kinds []trace.FaultKind, seed uint64, d time.Duration) ([]memberReport, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6d656d6265727321))
	lease := float64(c.cfg.LeaseDuration)
	between := func(lo, hi float64) int64 { return int64((lo + rng.Float64()*(hi-lo)) * lease) }
	sleepUntil := func(at int64) { time.Sleep(time.Duration(at - c.now())) }
	var out []memberReport
	at := int64(float64(d) * (0.1 + 0.15*rng.Float64()))
	first := rng.IntN(len(kinds))
	for i := 0; ; i++ {
		kind := kinds[(first+i)%len(kinds)] // in turn: two outages see both kinds
		dur := between(0.5, 3)
		wantLeader := i == 0 || rng.IntN(2) == 0
		pick := rng.IntN(len(ms))
		if at+dur >= int64(d) {
			return out, nil
		}
		sleepUntil(at)
		// The leader is asked for as the fault falls due: it moves.
		m, leads := ms[pick], false
		for j := range ms {
			if l := ms[(pick+j)%len(ms)]; l.Leader() == wantLeader {
				m, leads = l, wantLeader
				break
			}
		}
		if !wantLeader {
			leads = m.Leader()
		}
		t := c.now()
		if t+dur >= int64(d) {
			return out, nil // (asking who leads took the time it had)
		}
		var err error
		if kind == trace.MemberKill {
			err = m.Kill()
		} else {
			err = m.Pause()
		}
		if err != nil {
			return out, fmt.Errorf("%s %s: %v", kind, m.Name(), err)
		}
		role := "a follower"
		if leads {
			role = "the raft leader"
		}
		c.record(trace.Event{T: t, Proc: -1, Kind: trace.EvFault, N: int64(kind), A: dur},
			fmt.Sprintf("%s %s (%s) for %v", kind, m.Name(), role, time.Duration(dur).Round(time.Millisecond)))
		sleepUntil(t + dur)
		if kind == trace.MemberKill {
			err = m.Restart()
		} else {
			err = m.Resume()
		}
		end := c.now()
		c.record(trace.Event{T: end, Proc: -1, Kind: trace.EvFault, N: int64(trace.End), C: int64(kind)},
			fmt.Sprintf("%s %s ends", kind, m.Name()))
		out = append(out, memberReport{AtS: time.Duration(t).Seconds(), ForS: time.Duration(end - t).Seconds(),
			Kind: kind.String(), Leader: leads, Member: m.Name(), end: end})
		if err != nil {
			return out, fmt.Errorf("ending %s %s: %v", kind, m.Name(), err)
		}
		at = end + between(1, 3)
	}
}

// record adds one of the harness's own events to the trace.
func (c *cluster) record(e trace.Event, desc string) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.paths = append(c.paths, desc)
	c.mu.Unlock()
}
