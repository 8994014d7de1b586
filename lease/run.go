package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
)

// RunOptions are [Run]'s settings beyond the Config. The zero value runs
// on the real OS as this process, logging nothing.
type RunOptions struct {
	// Proc is the process the elector runs as: its clocks, its waits, its
	// log. nil: the real OS ([NewOSProcOptions] with Log and ID below);
	// the simulator passes its own. Run never calls its Exit or
	// AwaitShutdown.
	Proc Proc
	// Log receives the elector's log lines, in the post's format, when
	// Proc is nil. nil: none.
	Log io.Writer
	// ID is the holder id written in the lease when Proc is nil (0: the
	// process id). With a Proc, the holder id is its PID, and ID must be 0.
	ID int
	// Dir is the directory whose changes a watcher waits for (inotify,
	// when the Proc is a [Notifier]) besides the instant the lease it saw
	// can expire, instead of polling every Config.WatchInterval. "": the
	// lock file's directory for a *[VersionedFile] store; for any other
	// store, none (watchers poll, or wait on the store's notices when it
	// is a [ChangeFeed]). Config.Poll overrides it.
	Dir string
}

// Run is lease-based leader election for a Go service: the [Reference]
// algorithm, as this process, over s, until ctx ends. It is shaped after
// client-go's leaderelection.RunOrDie:
//
//   - cfg.Callbacks.OnStartedLeading is called when this process becomes
//     leader: on the real OS (RunOptions.Proc nil) on a goroutine of its
//     own, as client-go calls it, so that it may block until its context
//     is done (OnStoppedLeading is called once it has returned: it must
//     return when its context is done, and not wait for OnStoppedLeading);
//     with a Proc, on Run's goroutine, where it must not block (a
//     simulated process has no goroutines of its own: start the work
//     with [Proc.Go]). Its context carries the term: [TermOf] gives the
//     fencing epoch to pass with every action on a resource that can
//     reject stale epochs. That context is done when leadership ends: at
//     the local deadline (RenewDeadline after the last successful
//     renewal started) if renewals keep failing, as soon as another
//     process's write replaces the lease, and the instant ctx ends.
//     OnStoppedLeading follows. Terms come and go: a process that loses
//     the lease watches it again and may lead again, with a new epoch.
//   - When ctx ends, a leader's context is done at once; Run then
//     calls OnStoppedLeading (which may wait for the work to stop: the
//     release comes after it returns), releases the lease by compare-and-set
//     (so only if it is still this process's, and only before the local
//     deadline; a waiting process takes over at once) and returns. A
//     watcher returns as soon as its wait ends (at once on both runtimes,
//     which are [ContextWaiter]s; a store call in flight is finished
//     first: give stores a timeout). Once Run has returned it makes no
//     more store calls and calls no callback.
//   - It returns nil after ctx has ended, and an error, having done
//     nothing, for a config it cannot run (see [Config.ValidateDeadline]),
//     a missing store or context, or a file store whose path names no
//     file in a directory (see [CheckLockPath]) or that has no FS. It never calls os.Exit and installs
//     no signal handler: map signals onto ctx yourself
//     (signal.NotifyContext).
//
// Store errors (an unreachable server, a full disk) do not end Run: it
// retries, reports each to cfg.Callbacks.OnError, and a leader that
// cannot renew steps down at its local deadline.
//
// The stores: [NewFileStore] (a lock file; watchers are notified of
// changes), [FlockRegister] (a lock file under flock(2)), and
// lease/redisstore, lease/etcdstore, lease/sqlstore (give them a call
// timeout well under cfg.RenewInterval); over all but the first,
// watchers poll every cfg.WatchInterval, unless the store is a
// [ChangeFeed]: then they wait for its notices, the expiry of the lease
// they saw, or a watch interval, whichever comes first.
// The simulator runs this same function as its reference variant (its
// process's main maps SIGTERM onto ending ctx), so every property the
// checker holds the reference to is a property of Run.
func Run(ctx context.Context, s Store, cfg Config, o RunOptions) error {
	switch {
	case ctx == nil:
		return errors.New("lease.Run: nil context")
	case s == nil || isNilPointer(s):
		return errors.New("lease.Run: nil store")
	case o.ID < 0:
		return fmt.Errorf("lease.Run: holder id %d: want a positive id (0: the process id)", o.ID)
	case o.Proc != nil && o.ID != 0:
		return errors.New("lease.Run: RunOptions.ID is for the real OS runtime; a Proc's holder id is its PID")
	}
	if err := cfg.ValidateDeadline(); err != nil {
		return fmt.Errorf("lease.Run: %w", err)
	}
	if path, ok := lockPathOf(s); ok {
		if err := CheckLockPath(path); err != nil {
			return fmt.Errorf("lease.Run: %w", err)
		}
		// A store literal without its FS (FlockRegister{Path: p}) was a
		// nil pointer's panic at the first system call (a probe).
		if fsys := fsOf(s); fsys == nil || isNilPointer(fsys) {
			return fmt.Errorf("lease.Run: %T store for %q has no FS: set FS to lease.OSFS{} (or use lease.NewFileStore)", s, path)
		}
	}
	p := o.Proc
	if p == nil {
		log := o.Log
		if log == nil {
			log = io.Discard
		}
		if f := cfg.Callbacks.OnStartedLeading; f != nil {
			// Blocking there, client-go's idiom, held up the renewals:
			// the term ended at its local deadline and began again at a
			// new epoch, every 0.93 s of a 1 s lease (a probe). And
			// OnStoppedLeading waits for it to return, so that work it
			// starts (a WaitGroup's Add in it) is seen by OnStoppedLeading,
			// and the release still comes after the work (a review).
			var mu sync.Mutex
			var running chan struct{}
			stopped := cfg.Callbacks.OnStoppedLeading
			cfg.Callbacks.OnStartedLeading = func(ctx context.Context) {
				done := make(chan struct{})
				mu.Lock()
				running = done
				mu.Unlock()
				go func() {
					defer close(done)
					f(ctx)
				}()
			}
			cfg.Callbacks.OnStoppedLeading = func() {
				mu.Lock()
				done := running
				running = nil
				mu.Unlock()
				if done != nil {
					<-done // its context is done: a callback that heeds it returns
				}
				if stopped != nil {
					stopped()
				}
			}
		}
		op := NewOSProcOptions(OSProcOptions{Out: log, Err: log, ID: o.ID}).(*osProc)
		defer op.note.close()           // the inotify descriptors and readers of this election
		defer op.flushLog(logFlushWait) // the election's last lines
		p = op
	}
	dir := o.Dir
	if vf, ok := s.(*VersionedFile); ok && dir == "" {
		dir = filepath.Dir(vf.Path)
	}
	newReference(p, s, dir, cfg).elect(ctx)
	return nil
}

