// Package fstest checks that an implementation of [lease.FS] behaves as
// Linux does. The simulator's file system and [lease.OSFS] both pass
// [TestFS], which is what lets a run in the simulator stand for a run on a
// real machine. The package's own test, TestDifferential, looks for what
// TestFS's cases did not think of: it runs random sequences of calls on
// both and compares every answer; each case it found is now one of
// TestFS's.
package fstest
