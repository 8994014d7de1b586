package etcdstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// openCluster is a client of every member of an etcd cluster (of one
// member: open).
func openCluster(t *testing.T, members []*servertest.Server, name string, timeout time.Duration, onError func(string, error)) *Store {
	t.Helper()
	// Connecting is bounded by this setup deadline, not by one call's
	// timeout: on a loaded machine a handshake alone can take longer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(ctx, Options{Endpoints: servertest.Endpoints(members), Name: name, Timeout: timeout, OnError: onError})
	if err != nil {
		t.Fatalf("New: %v\nfirst member's log:\n%s", err, members[0].Log())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The contract suite against a three-member etcd cluster on loopback
// (issue 18, item 4): every subtest, notices and porcupine's check of a
// concurrent history included, with clients that know every member.
func TestEtcdClusterContract(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-member etcd cluster")
	}
	members := servertest.EtcdCluster(t, 3)
	storetest.Run(t, func(t *testing.T) storetest.Open {
		name := strings.ReplaceAll(t.Name(), "/", "-") + "-" + string(rune('a'+leaseSeq.Add(1)%26))
		return func(int64) lease.Store { return openCluster(t, members, name, time.Second, nil) }
	}, storetest.Options{Expiry: time.Second, ExpirySlack: 900 * time.Millisecond})
}

// leaderMember returns the index of the cluster's raft leader.
func leaderMember(t *testing.T, members []*servertest.Server) int {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: servertest.Endpoints(members), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, m := range members {
			if m.Exited() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := c.Status(ctx, m.Endpoint())
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no etcd leader within 20 s")
	return -1
}

// With the raft leader member SIGKILLed, a client of every member writes
// on through the new leader, and a watcher's notices resume (the watch is
// re-established on another member, from the revision after its last
// event).
func TestEtcdClusterLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-member etcd cluster")
	}
	members := servertest.EtcdCluster(t, 3)
	writer := openCluster(t, members, "killed", time.Second, nil)
	watcher := openCluster(t, members, "killed", time.Second, nil)
	n0, _ := watcher.Changes()
	rec, err := writer.Create(1, 9*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitNotice := func(what string, n uint64) uint64 {
		t.Helper()
		return storetest.WaitNotice(t, watcher, what, n, 20*time.Second)
	}
	n := waitNotice("create", n0)
	killed := leaderMember(t, members)
	members[killed].Kill()
	start := time.Now()
	for {
		r, err := writer.Renew(rec, 9*time.Second)
		if err == nil {
			rec = r
			break
		}
		// A call that timed out may have taken effect (an unknown
		// outcome): the record read back, if it is still ours, is the
		// one to renew, as the reference does.
		if cur, rerr := writer.Read(); rerr == nil && cur.Holder == rec.Holder {
			rec = cur
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no renewal within 20 s of the leader member's death: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("renewed %v after the leader member (%d) was killed", time.Since(start).Round(time.Millisecond), killed)
	n = waitNotice("the renewal after the leader member died", n)
	if err := writer.Release(rec); err != nil {
		t.Fatal(err)
	}
	waitNotice("the release", n)
	if _, err := watcher.Read(); err == nil {
		t.Fatal("a read after the release found a record")
	}
}