// NewFileStore returns the reference's file store ([VersionedFile]) on
// the real OS for the lock file at path: versions live at path.N beside
// it (the lock path itself is never written), with the machine's boot id
// where it has one so that epochs survive power losses. Every process
// electing over one lease uses the same path; its directory must exist
// and be writable by them, and by no other user. A relative path is
// taken from the working directory now (absLockPath).
func NewFileStore(path string) *VersionedFile {
	p := &osProc{pid: os.Getpid()}
	return &VersionedFile{FS: OSFS{}, Path: absLockPath(path), PID: int64(p.pid), Boot: bootOf(p), TempBase: RandomTempBase()}
}

// absLockPath returns a relative lock path joined to the working
// directory as the kernel has it (getcwd(2), which names no symbolic
// link, so that a leading ".." means what it meant), so that the store
// names the same files after the process changes its working directory:
// a leader over NewFileStore("job.lease") whose process (a library in
// it) called os.Chdir renewed its term in the new directory, and
// another process over the old one took over beside it, both contexts
// live (a probe, helper-112). A path CheckLockPath refuses, or
// a working directory that cannot be read, is left as it is.
func absLockPath(path string) string {
	if filepath.IsAbs(path) || CheckLockPath(path) != nil {
		return path
	}
	wd, err := syscall.Getwd()
	if err != nil || !filepath.IsAbs(wd) {
		return path
	}
	return filepath.Join(wd, path)
}

