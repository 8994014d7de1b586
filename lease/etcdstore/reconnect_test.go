package etcdstore

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease/servertest"
)

// gate is a TCP proxy to an etcd server that can be taken down: down, it
// cuts the connections it forwards and closes every new one at once,
// counting them (the client's attempts to connect).
type gate struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	down     bool
	attempts int
	conns    []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); g.setDown(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			if g.down {
				g.attempts++
				g.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				g.mu.Unlock()
				c.Close()
				continue
			}
			g.conns = append(g.conns, c, u)
			g.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return g
}

// setDown takes the server down (cutting every connection) or up, and
// returns the attempts to connect counted since the last call.
func (g *gate) setDown(down bool) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
	if down {
		for _, c := range g.conns {
			c.Close()
		}
		g.conns = nil
	}
	n := g.attempts
	g.attempts = 0
	return n
}

// A client that lost its server tries to connect again at least every
// ReconnectMax (and a little jitter), and so uses a server back after a
// long outage within about that. With gRPC's default back-off (1 s, times
// 1.6 after each failure, up to 120 s) it tried at most 5 times in 6 s,
// and a probe's elector over an etcd down for 90 s had no connection for
// 25 s after the server was back.
func TestReconnectsPromptly(t *testing.T) {
	t.Parallel()
	srv := servertest.Etcd(t)
	g := newGate(t, srv.Addr)
	s, err := New(t.Context(), Options{Endpoints: []string{"http://" + g.ln.Addr().String()}, Name: "reconnect", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Create(7, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	g.setDown(true)
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		s.Read() // fails (its timeout), as an elector's reads do
		time.Sleep(50 * time.Millisecond)
	}
	// Attempts at most ReconnectMax·1.2 apart after 100, 160, 256, 410,
	// 655 ms: at least 9 in 6 s, however the jitter falls; the default
	// back-off makes at most 5.
	n := g.setDown(false)
	if n < 7 {
		t.Errorf("%d attempts to connect in 6 s with the server down; want 7 or more (one every %v at least)", n, ReconnectMax)
	}
	start := time.Now()
	for {
		_, err := s.Read()
		if err == nil || errors.Is(err, fs.ErrNotExist) { // (an answer: the record has expired meanwhile)
			break
		}
		if time.Since(start) > 3*time.Second {
			t.Fatalf("the server back for %v, Read still fails: %v", time.Since(start).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d attempts to connect in 6 s down; Read answered %v after the server was back", n, time.Since(start).Round(time.Millisecond))
}
