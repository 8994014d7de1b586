package leaselab_test

// Six plausible but wrong fixes of the post's program, as a user writes
// them when checking a fix (README, "Checking your own fix"), and what the
// checker says of each (a probe, helper-110). Each is the seed's program
// over a lock-file store with one change:
//
//   - probe-link-nosync: publish with a temporary file and link(2), renew
//     with rename(2), no fsync: a power loss tears the lock file, and the
//     empty-file wedge comes back.
//   - probe-link-fsync: the same with the temporary file and the directory
//     fsynced: the power-loss wedge is gone; the takeover still removes by
//     name, and two watchers can both lead, about one run in 5,000 with
//     SIGKILL (the catalogue's 1000-run search no longer finds it).
//   - probe-link-fsync-mono: the same with leaseUntil on CLOCK_MONOTONIC:
//     clock jumps no longer matter, a paused leader still renews over its
//     successor (which the catalogue's matcher, reading wall clocks, no
//     longer recognises), and after a reboot the watchers wait out the
//     last boot's uptime (found with -faults power since a power loss's
//     restart counts its monotonic clocks from its boot; before, they ran
//     on across it, and this fix passed).
//   - probe-empty-delete: a watcher that reads an empty lock file removes
//     it: it removes a live lease in the middle of its renewal (O_TRUNC,
//     then write), with no fault at all.
//   - probe-renew-retry: a failed renewal is tried again: a SIGKILL between
//     O_TRUNC and write still leaves the empty file.
//   - probe-proc-alive: a holder whose /proc/PID is gone is taken over at
//     once: the simulator has no /proc, so every holder looks dead (the
//     check finds two leaders at once, for its own reason; the real ones
//     are PID namespaces and PID reuse).

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
	"github.com/leaselab/leaselab/trace"
)

// fileStore is the seed's lock file with the fixes below switched on.
type fileStore struct {
	*lease.SeedFile
	p    lease.Proc
	path string

	sync        bool // fsync the temporary file before publishing it
	syncDir     bool // fsync the directory after publishing
	mono        bool // leaseUntil on CLOCK_MONOTONIC (nanoseconds), not the wall clock
	procAlive   bool // a holder whose /proc/PID is gone is dead: its lease is stale
	emptyDelete bool // an empty lock file is a crash's leftover: remove it
	renewRetry  int  // a failed in-place renewal is tried again this many times
	link        bool // publish with temp + link, renew with temp + rename
}

func (s *fileStore) temp() string { return s.path + ".tmp." + strconv.Itoa(s.p.PID()) }

func (s *fileStore) encode(holder int64, ttl time.Duration) (lease.Record, []byte) {
	if s.mono {
		until := int64(s.p.Mono() + ttl)
		return lease.Record{Holder: holder, Until: until}, fmt.Appendf(nil, "%d %d\n", holder, until)
	}
	rec := lease.Record{Holder: holder, Until: s.p.Now().Add(ttl).Unix()}
	return rec, rec.AppendJSON(nil)
}

// Read returns the record with Until in whole wall seconds, as the
// seed's watcher compares it, whatever clock the file holds.
func (s *fileStore) Read() (lease.Record, error) {
	b, err := s.p.ReadFile(s.path)
	if err != nil {
		return lease.Record{}, err
	}
	if len(b) == 0 && s.emptyDelete {
		// The fix: an empty lock file is what a crash between create and
		// write leaves; nobody will ever write it, so remove it and let
		// O_EXCL decide again.
		s.p.Remove(s.path)
		return lease.Record{}, &fs.PathError{Op: "read", Path: s.path, Err: syscall.ENOENT}
	}
	var rec lease.Record
	if s.mono {
		f := strings.Fields(string(b))
		if len(f) != 2 {
			return lease.Record{}, errors.New("unreadable")
		}
		h, err1 := strconv.ParseInt(f[0], 10, 64)
		u, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return lease.Record{}, errors.New("unreadable")
		}
		left := time.Duration(u) - s.p.Mono()
		// Whole seconds as the seed compares them: expired once left < 0.
		secs := int64(left / time.Second)
		if left < 0 {
			secs = -1
		}
		rec = lease.Record{Holder: h, Until: s.p.Now().Unix() + secs}
	} else {
		rec, err = lease.ParseRecord(b)
		if err != nil {
			return rec, err
		}
	}
	if s.procAlive && rec.Holder != int64(s.p.PID()) {
		if _, err := s.p.Stat("/proc/" + strconv.FormatInt(rec.Holder, 10)); errors.Is(err, fs.ErrNotExist) {
			rec.Until = 0 // its holder is dead: stale now, whatever it says
		}
	}
	return rec, nil
}

