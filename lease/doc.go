// Package lease is lease-based leader election between processes on one
// machine, written against abstract interfaces so that a simulator can run
// it and break it.
//
// # The world an algorithm sees
//
// An algorithm talks to the world only through a [Proc]: a [Clock] for
// time and waits, an [FS] whose every method is exactly one system call,
// and primitives to start activities ([Proc.Go]), hand off between them
// ([Proc.NewHandoff]), wait for SIGTERM ([Proc.AwaitShutdown]) and log a
// [Msg]. Optional abilities are extension interfaces, as in io/fs:
// [FlockFS] (flock(2)), [Notifier] (inotify), [ShutdownNotifier] (a
// SIGTERM handler installed at once), [BootIDer], [Instancer] (processes
// of one PID told apart) and [ContextWaiter] (waits that a context's end
// cuts short). [NewOSProc] and
// [OSFS] are the real runtime; package sim is the simulated one; package
// lease/fstest checks that an FS behaves as Linux does.
//
// # Records and stores
//
// A lease is a [Record] in a [Store], whose operations (Read, Create,
// Renew, Takeover, Release) compare and set: [ErrConflict] says the record
// was not the expected one, a [StepError] names the system call that
// failed. The stores here are files: [SeedFile] (the post's, JSON
// {processId, leaseUntil}, bugs included), [VersionedFile] (the
// reference's: link(2) compare-and-set on versions), [EpochFile] (the
// flock election's epoch record, a register only under the lock) and
// [FlockRegister] (every operation under flock(2)). Stores on servers are
// in lease/redisstore, lease/etcdstore and lease/sqlstore; a store may be
// a [ChangeFeed] (it pushes its changes to the watchers, counted by
// [Notices]) and a [ReleaseHint] (its notices say which announce a
// release, on which a watcher creates at once instead of reading first).
//
// # The algorithms
//
//   - [SeedProgram] is the program the post measured
//     (ajit3259/systems-and-layers, coordination/code/file-lock/main.go),
//     system call by system call, bugs included: it is what leaselab
//     breaks, not what to copy. Each bug is documented at the step that
//     has it (see [SeedFile]).
//   - [Reference] is the corrected algorithm, the one to use: expiry
//     judged on the observer's monotonic clock, a local deadline shorter
//     than the lease by the drift bound, fencing epochs ([TermOf]), and
//     notification instead of polling where the FS has it.
//   - [FlockElection] makes leadership a lock the kernel holds, released
//     when its holder dies.
//
// Each takes a [Config] (the post's intervals, the drift bound, the
// callbacks of client-go's leaderelection: [Callbacks]).
//
// # In a Go service
//
// [Run] is the reference as a library call, shaped like client-go's
// leaderelection.RunOrDie: Run(ctx, store, cfg, RunOptions{}) elects on
// the real OS until ctx ends, then steps down, releases and returns; it
// never exits the process and installs no signal handler. The simulator
// runs the same function as its reference variant, so the checker's
// verdicts on the reference are verdicts on Run. [NewFileStore] is the
// file store for it.
//
// # Variants
//
// A [Variant] names one version of an algorithm over one store, so that
// the simulator, the checker and the command line can run it by name
// ([LookupVariant], [Variants], [Register] for a user's own). It states
// its [Claims]: how leadership passes on ([Handover]) and how late it may
// notice an expired lease, which the checker holds it to. [Main] runs a
// variant as the post's program does.
//
// The seed variants assume what the post's program assumes: one wall
// clock that all processes read (expiry is compared in whole Unix seconds
// of the writer's clock against the reader's), and processes that are
// never paused for longer than the lease (the leader has no local
// deadline).
package lease
