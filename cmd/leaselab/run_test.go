package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/spec/storetest"
	"github.com/leaselab/leaselab/trace"
)

// leaselab run as real processes: the first leads and runs its command, a
// SIGTERM (or SIGHUP: a closed terminal) releases the lease and stops the
// command (and its children), and the second takes over at once and runs
// its own.
func TestRunSingleton(t *testing.T) {
	if testing.Short() {
		t.Skip("builds leaselab and runs real processes for about 6 s")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { runSingleton(t, sig) })
	}
}

// leaselab run started with SIGHUP ignored (nohup) leaves it ignored: a
// hang-up does not end its term.
func TestRunNohup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real process")
	}
	dir := t.TempDir()
	var out storetest.SyncBuffer // (written by exec's copying goroutine as the test reads it)
	cmd := exec.Command("sh", "-c", "trap '' HUP; exec \"$0\" run -path \"$1\" -lease 30s -renew 10s -watch 10s -- sleep 60",
		leaselabBinary(t), filepath.Join(dir, "leader.lock"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "[LEADER] Acquired lease"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no leader within 10 s:\n%s", out.String())
		}
	}
	cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(500 * time.Millisecond)
	if strings.Contains(out.String(), "released") || strings.Contains(out.String(), "shutdown") {
		t.Errorf("a leader started under nohup ended its term on SIGHUP:\n%s", out.String())
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a leader started under nohup died of SIGHUP: %v", err)
	}
}

func runSingleton(t *testing.T, sig syscall.Signal) {
	dir := t.TempDir()
	bin := leaselabBinary(t)
	lock := filepath.Join(dir, "leader.lock")
	start := func(name string) (*exec.Cmd, *strings.Builder) {
		var out strings.Builder
		marker := filepath.Join(dir, name+".running")
		// A 30 s lease: within this test's waits, b can lead only by a's
		// release, never by its expiry, however slow the machine.
		cmd := exec.Command(bin, "run", "-path", lock, "-lease", "30s", "-renew", "10s", "-watch", "10s", "--",
			"sh", "-c", "touch "+marker+"; trap 'rm "+marker+"; exit 0' TERM; while :; do sleep 0.05; done")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name+".running"))
		return err == nil
	}
	waitFor := func(what string, cond func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	a, aout := start("a")
	waitFor("a to lead and run its command", func() bool { return exists("a") })
	b, bout := start("b")
	defer b.Process.Kill()
	time.Sleep(500 * time.Millisecond)
	if exists("b") {
		t.Fatal("b runs its command while a leads")
	}
	a.Process.Signal(sig)
	a.Wait()
	if exists("a") {
		t.Errorf("a's command still runs after a's %v", sig)
	}
	released := time.Now()
	waitFor("b to take over after a's release (its expiry would take 30 s)", func() bool { return exists("b") })
	t.Logf("b took over %v after a's release", time.Since(released).Round(time.Millisecond))
	if !strings.Contains(aout.String(), "Lease released") || !strings.Contains(aout.String(), "Received shutdown signal") {
		t.Errorf("a did not log its signal and its release:\n%s", aout.String())
	}
	b.Process.Signal(syscall.SIGTERM)
	b.Wait()
	if !strings.Contains(bout.String(), "[LEADER] Acquired lease") {
		t.Errorf("b did not log its acquisition:\n%s", bout.String())
	}
}

// flockHandoverBound bounds a flock hand-over in the tests: far below a
// lease, far above the kernel's milliseconds.
const flockHandoverBound = 3 * time.Second