// CheckLockPath refuses a lock path that names no file in a directory:
// empty, ending in a path separator, or whose last element is "." or "..".
// The file stores derive their names by appending to the path (PATH.N,
// PATH.boot.K) and find them by listing its directory for its base name,
// so over such a path they never find what they write (until 2026-12-05,
// Run over NewFileStore("") or NewFileStore("/some/dir/") created boot
// records for ever, ignoring its context). [Run] and the file stores'
// operations return its error.
func CheckLockPath(path string) error {
	switch {
	case path == "":
		return errors.New("empty lock path: want the path of a file in an existing directory")
	case os.IsPathSeparator(path[len(path)-1]):
		return fmt.Errorf("lock path %q ends in a path separator: want the path of a file in an existing directory, not a directory", path)
	}
	if b := filepath.Base(path); b == "." || b == ".." {
		return fmt.Errorf("lock path %q ends in %q: want the path of a file in an existing directory, not a directory", path, b)
	}
	// The stores take a name's directory by its spelling (filepath.Dir
	// drops "x/.."), the kernel by walking it (through x, a symbolic link
	// perhaps): the versions were linked in one directory and listed in
	// another, and nobody ever led (a probe: -path current/../shared/lock
	// with current a link).
	if dotdots(path) != dotdots(filepath.Clean(path)) {
		return fmt.Errorf("lock path %q has a \"..\" after a directory's name, which the kernel resolves through symbolic links and the lock's own names do not: give the path without it", path)
	}
	if suffix, ok := derivedSuffix(filepath.Base(path)); ok {
		return fmt.Errorf("lock path %q ends in %q, as the names another lock of its directory derives from its own do (PATH.N, PATH.boot.K, PATH.tmp.ID.SEQ): the two leases would take each other's files for their own; give it a name that does not", path, suffix)
	}
	return nil
}

// derivedSuffix reports whether base ends as a name the file stores
// derive from another lock's name in its directory does (.N, .boot,
// .boot.K, .tmp.ID, .tmp.ID.SEQ, in decimal), and with what. Such a lock
// and the one whose name it extends share names: the one's sweep removed
// the other's versions as stale temporary files (lease P and P.tmp.5: two
// leaders of P.tmp.5, each renewing for good), or counted them as its
// boot records (P and P.boot: P.boot's leader stepped down, P's epochs
// jumped by two billion; a probe, 2026-12-07).
func derivedSuffix(base string) (string, bool) {
	parts := strings.Split(base, ".")
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	n := len(parts)
	for k := 1; k <= 3 && k < n; k++ { // the last k parts, after a non-empty rest
		tail := parts[n-k:]
		if strings.Join(parts[:n-k], ".") == "" {
			break
		}
		var match bool
		switch k {
		case 1:
			match = digits(tail[0]) || tail[0] == "boot"
		case 2:
			match = (tail[0] == "boot" || tail[0] == "tmp") && digits(tail[1])
		case 3:
			match = tail[0] == "tmp" && digits(tail[1]) && digits(tail[2])
		}
		if match {
			return "." + strings.Join(tail, "."), true
		}
	}
	return "", false
}

// dotdots counts the ".." elements of path.
func dotdots(path string) int {
	n := 0
	for _, e := range strings.Split(filepath.ToSlash(path), "/") {
		if e == ".." {
			n++
		}
	}
	return n
}

// lockPathOf returns the lock path of a file store.
func lockPathOf(s Store) (string, bool) {
	switch s := s.(type) {
	case *VersionedFile:
		return s.Path, true
	case *EpochFile:
		return s.Path, true
	case FlockRegister:
		return s.Path, true
	case *FlockRegister:
		return s.Path, true
	}
	return "", false
}

// fsOf returns the FS of a file store (one lockPathOf knows).
func fsOf(s Store) FS {
	switch s := s.(type) {
	case *VersionedFile:
		return s.FS
	case *EpochFile:
		return s.FS
	case FlockRegister:
		return s.FS
	case *FlockRegister:
		return s.FS
	}
	return nil
}

// isNilPointer reports whether v holds a nil pointer (a typed nil: a
// store variable declared and never set), which a nil check misses.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
