package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// leaselab run refuses, at start and with exit status 2, every lock path
// it cannot use safely, and writes nothing anywhere.
func TestRunRefusesBadLockPath(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "link.lock"))
	os.Mkdir(filepath.Join(dir, "dir.lock"), 0o755)
	syscall.Mkfifo(filepath.Join(dir, "fifo.lock"), 0o644)
	os.WriteFile(filepath.Join(dir, "notdir"), nil, 0o644)
	cases := map[string]string{
		filepath.Join(dir, "missing", "a.lock"): "does not exist",
		filepath.Join(dir, "notdir", "a.lock"):  "not a directory",
		filepath.Join(dir, "link.lock"):         "symbolic link",
		filepath.Join(dir, "dir.lock"):          "is a directory",
		filepath.Join(dir, "fifo.lock"):         "not a regular file",
		// Its derived names (PATH.tmp.ID.SEQ) would pass NAME_MAX.
		filepath.Join(dir, strings.Repeat("L", 212)): "at most 211",
		// A directory access(2) passes for root where no file can be made.
		"/proc/leaselab-test.lock": "cannot create files",
		// Names no file: the store's listing never saw its boot record,
		// and it linked temporary files for ever.
		filepath.Join(dir, "new.lock") + "/": "ends in a path separator",
		dir + "/new.lock/..":                 "ends in \"..\"",
		// A ".." after a name (a symbolic link, perhaps): linked in one
		// directory, listed in another, nobody ever led.
		dir + "/sub/../new.lock": "has a \"..\" after a directory's name",
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other.lock")
		os.WriteFile(other, nil, 0o644)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases[other] = "owned by uid 65534"
	} else {
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		cases[filepath.Join(ro, "a.lock")] = "cannot create files"
	}
	before := listDir(t, dir)
	for path, want := range cases {
		var out, errb bytes.Buffer
		code := run([]string{"run", "-path", path, "-lease", "1s", "-renew", "300ms", "-watch", "300ms"}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("run -path %s: exit %d, stderr %q; want 2 and %q", path, code, errb.String(), want)
		}
	}
	if after := listDir(t, dir); after != before {
		t.Errorf("refused runs changed the directory:\n%s\nthen\n%s", before, after)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("symlink target rewritten: %q", b)
	}
}

func listDir(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + " " + fi.Mode().String() + "\n")
		}
		return nil
	})
	return b.String()
}

