// Package model checks a simulated run's Store operations for
// linearizability with porcupine, against the Store contract written as a
// sequential lease register.
//
// The register (register.go) holds one lease record or none. Read returns
// it; Create publishes one if there is none; Renew and Takeover
// compare-and-set (the record must equal the expected one); Release
// compares-and-deletes. A read that finds the record corrupt (an empty or
// half-written file) is never legal: a register has no such state, so the
// seed's truncate-then-write window shows up as a violation. An operation
// whose outcome is unknown (an I/O error, or no return because its process
// died) may or may not have taken effect; if it wrote, the register holds
// a wildcard record: its holder is known, its expiry is not, and the next
// read of that holder's record fixes it. A versioned store's read that
// found a version but could not read its content returns a record held by
// lease.Unknown, named by its version alone: it stands for whatever that
// version holds (a lease, or a release, which the register then names by
// that version), and a Takeover of it compares versions only.
//
//   - Register: the porcupine Model (a NondeterministicModel's ToModel);
//     its operations are Input and Output values, its states State values.
//   - FromTrace (history.go): a trace.Trace's EvStoreCall/EvStore pairs as a
//     porcupine history, one client per (process, activity), metadata Who.
//   - Check, CheckOps (check.go): run porcupine and return a Result, which
//     names the first operation that could not be linearized (Culprit,
//     Describe, Err) and writes porcupine's HTML visualization (WriteHTML).
//
// Intervals are porcupine's closed [Call, Return] in true ns: operations
// whose endpoints coincide count as concurrent, which can hide a
// violation but never invent one.
package model
