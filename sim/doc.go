// Package sim is the deterministic world in which the lease code runs:
// simulated processes, a simulated clock and an in-memory file system with
// the semantics of Linux at the granularity of system calls. Nothing in it
// uses goroutines, real time or unseeded randomness, so a run is determined
// by its seed and a failure found once can be replayed exactly.
package sim
