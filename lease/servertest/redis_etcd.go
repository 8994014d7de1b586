package servertest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis starts a redis-server on a free loopback port, without
// persistence, requiring password when it is not "", with extra
// arguments after the others (a test's "--cluster-enabled", "yes"). It is
// killed when the test ends.
func Redis(t testing.TB, password string, extra ...string) *Server {
	t.Helper()
	bin := lookBin(t, "redis-server", "redis-server")
	dir := t.TempDir()
	var s *Server
	startOnFreePort(t, func() error {
		port := FreePort(t)
		s = &Server{Name: "redis-server", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, Password: password}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--logfile", ""}
		if password != "" {
			args = append(args, "--requirepass", password)
		}
		args = append(args, extra...)
		return launch(t, s, bin, args, nil, func() error { return redisPing(s.Addr, password) })
	})
	return s
}

// redisPing speaks just enough RESP to see the server answer PING.
func redisPing(addr, password string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	if password != "" {
		fmt.Fprintf(c, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password)
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("AUTH: %q", strings.TrimSpace(line))
		}
	}
	fmt.Fprintf(c, "*1\r\n$4\r\nPING\r\n")
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %q", strings.TrimSpace(line))
	}
	return nil
}

// Endpoint is an etcd server's client URL, http://127.0.0.1:N.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// Etcd starts a one-member etcd cluster (Debian's etcd-server) with its
// client and peer URLs on free loopback ports and its data in memory
// ([MemDir]). It is killed when the test ends.
func Etcd(t testing.TB) *Server {
	t.Helper()
	return etcdIn(t, MemDir(t))
}

// EtcdOnDisk is [Etcd] with its data on the disk (in t.TempDir()): each
// commit waits for etcd's fsyncs, as in production.
func EtcdOnDisk(t testing.TB) *Server {
	t.Helper()
	return etcdIn(t, t.TempDir())
}

func etcdIn(t testing.TB, dir string) *Server {
	t.Helper()
	bin := lookBin(t, "etcd", "etcd-server")
	var s *Server
	startOnFreePort(t, func() error {
		port, peer := FreePort(t), FreePort(t)
		s = &Server{Name: "etcd", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir}
		client := "http://" + s.Addr
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		data := filepath.Join(dir, "data")
		os.RemoveAll(data) // a failed attempt's
		args := []string{
			"--name", "leaselab", "--data-dir", data,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "leaselab=" + peerURL, "--initial-cluster-state", "new",
			// A one-member cluster elects itself within an election
			// timeout; the shortest lease etcd grants is 1.5 election
			// timeouts, rounded up to whole seconds: 1 s here.
			"--heartbeat-interval", "10", "--election-timeout", "100",
			"--logger", "zap", "--log-level", "warn",
		}
		return launch(t, s, bin, args, nil, func() error { return etcdHealthy(s.Addr) })
	})
	return s
}

// etcdHealthy asks etcd's /health endpoint, over plain HTTP/1.1.
func etcdHealthy(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	if !strings.Contains(b.String(), `"health":"true"`) {
		return fmt.Errorf("etcd /health: %q", b.String())
	}
	return nil
}