// leaselab run -store flock as real processes: one leads, the next waits
// in flock(2); SIGKILL of the leader, and the kernel releases its lock as
// it reaps the process, so the waiter leads, with the next epoch, within
// milliseconds. Five leaders in a row are killed; each gap runs from the
// kill(2) to the new leader's log line arriving on its pipe.
func TestRunFlockFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := leaselabBinary(t)
	lock := filepath.Join(t.TempDir(), "leader.lock")
	type line struct {
		text string
		at   time.Time
	}
	type proc struct {
		cmd   *exec.Cmd
		lines chan line
		log   strings.Builder
	}
	start := func(id int) *proc {
		p := &proc{cmd: exec.Command(bin, "run", "-store", "flock", "-path", lock, "-id", strconv.Itoa(id)), lines: make(chan line, 100)}
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				p.lines <- line{sc.Text(), time.Now()}
			}
			close(p.lines)
		}()
		t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
		return p
	}
	waitFor := func(p *proc, want string) time.Time {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-p.lines:
				if !ok {
					t.Fatalf("process %d ended before logging %q:\n%s", p.cmd.Process.Pid, want, p.log.String())
				}
				p.log.WriteString(l.text + "\n")
				if strings.Contains(l.text, want) {
					return l.at
				}
			case <-timeout:
				t.Fatalf("process %d did not log %q within 10 s:\n%s", p.cmd.Process.Pid, want, p.log.String())
			}
		}
	}
	leader := start(1)
	waitFor(leader, "[LEADER] Acquired flock, epoch 1")
	var gaps []time.Duration
	for epoch := 2; epoch <= 6; epoch++ {
		waiter := start(epoch)
		waitFor(waiter, "[WATCHER] Lock held by another process, waiting")
		time.Sleep(20 * time.Millisecond) // into its blocking flock(2)
		if epoch == 2 {
			// The leader has shed its executable's pages (shedImage), so
			// that its death takes less time; the waiter has not.
			l, w := imageRSS(t, strconv.Itoa(leader.cmd.Process.Pid)), imageRSS(t, strconv.Itoa(waiter.cmd.Process.Pid))
			t.Logf("executable resident: leader %d kB, waiter %d kB", l, w)
			if l > w/2 {
				t.Errorf("the leader has %d kB of its executable resident, the waiter %d kB: the leader did not shed its image", l, w)
			}
		}
		killed := time.Now()
		if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		led := waitFor(waiter, "[LEADER] Acquired flock, epoch "+strconv.Itoa(epoch))
		gaps = append(gaps, led.Sub(killed))
		leader.cmd.Wait()
		leader = waiter
	}
	slices.Sort(gaps)
	t.Logf("SIGKILL of the leader to the next leader's log line, 5 failovers: min %v, median %v, max %v", gaps[0], gaps[2], gaps[4])
	// The kernel hands the lock over within milliseconds (BenchmarkFailover
	// measures it); the bound says "not a lease", with what a loaded
	// machine adds.
	if gaps[4] > flockHandoverBound {
		t.Errorf("failover took up to %v, want at most %v: the kernel releases a dead holder's flock at once", gaps[4], flockHandoverBound)
	}
	// SIGTERM: the leader steps down, unlocks and exits 0.
	leader.cmd.Process.Signal(syscall.SIGTERM)
	waitFor(leader, "Lease released")
	if err := leader.cmd.Wait(); err != nil {
		t.Errorf("leader after SIGTERM: %v", err)
	}
	b, err := os.ReadFile(lock)
	if rec, perr := lease.ParseFlockRecord(b); perr != nil || rec.Holder != 6 || rec.Epoch != 6 || len(b) != lease.FlockRecordSize || err != nil {
		t.Errorf("lock file %q: %+v, %v, %v; want holder 6's record, epoch 6, one record long", b, rec, perr, err)
	}

	// The kernel's part alone: this test process waits in flock(2) itself,
	// and the gap runs from kill(2) to its flock returning.
	var wakes []time.Duration
	for id := 7; id <= 11; id++ {
		leader := start(id)
		waitFor(leader, "[LEADER] Acquired flock")
		fd, err := lease.OSFS{}.Open(lock, lease.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if err := (lease.OSFS{}).Flock(fd, lease.LOCK_EX); err != nil {
				t.Error(err)
			}
			got <- time.Now()
		}()
		time.Sleep(20 * time.Millisecond)
		killed := time.Now()
		leader.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case at := <-got:
			wakes = append(wakes, at.Sub(killed))
		case <-time.After(5 * time.Second):
			t.Fatal("flock still waits 5 s after SIGKILL of the holder")
		}
		leader.cmd.Wait()
		lease.OSFS{}.Close(fd)
	}
	slices.Sort(wakes)
	t.Logf("SIGKILL of the holder to a waiting flock(2) returning, 5 times: min %v, median %v, max %v", wakes[0], wakes[2], wakes[4])
}

