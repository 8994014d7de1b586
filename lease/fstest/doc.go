// Package fstest checks that an implementation of [lease.FS] behaves as
// Linux does. The simulator's file system and [lease.OSFS] both pass
// [TestFS], which is what lets a run in the simulator stand for a run on a
// real machine.
package fstest
