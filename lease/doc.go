// Package lease is lease-based leader election between processes on one
// machine, written against abstract interfaces so that a simulator can run
// it and break it.
//
// The algorithm talks to the world only through [Proc]: a [Clock] for time
// and waits, an [FS] whose every method is exactly one system call, and
// primitives to start activities ([Proc.Go]), hand off between them
// ([Proc.NewHandoff]), wait for SIGTERM ([Proc.AwaitShutdown]) and log. The
// lease record lives in a [Store]; the [SeedProgram] acquires, renews, watches,
// expires, takes over and releases it. [NewOSProc] and [OSFS] are the real
// runtime; package sim is the simulated one.
//
// A [Variant] names one version of the algorithm. The seed variants
// reproduce the program the post measured
// (ajit3259/systems-and-layers, coordination/code/file-lock/main.go) system
// call by system call, bugs included; each bug is documented at the step
// that has it (see [SeedFile]).
//
// The caller must know what the seed variants assume: one wall clock that
// all processes read (expiry is compared in whole Unix seconds of the
// writer's clock against the reader's), and processes that are never paused
// for longer than the lease (the leader has no local deadline).
package lease