// A flock leader whose lock file is removed from its path steps down
// within a renew interval: a process started afterwards opens the name
// afresh, makes a new file and locks it, and before, both led for good
// (a probe: two commands at once). The old leader, told by the record it
// reads at its path every renew interval, unlocks and contends again on
// the new file.
func TestRunFlockLeaderFollowsItsPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	bin := leaselabBinary(t)
	lock := filepath.Join(t.TempDir(), "leader.lock")
	start := func(id int) (*exec.Cmd, *lockedLog) {
		var out lockedLog
		cmd := exec.Command(bin, "run", "-store", "flock", "-path", lock, "-id", strconv.Itoa(id), "-lease", "1s", "-renew", "300ms", "-watch", "300ms")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &out
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10 s for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	_, a := start(1)
	waitFor("the first process to lead", func() bool { return a.contains("[LEADER] Acquired flock") })
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	_, b := start(2)
	waitFor("a process started after the removal to lead on the new file", func() bool { return b.contains("[LEADER] Acquired flock") })
	waitFor("the first to step down", func() bool { return a.contains("Lock file removed or replaced at its path, stepping down") })
	// And it contends again, on the file now at the path: it waits.
	waitFor("the first to wait for the new file's lock", func() bool {
		return strings.Count(a.String(), "[WATCHER] Lock held by another process, waiting") >= 1
	})
}

// lockedLog is a process's output, written by its copier goroutine and
// read by the test.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedLog) contains(s string) bool { return strings.Contains(l.String(), s) }

// -store flock selects the flock variant; with another -variant it is a
// usage error, as is an unknown store, a server store without -dsn, or
// an unreachable server.
func TestRunStoreFlag(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "leader.lock")
	for args, want := range map[string]string{
		"-path LOCK -store flock -variant reference":           "-store flock runs the flock variant, not -variant reference",
		"-path LOCK -store flock -variant seed":                "not -variant seed",
		"-store redis":                                         "-store redis needs -dsn",
		"-path LOCK -store nosuch":                             `-store "nosuch": valid: file, flock, redis, etcd, sqlite, postgres`,
		"-store redis -dsn 127.0.0.1:1":                        "connection refused",
		"-store etcd -variant seed -dsn x":                     "-store etcd runs the reference over etcd, not -variant seed",
		"-store redis -dsn 127.0.0.1:1 -renew 1s -timeout 10s": "-timeout 10s: want more than 0 and less than -renew (1s)",
		"-store redis -dsn 127.0.0.1:1 -timeout -1s":           "-timeout -1s: want more than 0",
	} {
		code, _, errOut := runCLI(append([]string{"run"}, strings.Fields(strings.ReplaceAll(args, "LOCK", lock))...)...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("run %s: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("a refused run created the lock file")
	}
}

// Flags that mean nothing for the store are refused, not ignored, and so
// is a server variant over a lock file: the simulator's model of a server,
// which never led and never exited.
func TestRunRefusesFlagsTheStoreIgnores(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "leader.lock")
	for args, want := range map[string]string{
		"-path LOCK -variant redis":                       "-variant redis is the simulator's model of a server store; on real processes run -store redis -dsn",
		"-path LOCK -variant etcd":                        "run -store etcd -dsn",
		"-path LOCK -variant sql":                         "run -store sqlite or -store postgres -dsn",
		"-store redis -path LOCK -dsn 127.0.0.1:1":        "-path is the lock file of the file and flock stores",
		"-store sqlite -path LOCK -dsn LOCK.db":           "-path is the lock file of the file and flock stores",
		"-path LOCK -name job":                            "-name is for the server stores",
		"-path LOCK -store flock -timeout 1s":             "-timeout is for the server stores",
		"-path LOCK -dsn 127.0.0.1:1":                     "-dsn is for the server stores",
		"-store etcd -dsn http://127.0.0.1:1/foo?x":       `endpoint "http://127.0.0.1:1/foo?x": want host:port, http(s)://host:port or unix(s)://PATH, with no path, query or user`,
		"-store etcd -dsn 127.0.0.1:1,127.0.0.1:2/a":      `endpoint "127.0.0.1:2/a"`,
		"-store etcd -dsn http://user:pw@127.0.0.1:1":     "no path, query or user",
		"-store redis -dsn redis://127.0.0.1:1/0?foo=bar": "with no query",
	} {
		argv := append([]string{"run"}, strings.Fields(strings.ReplaceAll(args, "LOCK", lock))...)
		code, errOut := runBinary(t, append(argv, "-lease", "1s", "-renew", "300ms", "-watch", "300ms", "--", "true")...)
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("run %s: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(lock)); len(ents) != 0 {
		t.Errorf("refused runs left %d files", len(ents))
	}
}

// runBinary runs the leaselab binary with args in a directory of its own,
// for at most 20 s, and returns its exit status (-1: killed) and standard
// error. (Not run in-process: a run that leads starts its supervisor as
// this executable, which in a test is the test binary.)
func runBinary(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, leaselabBinary(t), args...)
	cmd.Dir = t.TempDir()
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, errb.String()
	case ctx.Err() != nil:
		return -1, errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), errb.String()
	}
	t.Fatal(err)
	return 0, ""
}

