// Package storetest is the contract suite every lease.Store runs: the file
// store (lease.VersionedFile), Redis, etcd, SQLite and PostgreSQL, each
// against a real server (see package servertest).
//
// [Run] checks, on a fresh lease for each subtest:
//
//   - Basics: a missing lease reads as fs.ErrNotExist; Create publishes a
//     record whose epoch is its version; a second Create fails with
//     fs.ErrExist; Renew writes a new, higher version with the same holder
//     and epoch; Release deletes; every client (another connection, as
//     another process would have) reads what the last write returned.
//   - ConcurrentCreate: contenders, each with its own client, call Create
//     at once; exactly one wins, the others get fs.ErrExist, round after
//     round (the winner releases between rounds).
//   - StaleCompareAndSet: Renew, Takeover and Release with an expectation
//     that a later write has made stale fail with lease.ErrConflict and
//     change nothing.
//   - NonOwner: a process that is not the holder cannot release or renew
//     the lease, with its own old record or (unless VersionOnlyCompare) a
//     record naming itself at the current version.
//   - Epochs: across takeovers, releases and re-creations by several
//     holders, epochs strictly increase from leader to leader and versions
//     with every write; nothing is ever reused.
//   - StatesLease: a record keeps its writer's lease (Record.TTL: 27 s at
//     a Create, 9 s at a renewal, rounded up to a whole millisecond), and
//     another client reads back the last write's; the records writes
//     return compare equal to what is stored. (NoLease: a store that keeps
//     none, whose records read with TTL 0.)
//   - Expiry (stores with a server-side TTL): a record that is not renewed
//     is gone after its lease duration, and compare-and-set on it fails; a
//     record that is renewed stays; the next Create's epoch is higher.
//   - Linearizable: several clients make random calls at once; the history
//     of real calls and returns (records in full: holder, epoch, version)
//     must be linearizable against model.Register, the same lease register
//     the simulator's runs are checked against (porcupine).
//
// [ServerLoss] is the failure test: a real lease.Reference leads over the
// store, the server is killed (or paused), and the leader must stop acting
// at its local deadline and step down by it (plus at most one operation
// timeout), reporting the store's errors on the way.
//
// Flock: lease.EpochFile, the flock variant's store, is a register only
// while its caller holds the lock file's flock(2) (the variant holds it
// for as long as it leads). lease.FlockRegister is the flock store as a whole
// register: every operation locks, reads, compares and writes; the suite
// runs on it in TestFlockContract (no Expiry: it has no server of its own).
package storetest
