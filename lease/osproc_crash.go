package lease

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A crash point for the real runtime, as the simulator aims its SIGKILLs
// (sim.Fault.After): the process kills itself with SIGKILL right after its
// Nth system call of a kind, wherever that falls, so that a harness can
// aim at a window a few microseconds wide (between a renewal's
// open(O_TRUNC) and its write) that a signal sent from outside almost
// never hits. leaselab run takes it from LEASELAB_CRASH_AFTER (torture
// -crash-after); it is for testing.

// crashKinds are the call kinds a crash point may follow, named as the
// simulator names them.
var crashKinds = []string{"open", "open-excl", "open-trunc", "open-create", "write", "fsync", "close", "remove", "rename", "link"}

// ParseCrashPoint checks a crash point, "KIND:N" (N from 1), and returns
// its parts.
func ParseCrashPoint(s string) (kind string, n int, err error) {
	kind, num, ok := strings.Cut(s, ":")
	n, nerr := strconv.Atoi(num)
	if !ok || nerr != nil || n < 1 || !slices.Contains(crashKinds, kind) {
		return "", 0, fmt.Errorf("crash point %q: want KIND:N, N at least 1, KIND one of %s", s, strings.Join(crashKinds, ", "))
	}
	return kind, n, nil
}

// crashPoint counts calls of its kind and kills the process at the Nth.
type crashPoint struct {
	mu    sync.Mutex
	kind  string
	nth   int
	count int
}

func (c *crashPoint) after(kind string, flag int) {
	if c == nil {
		return
	}
	match := kind == c.kind
	if kind == "open" {
		switch c.kind {
		case "open":
			match = true
		case "open-excl":
			match = flag&O_EXCL != 0
		case "open-trunc":
			match = flag&O_TRUNC != 0
		case "open-create":
			match = flag&O_CREATE != 0 && flag&O_EXCL == 0
		}
	}
	if !match {
		return
	}
	c.mu.Lock()
	c.count++
	hit := c.count == c.nth
	c.mu.Unlock()
	if hit {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // (the signal is on its way)
	}
}

// Open implements FS, then the crash point.
func (p *osProc) Open(name string, flag int, perm fs.FileMode) (FD, error) {
	fd, err := p.OSFS.Open(name, flag, perm)
	if err == nil {
		p.crash.after("open", flag)
	}
	return fd, err
}

// Write implements FS, then the crash point.
func (p *osProc) Write(fd FD, b []byte) (int, error) {
	n, err := p.OSFS.Write(fd, b)
	p.crash.after("write", 0)
	return n, err
}

// Fsync implements FS, then the crash point.
func (p *osProc) Fsync(fd FD) error {
	err := p.OSFS.Fsync(fd)
	p.crash.after("fsync", 0)
	return err
}

// Close implements FS, then the crash point.
func (p *osProc) Close(fd FD) error {
	err := p.OSFS.Close(fd)
	p.crash.after("close", 0)
	return err
}

// Remove implements FS, then the crash point.
func (p *osProc) Remove(name string) error {
	err := p.OSFS.Remove(name)
	p.crash.after("remove", 0)
	return err
}

// Rename implements FS, then the crash point.
func (p *osProc) Rename(oldname, newname string) error {
	err := p.OSFS.Rename(oldname, newname)
	p.crash.after("rename", 0)
	return err
}

// Link implements FS, then the crash point.
func (p *osProc) Link(oldname, newname string) error {
	err := p.OSFS.Link(oldname, newname)
	p.crash.after("link", 0)
	return err
}
