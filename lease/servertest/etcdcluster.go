package servertest

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EtcdCluster starts an n-member etcd cluster (Debian's etcd-server) on
// free loopback ports, each member in its own directory and process
// (Server.Kill, Pause and Resume act on one member), and returns once
// every member reports itself healthy: a quorum has formed and elected a
// leader. Every member is killed when the test ends. Its timing is a
// loaded machine's (heartbeat 50 ms, election timeout 500 ms), so the
// shortest lease it grants is 1 s.
func EtcdCluster(t testing.TB, n int) []*Server {
	t.Helper()
	bin := lookBin(t, "etcd", "etcd-server")
	names := make([]string, n)
	clients, peers := make([]int, n), make([]int, n)
	var initial []string
	for i := range n {
		names[i], clients[i], peers[i] = fmt.Sprintf("m%d", i+1), FreePort(t), FreePort(t)
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", names[i], peers[i]))
	}
	var out []*Server
	for i := range n {
		dir := MemDir(t)
		s := &Server{Name: "etcd", Port: clients[i], Addr: "127.0.0.1:" + strconv.Itoa(clients[i]), Dir: dir}
		client, peer := "http://"+s.Addr, "http://127.0.0.1:"+strconv.Itoa(peers[i])
		args := []string{
			"--name", names[i], "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--logger", "zap", "--log-level", "warn",
		}
		// A member of a new cluster is healthy only once a quorum has
		// joined: each is ready when it listens, the cluster below.
		listening := func() error {
			c, err := net.DialTimeout("tcp", s.Addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}
		if err := launch(t, s, bin, args, nil, listening); err != nil {
			t.Fatalf("servertest: etcd member %s: %v (its log:\n%s)", names[i], err, s.Log())
		}
		out = append(out, s)
	}
	deadline := time.Now().Add(startTimeout)
	for _, s := range out {
		for {
			err := etcdHealthy(s.Addr)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("servertest: etcd cluster not healthy after %v (%s: %v); its log:\n%s", startTimeout, s.Addr, err, s.Log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("servertest: etcd cluster of %d ready", n)
	return out
}

// Endpoints returns the client URLs of servers (an etcd cluster's
// members).
func Endpoints(servers []*Server) []string {
	var eps []string
	for _, s := range servers {
		eps = append(eps, s.Endpoint())
	}
	return eps
}