// An in-memory SQLite database is refused: each runner would have its
// own, and every one led (a probe).
func TestRunRefusesInMemorySQLite(t *testing.T) {
	for _, dsn := range []string{":memory:", "file::memory:", "file:lease?mode=memory&cache=shared", "?mode=memory", "file:"} {
		code, errOut := runBinary(t, "run", "-store", "sqlite", "-dsn", dsn, "-lease", "1s", "-renew", "300ms", "-watch", "300ms", "--", "true")
		if code != 2 || !strings.Contains(errOut, "one process's own") {
			t.Errorf("run -store sqlite -dsn %q: exit %d, stderr %q; want 2 and a refusal of the in-memory database", dsn, code, errOut)
		}
	}
}

// An unreachable Redis is said once, by leaselab, not also by go-redis's
// own logger on standard error.
func TestRunUnreachableRedisSaidOnce(t *testing.T) {
	cmd := exec.Command(leaselabBinary(t), "run", "-store", "redis", "-dsn", "127.0.0.1:1", "--", "true")
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("run against an unreachable redis: %v, want exit status 2", err)
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "leaselab: -store redis:") || !strings.Contains(lines[0], "connection refused") {
		t.Errorf("stderr %q: want one line, leaselab's, saying the connection was refused", errb.String())
	}
}

// feedStore is a server store as the departing leader's wait sees it:
// notices, and a release that does what the test says.
type feedStore struct {
	lease.Store // nil: only Release is called
	*lease.Notices
	release func() error
}

func (s feedStore) Release(lease.Record) error { return s.release() }

// hintless is a store whose notices say nothing of releases (SQLite's).
type hintless struct {
	lease.Store
	feed *lease.Notices
}

func (s hintless) Changes() (uint64, <-chan struct{}) { return s.feed.Changes() }
func (s hintless) Release(lease.Record) error         { return nil }

// noFeed is a store with no notices at all.
type noFeed struct{ lease.Store }

func (noFeed) Release(lease.Record) error { return nil }

