package main

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/leaselab/leaselab/lease/servertest"
	"github.com/leaselab/leaselab/lease/sqlstore"
	"github.com/redis/go-redis/v9"
)

// A user the server lets read the lease but not write it is refused at
// start, exit status 2, saying so (a probe, 2026-12-05: a Redis ACL user
// with read rights alone, and a PostgreSQL role with SELECT alone, watched
// for ever, failing and retrying at every write).
func TestRunRefusesReadOnlyUser(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // (setup queries only: a loaded machine is slow)
	defer cancel()
	t.Run("redis", func(t *testing.T) {
		srv := servertest.Redis(t, "")
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer c.Close()
		if err := c.Do(ctx, "ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "+@read", "+@connection", "+@pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		refused(t, "redis", "redis://reader:pw@"+srv.Addr+"/0", "this user may not write the lease", "NOPERM")
		// One who may also run scripts passes the start's probe (its
		// release compares, and writes nothing); its first write is
		// refused, and it exits there (a review of the probe).
		if err := c.Do(ctx, "ACL", "SETUSER", "scripter", "on", ">pw", "~*", "&*", "+@read", "+@scripting", "+@connection", "+@pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		refused(t, "redis", "redis://scripter:pw@"+srv.Addr+"/0", "the store refuses this user's writes", "run this command")
		// One whose rights name the lease's keys one by one, without the
		// incarnation's (an ACL from before it): the start's release
		// passes, every read is refused; refused at start (a review: it
		// retried its reads for good).
		if err := c.Do(ctx, "ACL", "SETUSER", "exact", "on", ">pw", "~leaselab:{leader}", "~leaselab:{leader}:version", "~leaselab:{leader}:released", "~leaselab:{leader}:lease", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
		refused(t, "redis", "redis://exact:pw@"+srv.Addr+"/0", "this user may not read the lease", "NOPERM")
		// The same server, a user who may write: it starts (and is told to
		// stop at once).
		if err := c.Do(ctx, "ACL", "SETUSER", "writer", "on", ">pw", "~*", "&*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
		starts(t, "redis", "redis://writer:pw@"+srv.Addr+"/0")
	})
	t.Run("sqlite", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "leases.db")
		s, err := sqlstore.Open(ctx, sqlstore.SQLite, file, sqlstore.Options{Name: "leader"}) // makes the table
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		refused(t, "sqlite", "file:"+file+"?mode=ro", "this user may not write the lease", "readonly")
		starts(t, "sqlite", file)
	})
	t.Run("postgres", func(t *testing.T) {
		srv := servertest.Postgres(t)
		s, err := sqlstore.Open(ctx, sqlstore.Postgres, srv.DSN(), sqlstore.Options{Name: "leader"}) // makes the table
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		db, err := sql.Open("pgx", srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{"CREATE ROLE reader LOGIN PASSWORD 'pw'", "GRANT SELECT ON leaselab_leases TO reader"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(q, err)
			}
		}
		refused(t, "postgres", strings.Replace(srv.DSN(), servertest.PostgresUser+":"+srv.Password+"@", "reader:pw@", 1), "this user may not write the lease", "permission denied")
		// A role whose transactions are read-only (as on a hot standby,
		// or with default_transaction_read_only set for the server) may
		// write nothing, whatever its grants: refused at start too (a
		// probe, 2026-12-06: SQLSTATE 25006, retried for good).
		for _, q := range []string{"CREATE ROLE rotx LOGIN PASSWORD 'pw'", "GRANT ALL ON leaselab_leases TO rotx", "ALTER ROLE rotx SET default_transaction_read_only = on"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(q, err)
			}
		}
		refused(t, "postgres", strings.Replace(srv.DSN(), servertest.PostgresUser+":"+srv.Password+"@", "rotx:pw@", 1), "the server refuses every write", "25006")
		starts(t, "postgres", srv.DSN())
	})
}

// refused runs leaselab run over dsn (for at most 10 s: it used to watch
// for ever) and wants exit 2 with the refusal and why.
func refused(t *testing.T, store, dsn, refusal, why string) {
	t.Helper()
	a, out := startRun(t, "", []string{"-store", store, "-dsn", dsn, "-lease", "1s", "-renew", "300ms", "-watch", "300ms"})
	code := waitExit(t, a, store+" run as a user who may only read")
	if s := out.String(); code != 2 || !strings.Contains(s, refusal) || !strings.Contains(s, why) {
		t.Errorf("%s as a user who may only read: exit %d, output %q; want 2, %q and %q", store, code, s, refusal, why)
	}
}

// starts runs leaselab run over dsn as a real process until it leads.
func starts(t *testing.T, store, dsn string) {
	t.Helper()
	a, out := startRun(t, "", []string{"-store", store, "-dsn", dsn, "-name", "perm-test", "-lease", "1s", "-renew", "300ms", "-watch", "300ms"})
	poll(t, "a writer to lead", func() bool { return strings.Contains(out.String(), "Acquired lease") })
	a.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, a, "run after SIGTERM"); code != 0 {
		t.Errorf("%s writer: exit %d:\n%s", store, code, out)
	}
}