func (s *fileStore) writeTemp(b []byte) error {
	fd, err := s.p.Open(s.temp(), lease.O_WRONLY|lease.O_CREATE|lease.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = s.p.Write(fd, b)
	if err == nil && s.sync {
		err = s.p.Fsync(fd)
	}
	if err1 := s.p.Close(fd); err == nil {
		err = err1
	}
	return err
}

func (s *fileStore) dirSync() {
	if !s.syncDir {
		return
	}
	if fd, err := s.p.Open(filepath.Dir(s.path), lease.O_RDONLY, 0); err == nil {
		s.p.Fsync(fd)
		s.p.Close(fd)
	}
}

func (s *fileStore) publish(holder int64, ttl time.Duration, put func(string, string) error) (lease.Record, error) {
	rec, b := s.encode(holder, ttl)
	if err := s.writeTemp(b); err != nil {
		s.p.Remove(s.temp())
		return lease.Record{}, &lease.StepError{Step: "write", Err: err}
	}
	err := put(s.temp(), s.path)
	s.p.Remove(s.temp())
	if err != nil {
		return lease.Record{}, &lease.StepError{Step: "create", Err: err}
	}
	s.dirSync()
	return rec, nil
}

func (s *fileStore) Create(holder int64, ttl time.Duration) (lease.Record, error) {
	if s.link {
		return s.publish(holder, ttl, s.p.Link)
	}
	return s.SeedFile.Create(holder, ttl)
}

func (s *fileStore) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if s.link {
		return s.publish(cur.Holder, ttl, s.p.Rename)
	}
	rec, err := s.SeedFile.Renew(cur, ttl)
	for i := 0; err != nil && i < s.renewRetry; i++ {
		// The fix: a renewal that failed (ENOSPC, EIO) is tried again at
		// once, so the file is not left empty by a failed write.
		rec, err = s.SeedFile.Renew(cur, ttl)
	}
	return rec, err
}

func (s *fileStore) Takeover(stale lease.Record, holder int64, ttl time.Duration) (lease.Record, error) {
	if !s.link {
		return s.SeedFile.Takeover(stale, holder, ttl)
	}
	if err := s.p.Remove(s.path); err != nil {
		return lease.Record{}, &lease.StepError{Step: "remove", Err: err}
	}
	return s.publish(holder, ttl, s.p.Link)
}

func newStore(o fileStore) func(p lease.Proc, path string) lease.Store {
	return func(p lease.Proc, path string) lease.Store {
		s := o
		s.p, s.path = p, path
		s.SeedFile = &lease.SeedFile{FS: p, Clock: p, Path: path}
		return &s
	}
}

func registerProbe(name, summary string, o fileStore) {
	if err := lease.Register(lease.Variant{
		Name:     name,
		Summary:  summary,
		NewStore: newStore(o),
		Claims:   lease.Claims{ExpiryLag: time.Second},
	}); err != nil {
		panic(err)
	}
}

func init() {
	registerProbe("probe-link-nosync", "temp file + link to publish, + rename to renew; no fsync", fileStore{link: true})
	registerProbe("probe-link-fsync", "probe-link-nosync with fsync of the temp file and the directory", fileStore{link: true, sync: true, syncDir: true})
	registerProbe("probe-link-fsync-mono", "probe-link-fsync, leaseUntil on CLOCK_MONOTONIC (no wall-clock jumps)", fileStore{link: true, sync: true, syncDir: true, mono: true})
	registerProbe("probe-empty-delete", "the seed; a watcher that reads an empty lock file removes it", fileStore{emptyDelete: true})
	registerProbe("probe-renew-retry", "the seed; a failed renewal (O_TRUNC, write) is retried three times", fileStore{renewRetry: 3})
	registerProbe("probe-proc-alive", "probe-link-fsync; a holder whose /proc/PID is gone is taken over at once", fileStore{link: true, sync: true, syncDir: true, procAlive: true})
}

// TestProbeFixes: the checker finds each wrong fix's own failure with the
// faults that cause it, and passes what each fix does fix.
func TestProbeFixes(t *testing.T) {
	for _, c := range []struct {
		variant, faults, prop string
		runs                  int
		found                 bool
	}{
		{"probe-empty-delete", "none", spec.ExclusiveLeadership, 100, true},
		{"probe-renew-retry", "kill", spec.NoWedge, 2000, true},
		{"probe-link-nosync", "power", spec.NoWedge, 2000, true},
		{"probe-link-fsync", "power", spec.NoWedge, 2000, false},
		{"probe-link-fsync-mono", "jump", spec.ExclusiveLeadership, 2000, false},
		{"probe-link-fsync-mono", "stop", spec.ExclusiveLeadership, 100, true},
		{"probe-link-fsync-mono", "power", spec.NoWedge, 2000, true}, // (a deadline on the last boot's monotonic clock)
		{"probe-proc-alive", "none", spec.ExclusiveLeadership, 100, true},
	} {
		faults, err := sim.ParseFaults(c.faults)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := spec.Search{
			Setup:      sim.SetupOptions{Variant: c.variant, Faults: faults, Scheduler: "mixed"},
			Runs:       c.runs,
			Seed:       1,
			Properties: []string{c.prop},
		}.Run(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rep.Found) > 0; got != c.found {
			t.Errorf("%s -faults %s: %s found %v in %d runs, want %v", c.variant, c.faults, c.prop, got, rep.Runs, c.found)
		}
	}
}

// TestProbeTakeoverRaceRate: an fsync before the link is no fix of the
// takeover race, though the catalogue's search of it (1000 runs) no longer
// finds it; a longer search with SIGKILL does.
func TestProbeTakeoverRaceRate(t *testing.T) {
	if testing.Short() {
		t.Skip("30,000 runs")
	}
	b, _ := spec.LookupBug("takeover-race")
	b.Variant = "probe-link-fsync"
	if _, _, found := b.Find(1, "random", 1000); found {
		t.Logf("the catalogue's search found it: the fix's timing changed")
	}
	rep, err := spec.Search{
		Setup:      sim.SetupOptions{Variant: "probe-link-fsync", Faults: []trace.FaultKind{trace.Kill}, Scheduler: "mixed"},
		Runs:       30000,
		Seed:       1,
		Properties: []string{spec.ExclusiveLeadership},
	}.Run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Found) == 0 {
		t.Fatalf("no double leader in %d runs with SIGKILL", rep.Runs)
	}
	t.Logf("two leaders at run %d: %s", rep.Found[0].Run, rep.Found[0].Violation.String())
}
