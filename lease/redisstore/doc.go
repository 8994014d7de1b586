// Package redisstore is a lease.Store on Redis: one lease is one key,
// written only by server-side scripts, so that every operation is atomic
// on the server.
//
// Keys. A lease named NAME lives at "leaselab:{NAME}" (the record),
// "leaselab:{NAME}:version" (a counter), "leaselab:{NAME}:released" (the
// last released version) and "leaselab:{NAME}:lease" ("VERSION LEASE_MS
// NONCE" of the last write that stated a lease: how long, and which, a
// record the server dropped may still be held) and
// "leaselab:{NAME}:incarnation" (a random number the first write that
// finds none sets, and every write of version 1, with no TTL: the life of
// the server's data, lease.Record.Incarnation); writes publish on
// "leaselab:{NAME}:changes". The braces are a hash tag (one slot), but a
// Redis Cluster node is refused at New (ErrCluster).
//
// Record. The value is "HOLDER EPOCH VERSION LEASE_MS NONCE" in decimal. VERSION comes from
// INCR of the counter at every write (create, renew, takeover), so it
// strictly increases; the counter never expires and is never deleted, so a
// version (and an epoch) is never reused, not after a release (which
// deletes the record) and not after the record expired on the server. The
// epoch is the version at which its holder acquired (create or takeover).
// LEASE_MS is the lease its writer held it for (its LeaseDuration, in whole
// milliseconds rounded up, 1 to 86,400,000): Record.TTL, how long a watcher
// waits for the record to change before it takes over, whatever its own
// lease (processes of one lock may run with different leases during a
// rolling change of -lease). A value of three fields, "HOLDER EPOCH
// VERSION", is one an earlier leaselab wrote: it reads with TTL 0, and a
// watcher waits its own lease; it is renewed, taken over and released as
// any other. Any other value is an error that names what is wrong with it.
// Until is 0: expiry belongs to the server (its TTL) and to the observers
// (lease.Reference's own clocks), not to the record.
//
// Operations. Create is SET NX PX inside a script that first takes the next
// version; Renew, Takeover and Release compare the whole value with the
// expected record's and then SET (with PX) or DEL: a failed compare is
// lease.ErrConflict. A Takeover or Renew of a record the server has already
// expired finds no value and fails with lease.ErrConflict too: the caller
// re-reads, sees no lease, and creates one. A missing record reads as
// fs.ErrNotExist; Create over an existing one fails with fs.ErrExist. Any
// other error (timeout, refused or reset connection, wrong password) is
// returned as it is: the operation's outcome is unknown, and
// lease.Reference retries, stepping down at its local deadline.
//
// TTL. Each write sets the key's TTL (PX) to the lease duration plus
// Options.ExpiryMargin. That expiry is a safety net for abandoned leases,
// not what elects: lease.Reference takes over a record only after it has
// not changed for a lease on the observer's own monotonic clock, and its
// leader stops at a local deadline shorter than the lease. Redis stamps an
// expiry with its own wall clock, so a step of the server's clock moves
// it, and under maxmemory with a volatile-* policy it may evict the key:
// either drops a live record. Read tells that from a release (the release
// script records the version it released; one MGET reads the record, the
// counter and that version): lease.ErrReleased after a release, a
// *lease.VanishedError after anything else (Store is lease.Vanishing), and
// lease.Reference waits a dropped record out as if it were there. A
// margin still absorbs small steps (a longer server TTL never delays a
// takeover by lease.Reference, only the cleanup of a lease whose every
// contender has gone).
//
// Durability. The counter is as durable as the server's data: with neither
// RDB snapshots nor the AOF, a restarted Redis starts versions (and so
// epochs) again from 1. Run Redis with appendonly yes (appendfsync always
// for the strictest guarantee) where fencing epochs must survive a restart.
//
// Timeouts. Every call has its own deadline (Options.Timeout, default
// 1 s; keep it well under the renew interval), the client never retries
// (a retried write could report a conflict with its own success), and a
// hung server costs a call at most its timeout.
//
// Logging. The store returns every error (and tells Options.OnError), and
// logs nothing; but go-redis itself writes some failures of its connection
// pool to standard error, through a logger that is the whole process's,
// not the client's (a probe saw "redis: connection pool: failed to dial
// after 1 attempts: ... connection refused", four lines at the start of
// each outage of the server). A service that wants them elsewhere, or not
// at all, sets redis.SetLogger once; leaselab run silences them, as it
// reports each error itself.
package redisstore
