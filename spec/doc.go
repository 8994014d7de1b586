// Package spec will hold what "correct" means for a lease algorithm, as
// predicates over a simulated trace: exclusive leadership, fencing, no
// wedge, failover bounds, and store linearizability (with package model).
// Each returns the first violation with the events that show it.
//
// It is empty until the checker lands (issue 3). Until then the trace
// analyses that the post's scenarios need (leadership intervals, most
// leaders at once, leaderless gaps) live in package sim as methods of
// trace.Trace, and spec will build its properties on them.
package spec
