package etcdstore

import (
	"strconv"

	"github.com/leaselab/leaselab/lease"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The incarnation of the server's data (lease.Record.Incarnation) is a
// random number in the key beside the record's, the lease's key followed
// by lifeSuffix: put, on no etcd lease, by the first write that finds it
// absent (in that write's transaction) and never deleted, so that it
// changes only when the server loses its data (a data directory wiped, a
// cluster made anew). A revision names a record only while the data
// lasts: after a loss revisions count again from 1 and, a few writes
// later, pass the one a process saw before it; the incarnation tells that
// process that the record it reads or makes is of another life. (A check
// of the simulator's model: a watcher paused across a loss created above
// the revision it had seen, and led beside that record's holder.) A NUL
// in the suffix: no lease name a person chooses ends so, so no other
// lease's key is this one. A role that may write the lease's key and not
// this one (a grant on the key alone, not on its prefix) is refused
// every write: grant the prefix.
const lifeSuffix = "\x00incarnation"

// lifeKey is the key of the incarnation of the lease's server data.
func (s *Store) lifeKey() string { return s.key + lifeSuffix }

// lifeOp is the operation a write's transaction adds to its Then: the
// incarnation key put with fresh if it is absent, else read (lifeOf).
func (s *Store) lifeOp(fresh uint64) clientv3.Op {
	k := s.lifeKey()
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)},
		[]clientv3.Op{clientv3.OpPut(k, strconv.FormatUint(fresh, 10))},
		[]clientv3.Op{clientv3.OpGet(k)})
}

// lifeOf is the incarnation lifeOp's answer r says, fresh its own.
func lifeOf(r *pb.ResponseOp, fresh uint64) uint64 {
	t := r.GetResponseTxn()
	switch {
	case t == nil:
		return 0
	case t.Succeeded:
		return fresh
	case len(t.Responses) == 0:
		return 0
	}
	return lifeIn(t.Responses[0].GetResponseRange())
}

// lifeIn is the incarnation a read of its key found: 0 (not known) for
// none, and for a value no leaselab wrote, which names no life.
func lifeIn(r *pb.RangeResponse) uint64 {
	if r == nil || len(r.Kvs) == 0 {
		return 0
	}
	v := string(r.Kvs[0].Value)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != v {
		return 0
	}
	return n
}

// newLife is a fresh incarnation, drawn as a nonce is: random, not 0.
func newLife() uint64 { return lease.NewNonce() }
