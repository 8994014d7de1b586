package servertest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recTB records a skip or a failure instead of acting on it; the call
// ends its goroutine, as SkipNow and FailNow do.
type recTB struct {
	testing.TB
	skipped, failed string
}

func (r *recTB) Helper() {}
func (r *recTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recTB) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func callMissing(t *testing.T) *recTB {
	r := &recTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		missing(r, "redis-server", "redis-server")
	}()
	<-done
	return r
}

// A missing server skips the test with an install hint outside CI, and
// fails it in CI.
func TestMissingServer(t *testing.T) {
	t.Setenv("CI", "")
	r := callMissing(t)
	if r.failed != "" || !strings.Contains(r.skipped, "apt-get install -y redis-server") {
		t.Errorf("outside CI: skipped %q, failed %q; want a skip with the install hint", r.skipped, r.failed)
	}
	t.Setenv("CI", "1")
	r = callMissing(t)
	if r.skipped != "" || !strings.Contains(r.failed, "apt-get install -y redis-server") || !strings.Contains(r.failed, "CI is set") {
		t.Errorf("in CI: skipped %q, failed %q; want a failure", r.skipped, r.failed)
	}
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// stillServes reports whether s's own processes still listen on its port
// (another test binary's server may have taken the freed port meanwhile).
func stillServes(s *Server) bool {
	_, p, _ := net.SplitHostPort(s.Addr)
	port, _ := strconv.Atoi(p)
	return dialable(s.Addr) && holds(s.PID(), port)
}

// Each server starts, answers, and is gone after Kill.
func TestServers(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		s := Redis(t, "")
		if err := redisPing(s.Addr, ""); err != nil {
			t.Fatal(err)
		}
		s.Kill()
		if !s.Exited() || stillServes(s) {
			t.Fatalf("redis still there after Kill")
		}
	})
	t.Run("redis-password", func(t *testing.T) {
		t.Parallel()
		s := Redis(t, "s3cret")
		if err := redisPing(s.Addr, "s3cret"); err != nil {
			t.Fatal(err)
		}
		if err := redisPing(s.Addr, "wrong"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("wrong password: %v, want WRONGPASS", err)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		t.Parallel()
		s := Etcd(t)
		s.Pause()
		if err := etcdHealthy(s.Addr); err == nil {
			t.Errorf("a paused etcd answered")
		}
		s.Resume()
		// Its health check goes through raft: on a loaded machine the
		// first answers after SIGCONT may take a while.
		var err error
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if err = etcdHealthy(s.Addr); err == nil {
				break
			}
		}
		if err != nil {
			t.Errorf("not healthy within 10 s of Resume: %v", err)
		}
		s.Kill()
		if stillServes(s) {
			t.Fatalf("etcd still there after Kill")
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		before, _ := filepath.Glob("/dev/shm/PostgreSQL.*")
		s := Postgres(t)
		if !dialable(s.Addr) {
			t.Fatal("postgres not listening")
		}
		if !strings.HasPrefix(s.DSN(), "postgres://postgres:leaselab@127.0.0.1:") {
			t.Errorf("DSN %q", s.DSN())
		}
		// Its children leave the process group (setsid); Pause and Kill
		// reach them all the same.
		kids := descendants(s.PID())
		if len(kids) == 0 {
			t.Fatalf("postgres has no child processes")
		}
		s.Pause()
		for _, k := range kids {
			// A child that exited meanwhile (the backend of the dial
			// above, say) is a zombie or gone; every other one stopped.
			if st := procState(k); st != "T" && st != "Z" && st != "" {
				t.Errorf("child %d in state %q after Pause; want T (stopped)", k, st)
			}
		}
		s.Resume()
		s.Kill()
		if stillServes(s) {
			t.Fatalf("postgres still there after Kill")
		}
		time.Sleep(100 * time.Millisecond)
		for _, k := range kids {
			if st := procState(k); st != "" && st != "Z" {
				t.Errorf("child %d in state %q after Kill", k, st)
			}
		}
		// Its dynamic shared memory went with its directory: none left
		// in /dev/shm, where a killed server's used to stay.
		after, _ := filepath.Glob("/dev/shm/PostgreSQL.*")
		for _, f := range after {
			if !slices.Contains(before, f) {
				t.Errorf("%s left behind by a killed server", f)
			}
		}
	})
}

// Nothing listens at Unreachable's address.
func TestUnreachable(t *testing.T) {
	if addr := Unreachable(t); dialable(addr) {
		t.Fatalf("%s accepted a connection", addr)
	}
}

// FreePort never hands out a port twice in one test binary, even though
// the kernel offers a just-closed port again readily.
func TestFreePortDistinct(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("FreePort returned %d twice", p)
		}
		seen[p] = true
	}
}

// A server whose port another server already holds is not taken for
// ready because the other one answers: the starter sees it fail to bind
// and tries another port. (A CI run once had two etcd tests given the same
// port, and one test talked to the other's server.)
func TestPortTakenByAnotherServer(t *testing.T) {
	first := Redis(t, "")
	if !holds(first.PID(), first.Port) {
		t.Fatalf("holds(%d, %d) = false for the server listening there", first.PID(), first.Port)
	}
	bin := lookBin(t, "redis-server", "redis-server")
	second := &Server{Name: "redis-server", Port: first.Port, Addr: first.Addr, Dir: t.TempDir()}
	args := []string{"--port", fmt.Sprint(first.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", second.Dir, "--daemonize", "no", "--logfile", ""}
	err := launch(t, second, bin, args, nil, func() error { return redisPing(second.Addr, "") })
	if err != errBind {
		t.Fatalf("launch on a port another server holds = %v, want errBind (the first server answered for it)", err)
	}
	if first.Exited() {
		t.Fatalf("the first server exited")
	}
}

// MemDir is in memory where the machine has a tmpfs at /dev/shm (Linux
// does), and is removed when its test ends.
func TestMemDir(t *testing.T) {
	var dir string
	t.Run("inner", func(t *testing.T) {
		dir = MemDir(t)
		if runtime.GOOS != "linux" {
			return
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		const tmpfsMagic = 0x01021994
		if st.Type != tmpfsMagic {
			t.Errorf("MemDir %s is on a file system of type %#x, not tmpfs", dir, st.Type)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("MemDir %s after its test: %v, want removed", dir, err)
	}
}
