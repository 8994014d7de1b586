// Package sim is the deterministic world in which the lease code runs:
// simulated processes, clocks and an in-memory file system with the
// semantics of Linux at the granularity of system calls. Nothing in it
// uses goroutines' scheduling, real time or unseeded randomness, so a run
// is a pure function of its [Config] (seed included), and a failure found
// once replays exactly.
//
// # Running
//
// [Run] runs a [Config] to its horizon and returns its trace.Trace; [New]
// and [World.Run] do the same in two steps. A Config names the variant,
// the processes ([ProcSpec]: pid, start, clock skew and drift), files
// placed before the run ([File]), the faults ([Fault]) and the system
// call latencies. [RandomSetup] draws a Config from [SetupOptions] and a
// seed (what leaselab check searches): over three fault kinds or more, a
// [Swarm] of them per run; with the "mixed" scheduler, random or PCT per
// run. [SetupFrom] draws it from a [Chooser] instead (a property test's).
//
// # Files of the package
//
//   - world.go: the [World], its run loop, faults firing, deaths.
//   - newworld.go: [New] and [Run]: a world built from a [Config].
//   - config.go: [Config], [ProcSpec], [File], defaults.
//   - proc.go: a simulated process, the lease.Proc the algorithms see;
//     every system call is a scheduling point where a fault can land.
//   - worker.go, queue.go: the coroutines that run activities and the
//     queue of activities by ready time.
//   - spare.go: a finished world's memory and parked coroutines, reused
//     by the next world ([World.Release]).
//   - clock.go: per-process wall and monotonic clocks with skew, drift
//     and machine-wide jumps.
//   - fs.go, fspath.go, fsdurable.go: the [FileSystem] (descriptors in an
//     [FDTable], open, write, rename, link, flock, ...), path rules, and
//     what survives a power loss (torn writes: [TornOld] ...).
//   - flockwait.go, notify.go: processes waiting in flock(2), and inotify.
//   - fence.go: a leader's workload on a fenced resource, whose accepted
//     epochs the fencing property reads, and how the world looks at
//     leader contexts (by Err, and by Done as a derived context would).
//   - timer.go: lease.MonoTimer, a timer on a process's monotonic clock
//     (what ends a leader's context at its local deadline).
//   - server.go, servervariant.go: the model of a lease server (Redis,
//     etcd, SQL) as an atomic register with that server's expiry, and the
//     variants that run the reference over it ([ServerKinds],
//     [ServerTTL]).
//   - recstore.go: the wrapper that records every Store call and return
//     in the trace, for the linearizability check.
//   - fault.go: the fault model ([Fault], [Leader], [CallKind]).
//   - setupdesc.go: the setup line a trace prints, with what became of
//     each configured fault.
//   - setup.go: [SetupOptions], [RandomSetup], [ParseFaults],
//     [FaultKinds], [MachineFaults], [AllFaults], [Swarm].
//   - choose.go, sched.go, pct.go: the run's choices ([Chooser], [PCG],
//     [Decisions], [Recorder], [ReadDecisions], [WriteDecisions]) and
//     schedulers ([Random], [PCT]).
//   - explore.go: bounds for systematic exploration ([Explore]).
//   - por.go, por_footprint.go: what each step of an exploration reads
//     and writes, the dependency relation, races and fingerprints for
//     partial-order reduction ([Race], [Footprint]).
//   - por_node.go: a state's name up to the order of independent steps,
//     for a merged exploration ([Node], Explore.OnNode).
//
// The trace a run writes is package trace's; the checks that judge it are
// packages spec and model; the post's experiments are package scenario.
package sim