// A leader that released over a server waits for its successor's notice:
// not for its own release's, no longer than its bound, and not at all if
// it made no release or its store's notices cannot tell a release.
func TestAwaitSuccessor(t *testing.T) {
	const long = 5 * time.Second
	// depart releases through d (unless release is false), then waits
	// with bound; after runs beside the wait.
	depart := func(s lease.Store, release bool, bound time.Duration, after func()) time.Duration {
		d := newDeparting(s)
		start := time.Now()
		if release {
			d.Release(lease.Record{})
		}
		go after()
		d.awaitSuccessor(bound)
		return time.Since(start)
	}
	nothing := func() {}
	// releaseThenCreate: the release's notice comes 20 ms late, the
	// successor's create's 30 ms after it.
	releaseThenCreate := func(n *lease.Notices) {
		time.Sleep(20 * time.Millisecond)
		n.NotifyRelease()
		time.Sleep(30 * time.Millisecond)
		n.Notify()
	}
	for _, c := range []struct {
		name          string
		release       func(n *lease.Notices) error
		after         func(n *lease.Notices)
		bound         time.Duration
		atLeast, most time.Duration
	}{
		{"the successor's create ends the wait",
			func(n *lease.Notices) error { n.NotifyRelease(); return nil },
			func(n *lease.Notices) { time.Sleep(50 * time.Millisecond); n.Notify() },
			long, 50 * time.Millisecond, long / 2},
		{"so does a create after a late release notice",
			func(n *lease.Notices) error { return nil },
			releaseThenCreate,
			long, 50 * time.Millisecond, long / 2},
		{"nor does a late notice of its own last renewal",
			func(n *lease.Notices) error { n.Notify(); return nil },
			releaseThenCreate,
			long, 50 * time.Millisecond, long / 2},
		{"its own release notices do not",
			func(n *lease.Notices) error { n.NotifyRelease(); return nil },
			func(n *lease.Notices) { n.NotifyRelease(); n.NotifyRelease() },
			200 * time.Millisecond, 200 * time.Millisecond, long / 2},
		{"a create counted before Run returned ends it at once",
			func(n *lease.Notices) error { n.NotifyRelease(); n.Notify(); return nil },
			func(*lease.Notices) {},
			long, 0, long / 2},
		{"a failed release: no wait",
			func(n *lease.Notices) error { return lease.ErrConflict },
			func(*lease.Notices) {},
			long, 0, long / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := &lease.Notices{}
			n.Notify() // a renewal of its own, before the release: not waited for
			s := feedStore{Notices: n, release: func() error { return c.release(n) }}
			got := depart(histStore{inner: s, h: &history{w: io.Discard}}, true, c.bound, func() { c.after(n) })
			if got < c.atLeast || got > c.most {
				t.Errorf("returned after %v: want %v to %v", got, c.atLeast, c.most)
			}
		})
	}
	t.Run("no release: no wait", func(t *testing.T) {
		n := &lease.Notices{}
		if got := depart(feedStore{Notices: n}, false, long, nothing); got > long/2 {
			t.Errorf("returned after %v: want at once", got)
		}
	})
	t.Run("notices with no release hint: no wait", func(t *testing.T) {
		n := &lease.Notices{}
		if got := depart(hintless{feed: n}, true, long, nothing); got > long/2 {
			t.Errorf("returned after %v: want at once", got)
		}
	})
	t.Run("no notices: no wait", func(t *testing.T) {
		if got := depart(noFeed{}, true, long, nothing); got > long/2 {
			t.Errorf("returned after %v: want at once", got)
		}
	})
}

// A leader SIGTERMed over a server exits after its successor's create, or
// after waiting its bound for it (elect's departing wait), never at once
// after its release: in the histories' common clock, its exit line comes
// after the call of the create that made the other process leader, or at
// least successorWait after its own release. (Lower bounds only: a loaded
// machine can only make the exit later.) On Redis, etcd and PostgreSQL,
// whose notices tell a release apart; SQLite's do not, and it does not
// wait.
func TestDepartingLeaderWaitsForSuccessor(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and real servers for about 8 s")
	}
	for _, store := range []string{"redis", "etcd", "postgres"} {
		t.Run(store, func(t *testing.T) {
			var dsn string
			switch store {
			case "redis":
				dsn = servertest.Redis(t, "").Addr
			case "etcd":
				dsn = servertest.Etcd(t).Endpoint()
			case "postgres":
				dsn = servertest.Postgres(t).DSN()
			}
			departs(t, serverSubject(store, dsn))
		})
	}
}

