package servertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Postgres's fixed superuser and password: the cluster listens on
// loopback only, for the length of a test.
const (
	PostgresUser     = "postgres"
	PostgresPassword = "leaselab"
)

// DSN is a PostgreSQL server's connection URL for PostgresUser with
// PostgresPassword.
func (s *Server) DSN() string { return s.DSNWithPassword(s.Password) }

// DSNWithPassword is DSN with another password (a wrong one, say).
func (s *Server) DSNWithPassword(password string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable&connect_timeout=5", PostgresUser, password, s.Addr)
}

// Postgres starts a PostgreSQL server on a free loopback port, with
// password authentication (PostgresUser, PostgresPassword; see DSN) on
// TCP and no Unix socket. It is killed, and its directory removed, when
// the test ends.
func Postgres(t testing.TB) *Server {
	t.Helper()
	pg := postgresBin(t)
	tmpl, cred := postgresTemplate(t, pg)
	dir := serverDir(t, "leaselab-pg-", cred)
	data := filepath.Join(dir, "data")
	if err := copyDir(tmpl, data, cred); err != nil {
		t.Fatalf("servertest: copying the template cluster: %v", err)
	}
	var s *Server
	startOnFreePort(t, func() error {
		port := FreePort(t)
		s = &Server{Name: "postgres", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, Password: PostgresPassword}
		args := []string{"-D", data, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
			// A throwaway cluster: durability buys nothing here.
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "shared_buffers=16MB", "-c", "max_connections=200",
			// Its dynamic shared memory in files of its data directory,
			// removed with it: the default (POSIX, in /dev/shm) outlives
			// a server killed as these are, a few MB per server.
			"-c", "dynamic_shared_memory_type=mmap"}
		return launch(t, s, pg.postgres, args, cred, func() error {
			if !strings.Contains(s.runLog(), "ready to accept connections") {
				return errors.New("not ready yet")
			}
			c, err := net.DialTimeout("tcp", s.Addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
	})
	return s
}

type pgBins struct{ postgres, initdb, version string }

// postgresBin finds postgres and initdb of one installation: Debian's
// /usr/lib/postgresql/VERSION/bin (the highest version), else PATH.
func postgresBin(t testing.TB) pgBins {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestV := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err == nil && v > bestV && isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "initdb")) {
			best, bestV = d, v
		}
	}
	if best != "" {
		return pgBins{filepath.Join(best, "postgres"), filepath.Join(best, "initdb"), strconv.Itoa(bestV)}
	}
	p, err1 := exec.LookPath("postgres")
	i, err2 := exec.LookPath("initdb")
	if err1 != nil || err2 != nil {
		missing(t, "PostgreSQL (postgres and initdb)", "postgresql")
	}
	return pgBins{p, i, "path"}
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// unprivileged returns the credentials PostgreSQL runs with: nil (the
// test's own) unless the tests run as root, which postgres refuses; then
// the user nobody's.
func unprivileged(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := uint32(65534), uint32(65534) // nobody, nogroup
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Split(line, ":")
			if len(f) > 3 && f[0] == "nobody" {
				u, err1 := strconv.ParseUint(f[2], 10, 32)
				g, err2 := strconv.ParseUint(f[3], 10, 32)
				if err1 == nil && err2 == nil {
					uid, gid = uint32(u), uint32(g)
				}
			}
		}
	}
	return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
}

// serverDir returns a directory the server's user owns: t.TempDir()
// normally; as root, a directory under the system's temporary directory
// (t.TempDir's parents are root's, mode 0700, and nobody cannot enter
// them), chowned to nobody and removed when the test ends.
func serverDir(t testing.TB, prefix string, cred *syscall.Credential) string {
	t.Helper()
	if cred == nil {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		t.Fatalf("servertest: %v", err)
	}
	return dir
}

var templates sync.Map // template path -> *template

type template struct {
	once sync.Once
	err  error
}

// postgresTemplate returns a cluster made by initdb, to be copied for each
// server. initdb takes about 2 s, so the cluster is made once and kept, as
// a cache, under the system's temporary directory, named after the
// PostgreSQL version and the user it is for; concurrent test binaries each
// make one and the first rename wins.
func postgresTemplate(t testing.TB, pg pgBins) (string, *syscall.Credential) {
	t.Helper()
	cred := unprivileged(t)
	owner := os.Geteuid()
	if cred != nil {
		owner = int(cred.Uid)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("leaselab-pgtemplate-%s-%d", pg.version, owner))
	v, _ := templates.LoadOrStore(path, &template{})
	tm := v.(*template)
	tm.once.Do(func() { tm.err = makeTemplate(path, pg, cred) })
	if tm.err != nil {
		t.Fatalf("servertest: initdb: %v", tm.err)
	}
	return path, cred
}

func makeTemplate(path string, pg pgBins, cred *syscall.Credential) error {
	if _, err := os.Stat(filepath.Join(path, "PG_VERSION")); err == nil {
		return nil
	}
	work, err := os.MkdirTemp(os.TempDir(), "leaselab-initdb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if cred != nil {
		if err := os.Chown(work, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	pwfile := filepath.Join(work, "pw")
	if err := os.WriteFile(pwfile, []byte(PostgresPassword+"\n"), 0o644); err != nil {
		return err
	}
	data := filepath.Join(work, "data")
	cmd := exec.Command(pg.initdb, "-D", data, "-U", PostgresUser, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C",
		"--no-sync", "--no-instructions")
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if err := os.Rename(data, path); err != nil {
		if _, serr := os.Stat(filepath.Join(path, "PG_VERSION")); serr == nil {
			return nil // another test binary made it first
		}
		return err
	}
	return nil
}

// copyDir copies a cluster directory (regular files and directories only,
// as initdb makes them), keeping modes, owned by cred's user if set.
func copyDir(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(to, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			var b []byte
			if b, err = os.ReadFile(p); err == nil {
				err = os.WriteFile(to, b, fi.Mode().Perm())
			}
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
		if err == nil && cred != nil {
			err = os.Lchown(to, int(cred.Uid), int(cred.Gid))
		}
		return err
	})
}
