// Package etcdstore is a lease.Store on etcd: one lease is one key,
// written only by transactions that compare its revision, and attached to
// an etcd lease that expires it if nobody renews it.
//
// Key and record. A lease named NAME lives at Options.Prefix + NAME
// ("leaselab/NAME" by default). Its value is "HOLDER EPOCH LEASE_MS" in
// decimal, where EPOCH 0 means "the revision of this write": an acquisition
// (create or takeover) cannot know its own revision before it commits, so
// it writes 0, and a renewal writes its epoch out. LEASE_MS is the lease
// its writer held it for (its LeaseDuration, in whole milliseconds rounded
// up, 1 to 86,400,000): Record.TTL, how long a watcher waits for the
// record to change before it takes over, whatever its own lease (processes
// of one lock may run with different leases during a rolling change of
// -lease). A value of two fields, "HOLDER EPOCH", is one an earlier
// leaselab wrote: it reads with TTL 0, and a watcher waits its own lease;
// it is renewed, taken over and released as any other. Any other value is
// an error that names what is wrong with it. A record's Version is the key's
// ModRevision, its Epoch the revision of the write that acquired it. etcd
// revisions are global to the cluster and only ever increase (compaction
// discards old revisions, never renumbers them), so versions increase at
// every write and epochs from leader to leader, and neither is reused: not
// after a release (which deletes the key), not after the key expired, not
// across a restart (revisions are in etcd's write-ahead log). Until is 0.
// A restart without the data (a wiped data directory, a cluster made
// anew) counts revisions again from 1; the key beside the lease's,
// Options.Prefix + NAME + "\x00incarnation", names the data's life
// (Record.Incarnation): a random number, on no etcd lease, that the first
// write to find it absent puts in its own transaction, and nothing
// deletes. Every record read or written carries it, and a loss shows as
// another incarnation whatever the revisions say. A role needs write
// access to both keys (grant the prefix); a record an earlier leaselab
// wrote reads with incarnation 0 (not known) until the next write.
//
// Operations. Create is a transaction If(CreateRevision(key) = 0)
// Then(Put(key, "HOLDER 0 LEASE_MS", lease)); Renew and Takeover are
// If(ModRevision(key) = cur.Version, Value(key) = cur's value)
// Then(Put(key, value, new lease)); each Then also has the incarnation's
// If(CreateRevision(life) = 0) Then(Put(life, fresh)) Else(Get(life)).
// Release is the same compare, then Delete. Read is one read-only
// transaction of the two keys. A failed compare is lease.ErrConflict; a key that has expired
// compares unequal too, so a Renew or Takeover of an expired record fails
// with lease.ErrConflict and the caller re-reads, sees no lease, and
// creates one. Reads are linearizable (etcd's default quorum read). Any
// other error (timeout, unavailable server, refused credentials) is
// returned as it is: the outcome is unknown, and lease.Reference retries,
// stepping down at its local deadline.
//
// TTL. Each write grants a new etcd lease of the lease duration plus
// Options.ExpiryMargin, rounded up to whole seconds (etcd's TTLs are whole
// seconds, and a server never grants less than 1.5 election timeouts:
// with the default 1 s election timeout, 2 s), puts the key with it, and
// revokes the lease of the value it replaced. A lease whose write failed
// is revoked, or expires on its own. Create is the exception: it puts
// the key with a spare lease when it has one, granted in the background
// after a read that found the key held (a watcher's), for twice the TTL,
// and used only while at least the TTL is left of it, counted from before
// its grant was sent, so that the key lives on the server at least its
// TTL, as with a lease granted at the create, and at most twice that
// (until the first renewal replaces it). A hand-over's create is then one
// Raft proposal, not two; a create that finds the key held keeps its
// spare for the next, and Close revokes it. A release deletes the key and
// leaves its lease to expire (a revoke would be one more proposal beside
// the successor's create). That expiry is a safety net for
// abandoned leases, not what elects: lease.Reference takes over only after
// the record has not changed for a lease on the observer's own clock, and
// its leader stops at a local deadline shorter than the lease. etcd times
// its leases on the leader's monotonic clock and extends them on a change
// of leader, so the key never vanishes before its TTL.
//
// Timeouts. Every call has its own deadline (Options.Timeout, default
// 1 s; keep it well under the renew interval). The etcd client waits for a
// connection until then rather than failing at once, so a call to a dead
// server takes its whole timeout. It tries to connect again at least every
// ReconnectMax (gRPC's default waits up to 120 s between attempts, and a
// server back after a 90 s outage went unused for 25 s: a probe).
package etcdstore