// departs runs two processes over sub's server, SIGTERMs the leader and
// checks when it exited.
func departs(t *testing.T, sub failoverSubject) {
	c := newCluster(leaselabBinary(t), "", sub.variant.Name, scaled, t.TempDir())
	c.extra = append(sub.extra, "-name", "departing-"+strconv.Itoa(os.Getpid()))
	defer c.shutdown()
	for range 2 {
		if _, err := c.spawn(0); err != nil {
			t.Fatal(err)
		}
	}
	var l *child
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if l = c.leader(); l != nil && len(c.alive()) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader among 2 processes in 10 s")
		}
	}
	time.Sleep(scaled.RenewInterval) // the watcher has read the lease
	if _, ok := c.signal(l, trace.Term, 0); !ok {
		t.Fatal("SIGTERM not sent")
	}
	<-l.done
	// The successor's create may not have returned yet when the leader
	// exits (the leader can see its notice first): it is killed only once
	// it leads, so that its history holds the create's return.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if k := c.leader(); k != nil && k != l {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no successor led within 10 s of the leader's exit")
		}
	}
	c.shutdown() // the successor's history is read to its end
	// The release's call and return, the exit; the call of the create
	// that made the other process leader (the departing process may see
	// that create's notice before the successor has read the server's
	// reply, and the successor may see the release's before the
	// departing process has: so calls, not returns).
	var relCall, released, exited, created int64 = -1, -1, -1, -1
	call := int64(-1)
	for _, e := range l.hist.events {
		switch {
		case e.Kind == trace.EvStoreCall && e.Store == trace.StoreRelease:
			call = e.T
		case e.Kind == trace.EvStore && e.Store == trace.StoreRelease && e.Res == trace.ResOK:
			relCall, released = call, e.T
		case e.Kind == trace.EvExit:
			exited = e.T
		}
	}
	for _, k := range c.kids {
		if k == l {
			continue
		}
		call := int64(-1)
		for _, e := range k.hist.events {
			switch {
			case e.Store != trace.StoreCreate || created >= 0:
			case e.Kind == trace.EvStoreCall:
				call = e.T
			case e.Kind == trace.EvStore && e.Res == trace.ResOK && relCall >= 0 && call > relCall:
				created = call
			}
		}
	}
	if released < 0 || exited < 0 {
		t.Fatalf("the leader's history has no release (%d) or no exit (%d)", released, exited)
	}
	switch {
	case created >= 0 && exited >= created:
		t.Logf("released at %v, successor's create called at %v, exited at %v", time.Duration(released), time.Duration(created), time.Duration(exited))
	case exited-released >= int64(successorWait):
		t.Logf("released at %v, exited %v later (no successor's create by then: %v)", time.Duration(released), time.Duration(exited-released), time.Duration(created))
	default:
		t.Errorf("released at %v, exited at %v, %v later, before its successor's create (%v) and before its wait's bound (%v)",
			time.Duration(released), time.Duration(exited), time.Duration(exited-released), time.Duration(created), successorWait)
	}
}

