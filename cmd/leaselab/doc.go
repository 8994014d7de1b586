// Command leaselab is the toolkit of the lease-based leader election the
// post describes: it runs the post's experiments in the deterministic
// simulator, checks every variant of the algorithm against the spec's
// properties (random search, exhaustive exploration), replays and draws a
// run, runs the algorithm for real as a leader daemon and singleton
// runner, tortures real processes with real signals, and measures
// failover.
//
// Each command, with every flag it takes (TestSynopsesNameEveryFlag and
// TestDocsShowTheSynopses keep this list equal to the binary's):
//
//	leaselab scenario NAME [-variant V] [-json] [-trace] [-lease D -renew D -watch D]
//
// Run one of the post's experiments in the simulator and print its log.
//
//	leaselab check [-variant V | -all] [-runs N] [-seed S] [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
//	               [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D]
//	               [-props LIST] [-keep-going] [-smallest] [-show N] [-by-fault] [-json | -markdown] [-o FILE] [-out-dir DIR]
//
// Search random setups, schedules and faults for runs that break a property.
//
//	leaselab replay -variant V (-seed S [-expect H] | -decisions FILE) [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
//	                [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D] [-json] [-trace] [-o FILE]
//
// Replay one simulated run exactly, from the replay line check printed.
//
//	leaselab viz -variant V (-seed S [-expect H] | -decisions FILE) [-procs P] [-faults LIST] [-scheduler random|pct|mixed]
//	             [-max-drift F] [-drift-bound F] [-lease D -renew D -watch D] [-renew-deadline D] [-horizon D] -o FILE
//
// Draw one simulated run as a self-contained HTML timeline.
//
//	leaselab explore [-variant V] [-procs N] [-crashes K] [-terms K] [-pauses K] [-fserrs K] [-jumps K]
//	                 [-powers K] [-drifts K] [-preemptions K [-merge] | -dpor] [-horizon D] [-skews LIST] [-max-schedules N]
//	                 [-force] [-json] [-replay FILE] [-out-dir DIR]
//
// Search every schedule within the bounds, depth first.
//
//	leaselab run (-path LOCKFILE [-variant V] [-store file|flock] | -store redis|etcd|sqlite|postgres -dsn DSN [-name N] [-timeout D])
//	             [-id N] [-lease D -renew D -watch D] [-shed] [-start-at NS] [-events FILE] [-restart] [-- CMD ARGS]
//
// A real leader-election process; with a command, a singleton runner.
//
//	leaselab torture [-variant V] [-store file|flock|redis|etcd|sqlite|postgres] [-dsn DSN] [-procs N]
//	                 [-duration D | -trials N] [-faults kill,stop,term,stall] [-seed S] [-lease D -renew D -watch D]
//	                 [-exec 'CMD {lock}' | -singleton | -crash-after KIND:N] [-empty-lock] [-bin FILE] [-json] [-o FILE] [-keep]
//
// Real processes, real signals, the simulator's checks on what happened.
//
//	leaselab failover [-variants LIST] [-n N] [-procs N] [-seed S] [-lease D -renew D -watch D]
//	                  [-redis ADDR] [-etcd ENDPOINTS] [-postgres URL] [-sqlite] [-bin FILE] [-json | -markdown]
//
// Measure the leaderless gap after SIGKILL and SIGTERM of the leader, real processes.
//
//	leaselab variants [-json]
//
// List the algorithm's variants.
//
// leaselab help (or leaselab -h) prints each command's synopsis above
// with a one-line summary, then the scenario names, the variant names and
// the exit statuses; it lists no flag's description or default.
// leaselab help COMMAND, or leaselab COMMAND -h, prints that command's
// synopsis, its summary and every flag it takes with the flag's
// description and default (a flag whose default is zero, false or empty
// shows none). Both print on standard output and exit 0. leaselab with no
// arguments prints a short usage on standard error and exits 2.
//
// Exit status: 0 on success; 1 when a run breaks a property (check,
// replay, explore and explore -replay, torture) or a measurement fails
// (failover); 2 on bad input (an unknown flag, command or name, a
// malformed value, an unreachable server at start). viz exits 0 once it
// has drawn the run, whatever the run broke.
//
// Files written on the side (porcupine's pages, explore's decision
// files) go into -out-dir, or a new directory of their own under $TMPDIR,
// and every path written is printed.
package main