// A refused write ends run only where the start could not tell: a server
// store's user who may read but not write, before it has led. A file
// store's start checked the directory; a refusal later is a change of
// permissions that may pass, and the watcher goes on (a probe: a chmod
// for a second made a watcher exit 2, and nobody led after it).
func TestRefusedForGood(t *testing.T) {
	refused := &fs.PathError{Op: "open", Path: "/l/lock.tmp.1.1", Err: syscall.EACCES}
	for _, c := range []struct {
		refusals bool
		op       string
		err      error
		led      bool
		want     bool
	}{
		{true, "create", refused, false, true},
		{true, "takeover", refused, false, true},
		{false, "create", refused, false, false}, // a file store
		{false, "takeover", refused, false, false},
		{true, "create", refused, true, false}, // it has led: the permission worked once
		{true, "read", refused, false, false},
		{true, "create", syscall.EIO, false, false},
	} {
		if got := refusedForGood(c.refusals, c.op, c.err, c.led); got != c.want {
			t.Errorf("refusedForGood(%v, %s, %v, led %v) = %v, want %v", c.refusals, c.op, c.err, c.led, got, c.want)
		}
	}
}

// A Redis replica refuses every write (READONLY), yet the start's probe,
// which writes nothing, went through, and the process watched and retried
// its create for good (a probe, 2026-12-06): it is refused at start, exit
// status 2. A server that may evict the lease's keys (maxmemory with a
// policy other than noeviction) is warned of, and run goes on.
func TestRunRefusesRedisReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // (setup queries only: a loaded machine is slow)
	defer cancel()
	srv := servertest.Redis(t, "")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	if err := c.Do(ctx, "CONFIG", "SET", "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	a, out := startRun(t, "", []string{"-store", "redis", "-dsn", srv.Addr, "-name", "evict-test", "-lease", "1s", "-renew", "300ms", "-watch", "300ms"})
	poll(t, "a writer to lead", func() bool { return strings.Contains(out.String(), "Acquired lease") })
	a.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, a, "run after SIGTERM"); code != 0 || !strings.Contains(out.String(), "may evict the lease's keys") || !strings.Contains(out.String(), "allkeys-lru") {
		t.Errorf("over a server that may evict: exit %d, output %q; want 0 and a warning naming allkeys-lru", code, out)
	}
	// A replica of a master that is not there: ROLE says slave.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := c.Do(ctx2, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	refused(t, "redis", srv.Addr, "is a replica", "point -dsn at its master")
}

// A Redis Cluster node is refused at start, exit status 2, saying why
// (lease/redisstore.ErrCluster): until 2026-12-07 run went on, and over a
// node without the lease's slot every call failed for good (a probe).
func TestRunRefusesRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	srv := servertest.Redis(t, "", "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"))
	refused(t, "redis", srv.Addr, "Redis Cluster node", "one Redis, or a primary with replicas")
}

// A Redis or a PostgreSQL that is down when run starts (a machine's boot,
// a restart) is waited for as an etcd is, up to 5 s, not refused at once
// (until 2026-12-07 run exited 2 at the first refused connection, while
// over etcd it retried): run leads once the server is back; a server
// that stays down is refused after the 5 s, saying so.
func TestRunWaitsForItsServer(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	for _, store := range []string{"redis", "postgres"} {
		t.Run(store, func(t *testing.T) {
			var srv *servertest.Server
			var dsn string
			if store == "redis" {
				srv = servertest.Redis(t, "")
				dsn = srv.Addr
			} else {
				srv = servertest.Postgres(t)
				dsn = srv.DSN()
			}
			srv.Kill()
			a, out := startRun(t, "", []string{"-store", store, "-dsn", dsn, "-name", "wait-test"})
			time.Sleep(time.Second)
			srv.MustRestart(t)
			poll(t, "run to lead once its server is back", func() bool { return strings.Contains(out.String(), "Acquired lease") })
			a.Process.Signal(syscall.SIGTERM)
			if code := waitExit(t, a, "run after SIGTERM"); code != 0 {
				t.Errorf("run over a %s that came back: exit %d, output %q; want 0", store, code, out)
			}
			srv.Kill()
			start := time.Now()
			code, _, errOut := runCLI("run", "-store", store, "-dsn", dsn, "-name", "wait-test", "--", "true")
			if took := time.Since(start); code != 2 || !strings.Contains(errOut, "connection refused") || !strings.Contains(errOut, "gave up after 5s") || took < 5*time.Second {
				t.Errorf("run over a %s that stays down: exit %d after %v, stderr %q; want 2 after 5 s, saying the connection was refused for 5s", store, code, took, errOut)
			}
		})
	}
}