// A leader whose log's reader is gone (a closed pipe: | head) or has
// stopped reading (a full pipe: a stalled log shipper) leads on: it keeps
// renewing, and SIGTERM ends it in order, status 0 (found by a probe: the
// closed pipe killed it with SIGPIPE, status 141, its lease left to expire;
// the full pipe stopped its renewals and its SIGTERM handling).
func TestRunSurvivesItsLogReader(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for about 4 s")
	}
	bin := leaselabBinary(t)
	for _, c := range []struct {
		name string
		pipe func(t *testing.T) (w *os.File, keep *os.File)
	}{
		{"closed pipe", closedPipe},
		{"full pipe", fullPipe},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, keep := c.pipe(t)
			if keep != nil {
				defer keep.Close()
			}
			cmd := exec.Command(bin, "run", "-path", filepath.Join(dir, "lock"), "-lease", "2s", "-renew", "200ms", "-watch", "200ms")
			cmd.Stdout, cmd.Stderr = w, w
			exited := startPiped(t, cmd, w)
			newest := func() int {
				n := 0
				names, _ := os.ReadDir(dir)
				for _, e := range names {
					if v, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "lock.")); err == nil {
						n = max(n, v)
					}
				}
				return n
			}
			time.Sleep(time.Second)
			v1 := newest()
			select {
			case err := <-exited:
				t.Fatalf("run ended after 1 s with its log's reader gone: %v", err)
			case <-time.After(time.Second):
			}
			if v2 := newest(); v1 < 1 || v2 <= v1 {
				t.Errorf("the lease's newest version was %d after 1 s and %d a second later: no renewals", v1, v2)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("after SIGTERM: %v, want status 0", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not end within 10 s of SIGTERM")
			}
		})
	}
}

// closedPipe is a pipe whose reader is gone.
func closedPipe(t *testing.T) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return w, nil
}

// fullPipe is a pipe filled to capacity, whose reader (keep) never reads.
func fullPipe(t *testing.T) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd := int(w.Fd()) // (once: Fd makes the file blocking)
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := syscall.Write(fd, buf); err != nil {
			break // EAGAIN: full
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	return w, r
}

// run's own diagnostics (the runner's "the command exited ...", OnError's
// "leaselab run: op: err") stall nothing either when its standard error
// is a full pipe: a command that exits ends run with its status, the lease
// released (found by review: the runner's line about the command's exit
// blocked, and run kept leading, commandless, until SIGTERM, which it
// could not handle either).
func TestRunDiagnosticsNeverBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	bin := leaselabBinary(t)
	for _, store := range []string{"file", "flock"} {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			w, keep := fullPipe(t)
			defer keep.Close()
			out, err := os.Create(filepath.Join(dir, "stdout"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd := exec.Command(bin, "run", "-store", store, "-path", filepath.Join(dir, "lock"), "--", "sh", "-c", "exit 3")
			cmd.Stdout, cmd.Stderr = out, w
			exited := startPiped(t, cmd, w)
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 3 {
					t.Errorf("run: %v, want status 3 (the command's)", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not end within 10 s of its command's exit, its standard error a full pipe")
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "stdout")); !strings.Contains(string(b), "released") {
				t.Errorf("no release line on standard output:\n%s", b)
			}
		})
	}
}

// A variant that exits the process itself (flock), ended by its command's
// own exit, writes its last lines before run exits with the command's
// status (found by review: the runner's exit skipped the log's flush, and
// "Lease released" was missing in 13 of 20 runs).
func TestRunCommandExitKeepsLastLines(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	bin := leaselabBinary(t)
	for i := range 5 {
		dir := t.TempDir()
		out, err := exec.Command(bin, "run", "-store", "flock", "-path", filepath.Join(dir, "lock"), "--", "sh", "-c", "exit 3").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("run %d: %v, want status 3 (the command's)\n%s", i, err, out)
		}
		if !strings.Contains(string(out), "Lease released") {
			t.Fatalf("run %d: no release line:\n%s", i, out)
		}
	}
}

// A SIGTERM while run connects to its server (an etcd that does not
// answer: up to 5 s) ends it with status 0, as at any other time, saying
// so; its default action, status 143 and nothing said, is what a probe
// saw.
func TestRunSignalWhileConnecting(t *testing.T) {
	if testing.Short() {
		t.Skip("a real process")
	}
	cmd := exec.Command(leaselabBinary(t), "run", "-store", "etcd", "-dsn", "127.0.0.1:1", "--", "true")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("run SIGTERMed while connecting: %v, want status 0; stderr %q", err, errb.String())
		}
		if !strings.Contains(errb.String(), "signalled while connecting") {
			t.Errorf("stderr %q: want it to say it was signalled while connecting", errb.String())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("run did not end within 3 s of SIGTERM while connecting")
	}
}

