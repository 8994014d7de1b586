package lease

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Hostile and damaged files on the real OS file system, each at the lock
// path, at the first version's name and at the name of the temporary file
// the process will use first: the reference variant, as a real runtime
// process, leads within a lease or two whatever is there, never writes
// through a symbolic link, never blocks on a FIFO, and logs what it could
// not read. (The simulator's TestReferenceHostileFiles covers the
// contents; this covers what only a real kernel has: FIFOs, symlinks,
// directories, permissions, sizes.)
func TestReferenceHostileFilesOS(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2 s of real time")
	}
	type place func(t *testing.T, dir, name string)
	file := func(content string) place {
		return func(t *testing.T, _, name string) {
			if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	outside := func(t *testing.T, dir string) string {
		p := outsidePath(dir)
		os.WriteFile(p, []byte(`{"processId":999,"epoch":1}`), 0o644)
		t.Cleanup(func() { os.Remove(p) })
		return p
	}
	cases := map[string]place{
		"empty":     file(""),
		"truncated": file(`{"processId":12`),
		"types":     file(`{"processId":"x","epoch":[]}`),
		"negative":  file(`{"processId":-5,"epoch":-1}`),
		"huge":      file(`{"processId":99999999999999999999999,"epoch":1e400}`),
		"binary":    file("\x00\xff\xfe\x01garbage\x00"),
		"3MB":       file(strings.Repeat("A", 3<<20)),
		"directory": func(t *testing.T, _, name string) { os.Mkdir(name, 0o755) },
		"fifo": func(t *testing.T, _, name string) {
			if err := syscall.Mkfifo(name, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"symlink": func(t *testing.T, dir, name string) { os.Symlink(outside(t, dir), name) },
		"dangling symlink": func(t *testing.T, dir, name string) {
			os.Symlink(filepath.Join(dir, "nowhere"), name)
		},
		"unreadable": func(t *testing.T, _, name string) {
			os.WriteFile(name, []byte(`{"processId":7,"epoch":1}`), 0)
		},
	}
	const pid = 6001
	cfg := Config{LeaseDuration: 400 * time.Millisecond, RenewInterval: 100 * time.Millisecond, WatchInterval: 5 * time.Second}
	v, _ := LookupVariant("reference")
	for name, put := range cases {
		for _, where := range []string{"lock", "version", "temp"} {
			t.Run(name+" at "+where, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				lock := filepath.Join(dir, "leader.lock")
				target := map[string]string{"lock": lock, "version": lock + ".1", "temp": lock + ".tmp.6001.1"}[where]
				put(t, dir, target)
				var log syncBuffer
				p := testProc(pid, &log)
				go Main(p, v, lock, cfg)
				defer p.doneOnce.Do(func() { close(p.done) })
				// The design leads within one lease (waiting out an
				// unreadable version); the deadline is what a loaded
				// machine running 36 of these at once may need.
				const within = 10 * time.Second
				deadline := time.Now().Add(within)
				for !strings.Contains(log.String(), "[LEADER] Acquired lease") && !strings.Contains(log.String(), "Takeover successful") {
					if time.Now().After(deadline) {
						t.Fatalf("no leader within %v with %s at %s:\n%s", within, name, where, log.String())
					}
					time.Sleep(5 * time.Millisecond)
				}
				readable := name == "dangling symlink" || name == "unreadable" && os.Geteuid() == 0 // root reads mode 000
				if where == "version" && !readable && !strings.Contains(log.String(), "Lease version 1 unreadable, waiting it out") {
					t.Errorf("no log line says version 1 is unreadable:\n%s", log.String())
				}
				if name == "symlink" {
					if b, _ := os.ReadFile(outsidePath(dir)); string(b) != `{"processId":999,"epoch":1}` {
						t.Errorf("wrote through the symlink: %q", b)
					}
				}
			})
		}
	}
}

// outsidePath is a file beside the test's lock directory, not in it.
func outsidePath(dir string) string {
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-outside")
}
