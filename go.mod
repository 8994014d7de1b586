module github.com/leaselab/leaselab

go 1.26.0

require pgregory.net/rapid v1.3.0

require github.com/anishathalye/porcupine v1.3.1

// golang.org/x/sys/unix: flock(2) for lease.OSFS.Flock (the flock store),
// and the LOCK_* values lease exports; package syscall is frozen, and
// x/sys/unix is the maintained home of these calls.
require golang.org/x/sys v0.50.0