// A lock path that a live process of the other file store uses is refused
// at start: the reference's versions and flock's lock do not exclude each
// other (a probe ran both, and a seed, on one path: three commands at
// once). A flock leader is seen by its lock, a reference by a version it
// wrote within two leases; a lock nobody holds and old versions are not
// refused.
func TestRunRefusesMixedStores(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.lock")
	if err := checkOneStore("reference", path, 9*time.Second); err != nil {
		t.Errorf("no lock file: %v", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := checkOneStore("reference", path, 9*time.Second); err != nil {
		t.Errorf("a lock file nobody holds: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// A flock(1) wrapper's lock on the very file (empty: no flock record)
	// is no flock store (a review found it refused).
	if err := checkOneStore("reference", path, 9*time.Second); err != nil {
		t.Errorf("a lock file held, empty: %v", err)
	}
	if _, err := f.WriteString(`{"processId":4242,"epoch":3}`); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", "-path", path, "-lease", "1s", "-renew", "300ms", "-watch", "300ms")
	if code != 2 || !strings.Contains(stderr, "a flock leader holds this lock file") {
		t.Errorf("the reference over a held flock lock: exit %d, stderr %q; want 2 and the flock leader named", code, stderr)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)

	// Files named as versions that hold no version record (dated files
	// beside the lock) are no reference.
	os.WriteFile(path+".20261205", []byte("a log"), 0o644)
	if err := checkOneStore("flock", path, 9*time.Second); err != nil {
		t.Errorf("a dated file beside the lock: %v", err)
	}
	version := path + ".12"
	if err := os.WriteFile(version, []byte(`{"processId":4242,"epoch":3,"leaseMs":9000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("run", "-store", "flock", "-path", path, "-lease", "1s", "-renew", "300ms", "-watch", "300ms")
	if code != 2 || !strings.Contains(stderr, "the reference (-store file) wrote version job.lock.12") {
		t.Errorf("flock beside a fresh reference version: exit %d, stderr %q; want 2 and the version named", code, stderr)
	}
	for _, name := range []string{path + ".boot.1", path + ".tmp.5.1"} {
		os.WriteFile(name, nil, 0o644)
	}
	old := time.Now().Add(-3 * time.Second)
	os.Chtimes(version, old, old)
	if err := checkOneStore("flock", path, time.Second); err != nil {
		t.Errorf("versions older than two leases (and boot records, temporary files): %v", err)
	}
}

// A lease's mark (LEASELAB_SINGLETON, which a new leader kills by) names
// what the lease is, not how it is spelt: one lock file however reached,
// two files of one name in two directories two leases (a review: one
// relative SQLite DSN in two directories, two leases, and each new leader
// killed the other's command); no mark for a database in memory.
func TestSingletonIdentity(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	id := fileSingleton(filepath.Join(a, "job.lock"), "file")
	if id == "" {
		t.Fatal("no mark for a lock file")
	}
	if got := fileSingleton(filepath.Join(link, "job.lock"), "file"); got != id {
		t.Errorf("one lock file through a symbolic link: %s, want %s", got, id)
	}
	if got := fileSingleton(filepath.Join(a, ".", "x", "..", "job.lock"), "file"); got != id {
		t.Errorf("one lock file spelt unclean: %s, want %s", got, id)
	}
	if got := fileSingleton(filepath.Join(b, "job.lock"), "file"); got == id {
		t.Error("two directories' job.lock share a mark")
	}
	if got := fileSingleton(filepath.Join(a, "other.lock"), "file"); got == id {
		t.Error("two lock files of one directory share a mark")
	}
	sa, sb := serverSingleton("sqlite", filepath.Join(a, "leases.db"), "leader"), serverSingleton("sqlite", "file:"+filepath.Join(b, "leases.db")+"?_pragma=busy_timeout(5000)", "leader")
	if sa == "" || sb == "" || sa == sb {
		t.Errorf("two SQLite databases: marks %q and %q", sa, sb)
	}
	if got := serverSingleton("sqlite", "file:"+filepath.Join(a, "leases.db"), "leader"); got != sa {
		t.Errorf("one SQLite database as a path and as a URI: %s, want %s", got, sa)
	}
	if got := serverSingleton("sqlite", filepath.Join(a, "leases.db"), "other"); got == sa {
		t.Error("two leases of one SQLite database share a mark")
	}
	for _, mem := range []string{":memory:", "file::memory:?cache=shared", "file:x?mode=memory"} {
		if got := serverSingleton("sqlite", mem, "leader"); got != "" {
			t.Errorf("SQLite %q: mark %q, want none", mem, got)
		}
	}
	if serverSingleton("redis", "127.0.0.1:6379", "leader") == serverSingleton("redis", "127.0.0.1:6380", "leader") {
		t.Error("two Redis servers share a mark")
	}
}

// One server's lease spelt in different ways has one mark; other servers,
// databases and leases have others (a probe: 127.0.0.1:16399 and
// redis://localhost:16399/0 had two, and an orphan of one ran beside the
// other's command).
func TestServerKeySpellings(t *testing.T) {
	same := [][3]string{
		{"redis", "127.0.0.1:16399", "redis://localhost:16399/0"},
		{"redis", "localhost:6379", "redis://127.0.0.1"},
		{"redis", "redis://user:secret@[::1]:16399", "[0:0::1]:16399"},
		{"etcd", "127.0.0.1:2379,127.0.0.2:2379", "http://127.0.0.2:2379,localhost"},
		{"postgres", "postgres://job@localhost:5432/leases", "host=127.0.0.1 port=5432 dbname=leases user=job"},
	}
	for _, c := range same {
		if a, b := serverSingleton(c[0], c[1], "leader"), serverSingleton(c[0], c[2], "leader"); a != b {
			t.Errorf("%s %q and %q: marks %s and %s, want one", c[0], c[1], c[2], a, b)
		}
	}
	other := [][3]string{
		{"redis", "127.0.0.1:16399", "127.0.0.1:16400"},
		{"redis", "127.0.0.1:16399", "127.0.0.2:16399"}, // (two servers on loopback: not merged)
		{"etcd", "unix:///run/a.sock", "unix:///run/b.sock"},
		{"redis", "redis://localhost:16399/0", "redis://localhost:16399/1"},
		{"etcd", "127.0.0.1:2379", "127.0.0.1:2379,127.0.0.1:22379"},
		{"postgres", "postgres://job@localhost/leases", "postgres://job@localhost/other"},
		{"postgres", "postgres://job@localhost/leases", "postgres://boss@localhost/leases"},
		{"postgres", "postgres://job@localhost/leases", "postgres://job@localhost/leases?search_path=other"},
	}
	for _, c := range other {
		if a, b := serverSingleton(c[0], c[1], "leader"), serverSingleton(c[0], c[2], "leader"); a == b {
			t.Errorf("%s %q and %q share a mark", c[0], c[1], c[2])
		}
	}
	if serverSingleton("redis", "127.0.0.1:6379", "leader") == serverSingleton("redis", "127.0.0.1:6379", "other") {
		t.Error("two leases of one Redis server share a mark")
	}
}

// A seed variant and the reference (or flock) on one lock path do not
// exclude each other either: each is refused beside a live process of the
// other (a deployment probe, 2026-12-07: a reference runner and a -variant
// seed runner both led, for good). A seed record left long ago, or whose
// lease has passed, is not refused.
func TestRunRefusesSeedBesideOtherStores(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job.lock")
	live := fmt.Sprintf(`{"processId":4242,"leaseUntil":%d}`, time.Now().Unix()+9)
	if err := os.WriteFile(path, []byte(live), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"reference", "flock"} {
		if err := checkOneStore(v, path, time.Second); err == nil || !strings.Contains(err.Error(), "a seed variant's record") {
			t.Errorf("%s beside a live seed: %v; want the seed named", v, err)
		}
	}
	if err := checkOneStore("seed", path, time.Second); err != nil {
		t.Errorf("a seed beside a seed: %v", err)
	}
	old := time.Now().Add(-3 * time.Second)
	os.Chtimes(path, old, old)
	if err := checkOneStore("reference", path, time.Second); err != nil {
		t.Errorf("a seed record older than two leases: %v", err)
	}
	os.WriteFile(path, []byte(fmt.Sprintf(`{"processId":4242,"leaseUntil":%d}`, time.Now().Unix()-5)), 0o644)
	if err := checkOneStore("reference", path, 9*time.Second); err != nil {
		t.Errorf("a seed record whose lease has passed: %v", err)
	}
	os.Remove(path)
	if err := os.WriteFile(path+".12", []byte(`{"processId":4242,"epoch":3,"leaseMs":9000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"seed", "seed-naive", "seed-rename", "seed-link"} {
		if err := checkOneStore(v, path, time.Second); err == nil || !strings.Contains(err.Error(), "the reference (-store file) wrote version job.lock.12") {
			t.Errorf("%s beside a fresh reference version: %v; want the version named", v, err)
		}
	}
	if t.Failed() {
		return // (run would lead, for good)
	}
	// And through run: refused at start, exit 2.
	code, _, stderr := runCLI("run", "-variant", "seed", "-path", path, "-lease", "1s", "-renew", "300ms", "-watch", "300ms")
	if code != 2 || !strings.Contains(stderr, "-variant seed's record") {
		t.Errorf("run -variant seed beside a fresh reference version: exit %d, stderr %q", code, stderr)
	}
}
