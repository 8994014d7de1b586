package etcdstore

import (
	"context"
	"errors"
	"io/fs"
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

// A watcher whose only member lost its cluster is told, once that member
// is back in it, of the writes made meanwhile: its watch, which the
// member cancels when it has no leader (clientv3.WithRequireLeader), is
// made again from the revision after its last event, and the member
// replays what it missed (a probe's mutant, 2026-12-07: a watch made
// again from the current revision lost them, and a release made meanwhile
// reached its watchers only at their next poll).
func TestEtcdClusterWatchReplaysWhatItMissed(t *testing.T) {
	watcher, n := watchAcrossIsolation(t, false, nil)
	if !watcher.Released(n - 1) {
		t.Errorf("the notice of the release made while the watcher's member was out of the cluster does not say it was a release")
	}
}

// The same, with the history it missed compacted away meanwhile (and
// another key written last, so that no event of the lease's key is left
// to replay): the watcher cannot tell what it missed, and is told of a
// change (a probe's mutant, 2026-12-07: a compaction that passed over the
// watch's revision was no notice, and the release reached its watchers
// only at their next poll).
func TestEtcdClusterWatchCompactedMeanwhile(t *testing.T) {
	watchAcrossIsolation(t, true, func(c *clientv3.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		put, err := c.Put(ctx, "leaselab/another-key", "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compact(ctx, put.Header.Revision); err != nil {
			t.Fatal(err)
		}
	})
}

// watchAcrossIsolation runs a watcher whose only member is one of a
// three-member cluster: it sees a create, then its member loses its
// leader (the others killed: its watch is cancelled) and is stopped
// (SIGSTOP), or killed if restart, while the others come back, the lease
// is released and after (if not nil) is run with a client of theirs;
// then its member is resumed, or restarted, and the watcher must be told
// of a change. (A restarted member serves its clients only once it has
// published itself through the cluster's log, so it has applied all that
// came before: a member resumed took a watch before it had applied a
// compaction, now and then, and replayed the release; but over a member
// restarted, a watch made again from the current revision was told of
// the release all the same, in 4 runs of 4.) It returns the watcher and
// its notice count then.
func watchAcrossIsolation(t *testing.T, restart bool, after func(c *clientv3.Client)) (*Store, uint64) {
	if testing.Short() {
		t.Skip("a three-member etcd cluster")
	}
	members := servertest.EtcdCluster(t, 3)
	const lone = 0
	others := members[1:]
	writer := openCluster(t, others, "replay", time.Second, nil)
	watcher := openCluster(t, members[:1], "replay", time.Second, nil)
	n0, _ := watcher.Changes()
	rec, err := writer.Create(1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := storetest.WaitNotice(t, watcher, "the create", n0, 20*time.Second)
	for _, m := range others {
		m.Kill()
	}
	time.Sleep(1500 * time.Millisecond) // (three election timeouts)
	if restart {
		members[lone].Kill()
	} else {
		members[lone].Pause()
	}
	for _, m := range others {
		m.MustRestart(t)
	}
	start := time.Now()
	for {
		err := writer.Release(rec)
		if err == nil {
			break
		}
		if _, rerr := writer.Read(); errors.Is(rerr, fs.ErrNotExist) {
			break // (an earlier attempt's, whose reply was lost)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no release within 20 s of the members' restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if after != nil {
		after(writer.c)
	}
	if restart {
		members[lone].MustRestart(t)
	} else {
		members[lone].Resume()
	}
	return watcher, storetest.WaitNotice(t, watcher, "the release made while its member was out of the cluster", n, 20*time.Second)
}