// startPiped starts cmd, closes this process's end w of the pipe its
// output goes to, and returns the channel its exit comes on; the test's
// end kills it.
func startPiped(t *testing.T, cmd *exec.Cmd, w *os.File) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return exited
}

// The harness's members run in process groups of their own, not the
// harness's: a process group orphaned with a stopped member is sent SIGHUP
// and SIGCONT by the kernel, and a member that took the SIGHUP for a
// shutdown exited under a torture run whose shell had exited (a probe).
func TestClusterMembersHaveTheirOwnGroups(t *testing.T) {
	c := newCluster(leaselabBinary(t), "", "reference", scaled, t.TempDir())
	defer c.shutdown()
	own := syscall.Getpgrp()
	for range 2 {
		k, err := c.spawn(0)
		if err != nil {
			t.Fatal(err)
		}
		pid := k.cmd.Process.Pid
		pg, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		if pg == own || pg != pid {
			t.Errorf("member %d is in process group %d (the harness's: %d), want its own", pid, pg, own)
		}
	}
}

// Flags that meant nothing, or a silent wait, are refused (a probe):
// -restart with no command (with -- or without), a -start-at far ahead.
func TestRunRefusesEmptyCommandAndFarStart(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "leader.lock")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-restart"}, "-restart restarts the command given after --, and there is none"},
		{[]string{"-restart", "--"}, "-restart restarts the command given after --, and there is none"},
		{[]string{"-start-at", "99999999999999999", "--", "true"}, "at most an hour"},
	} {
		code, errOut := runBinary(t, append([]string{"run", "-path", lock}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("run %v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(lock)); len(ents) != 0 {
		t.Errorf("refused runs left %d files", len(ents))
	}
	// A crash point in the environment is said, not silent.
	cmd := exec.Command(leaselabBinary(t), "run", "-path", lock, "-lease", "1s", "-renew", "300ms", "-watch", "300ms", "--", "true")
	cmd.Env = append(os.Environ(), "LEASELAB_CRASH_AFTER=link:1000")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "LEASELAB_CRASH_AFTER=link:1000: this process kills itself") {
		t.Errorf("run with LEASELAB_CRASH_AFTER said nothing of it:\n%s", out)
	}
}

// A row no leaselab wrote (SQLite keeps the text an operator gave an
// integer column) is waited out and taken over, and its warning is said
// once, not at every poll (a probe: a scan error and exit status 2, and
// before that, for a foreign integer, one warning a watch interval).
func TestRunForeignRowWarnedOnce(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "leases.db")
	args := []string{"run", "-store", "sqlite", "-dsn", dsn, "-lease", "1s", "-renew", "300ms", "-watch", "300ms", "--", "true"}
	if code, errOut := runBinary(t, args...); code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", code, errOut)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE leaselab_leases SET holder = 'abc', expires_ms = 9000000000000000`); err != nil {
		t.Fatal(err)
	}
	code, errOut := runBinary(t, args...)
	if code != 0 || strings.Count(errOut, "warning:") != 1 || !strings.Contains(errOut, `holder is the text "abc"`) {
		t.Errorf("run over a foreign row: exit %d, stderr %q; want 0 and one warning naming the holder's text", code, errOut)
	}
}

// A run whose command exits ends without a signal, and its log says so:
// "Stopping", not "Received shutdown signal" (a probe).
func TestRunCommandExitSaysNoSignal(t *testing.T) {
	cmd := exec.Command(leaselabBinary(t), "run", "-path", filepath.Join(t.TempDir(), "leader.lock"), "--", "true")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Stopping, releasing lease") || !strings.Contains(string(out), "Lease released") || strings.Contains(string(out), "signal") {
		t.Errorf("run -- true: %v, output:\n%s\nwant a release after \"Stopping, releasing lease\" and no signal named", err, out)
	}
}
