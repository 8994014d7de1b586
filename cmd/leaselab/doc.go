// Command leaselab is the toolkit of the lease-based leader election the
// post describes: it runs the post's experiments in the deterministic
// simulator, checks every variant of the algorithm against the spec's
// properties (random search, exhaustive exploration), replays and draws a
// run, runs the algorithm for real as a leader daemon and singleton
// runner, tortures real processes with real signals, and measures
// failover.
//
// Usage:
//
//	leaselab scenario NAME [-variant V] [-json] [-trace]
//	leaselab check [-variant V | -all] [-faults LIST] [-runs N] [-json] [-o run.html]
//	leaselab replay -variant V -seed S [setup flags] [-trace] [-o run.html]
//	leaselab viz -variant V -seed S [setup flags] -o run.html
//	leaselab explore [-variant V] [-procs N] [-crashes K] [-pauses K] ...
//	leaselab run -path LOCKFILE [-variant V] [-store file|flock|redis|etcd|sqlite|postgres] [-dsn ADDR] [-- CMD ARGS]
//	leaselab torture [-variant V] [-procs N] [-duration D] [-faults kill,stop,term] [-trials N] [-json]
//	leaselab failover [-variants LIST] [-n N] [-redis ADDR -etcd URL -postgres DSN -sqlite]
//	leaselab variants [-json]
//
// leaselab help prints every flag. Exit status: 0 on success, 1 when a
// run breaks a property (or fails), 2 on bad input.
package main