// A Redis master demoted mid-run (a Sentinel fail-over; here REPLICAOF
// an address nobody answers) refuses every write with READONLY and still
// serves reads. That is a passing state, not a misconfiguration: the
// leader's renewals fail, it steps down by its local deadline, and
// leader and watcher keep running, saying why, until the server takes
// writes again; then one of them leads. (Decided 2026-12-07: ending a
// watcher there for good, as a refusal at the start does, would turn a
// fail-over into an outage of every process.)
func TestRunSurvivesAServerMadeReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	srv := servertest.Redis(t, "")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	do := func(args ...any) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"-store", "redis", "-dsn", srv.Addr, "-name", "readonly-test", "-lease", "1s", "-renew", "300ms", "-watch", "300ms"}
	a, outA := startRun(t, "", flags)
	poll(t, "a to lead", func() bool { return strings.Contains(outA.String(), "Acquired lease") })
	b, outB := startRun(t, "", flags)
	poll(t, "b to watch", func() bool { return strings.Contains(outB.String(), "Lease held by") })
	do("REPLICAOF", "127.0.0.1", "1")
	poll(t, "the leader to step down", func() bool { return strings.Contains(outA.String(), "stepping down") })
	time.Sleep(2 * time.Second) // a lease and more without a writable server
	for _, r := range []struct {
		name string
		cmd  *exec.Cmd
		out  *runOutput
	}{{"leader", a, outA}, {"watcher", b, outB}} {
		if exited(r.cmd) {
			t.Fatalf("the %s exited while the server was read-only: %q", r.name, r.out)
		}
	}
	if !strings.Contains(outA.String(), "READONLY") {
		t.Errorf("the leader's output does not say why its renewals failed (READONLY): %q", outA)
	}
	acquired := strings.Count(outA.String(), "Acquired lease") + strings.Count(outB.String(), "Acquired lease") +
		strings.Count(outA.String(), "taking over") + strings.Count(outB.String(), "taking over")
	do("REPLICAOF", "NO", "ONE")
	poll(t, "someone to lead again", func() bool {
		n := strings.Count(outA.String(), "Acquired lease") + strings.Count(outB.String(), "Acquired lease") +
			strings.Count(outA.String(), "taking over") + strings.Count(outB.String(), "taking over")
		return n > acquired
	})
	for _, r := range []struct {
		cmd *exec.Cmd
		out *runOutput
	}{{a, outA}, {b, outB}} {
		r.cmd.Process.Signal(syscall.SIGTERM)
		if code := waitExit(t, r.cmd, "run after SIGTERM"); code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0; output %q", code, r.out)
		}
	}
}

// exited reports whether cmd's process has ended (a zombie not yet
// waited for has), as /proc tells.
func exited(cmd *exec.Cmd) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// redisErr is an error a Redis server answered (go-redis's redis.Error).
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// What run waits for at its start: a dial refused or reset (no server
// listening yet), a Redis loading its data, a PostgreSQL starting up;
// not a reset after the dial (a TLS-only port, a proxy with no backend: an
// answer), nor wrong credentials (a review: LOADING and 57P03 made run
// exit at once, a reset read made it wait 5 s).
func TestNotYet(t *testing.T) {
	dial := func(errno syscall.Errno) error {
		return fmt.Errorf("redisstore: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"dial refused", dial(syscall.ECONNREFUSED), true},
		{"dial reset", dial(syscall.ECONNRESET), true},
		{"unix socket not made yet", &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ENOENT)}, true},
		{"read reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false},
		{"redis loading", fmt.Errorf("redisstore: ping: %w", redisErr("LOADING Redis is loading the dataset in memory")), true},
		{"redis auth", redisErr("WRONGPASS invalid username-password pair or user is disabled."), false},
		{"postgres starting", fmt.Errorf("sqlstore: %w", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}), true},
		{"postgres auth", &pgconn.PgError{Code: "28P01"}, false},
		{"no such host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, false},
	} {
		if got := notYet(c.err); got != c.want {
			t.Errorf("notYet(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
