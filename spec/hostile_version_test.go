package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A name planted at a high version is a nuisance, and at or near the
// highest a name can carry a wedge that says so, never a spin. A probe
// planted PATH.999999999999999999 under a live leader: the next version's
// name had 19 digits, which the listing does not read as a version, so
// every write stood unseen and was lost as a race, retried at once, 8,000
// times a second, and nobody led again. Now the store refuses to write
// above lease.MaxVersion (an error the user is told of) and a lost race
// backs off. (Planted before the run here: the simulator places files at
// the start only.)
func TestPlantedHighVersion(t *testing.T) {
	for _, c := range []struct {
		v      int64
		lead   bool // a leader within a lease and a half (the garbage waited out)
		wedges bool // nobody leads once the versions above the plant are used, and the user is told why
	}{
		{999_999_999_999_999, true, false},
		{lease.MaxVersion - 1, true, true}, // (one version left: the takeover's; its first renewal fails)
		{lease.MaxVersion, false, true},
	} {
		for _, data := range []string{"junk", `{"processId":300,"epoch":1,"leaseMs":3000}`} {
			name := sim.DefaultLockPath + "." + strconv.FormatInt(c.v, 10)
			cfg := sim.Config{Variant: "reference", Seed: 1, Horizon: 40 * time.Second,
				Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: time.Millisecond}},
				Files:      []sim.File{{Path: name, Data: data}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond}
			tr, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			iv := tr.Leadership()
			led := len(iv) > 0 && iv[0].From <= int64(14*time.Second)
			leadsAtEnd := len(iv) > 0 && iv[len(iv)-1].To >= int64(tr.End)
			if led != c.lead || leadsAtEnd == c.wedges {
				t.Errorf("version %d planted (%s): a leader within 14 s %v, at the end %v; want %v, %v (%v)", c.v, data, led, leadsAtEnd, c.lead, !c.wedges, iv)
			}
			if v := CheckNoBusyLoop(tr); v != nil {
				t.Errorf("version %d planted (%s): %v", c.v, data, v)
			}
			told := 0
			for _, e := range tr.Events {
				if e.Kind == trace.EvError {
					told++
				}
			}
			if c.wedges && told == 0 {
				t.Errorf("version %d planted (%s): nobody leads and the user was told of no error", c.v, data)
			}
		}
	}
}

// blindStore is a store whose reads never show a record: its listing and
// its writes disagree, as they did over a version name of 19 digits and a
// Redis key of another type (a probe). Every create by a watcher is a
// race lost to a record it cannot see.
type blindStore struct{ lease.Store }

func (blindStore) Read() (lease.Record, error) { return lease.Record{}, fs.ErrNotExist }

// A race lost to nobody the next read shows is retried after a back-off,
// never at once: whatever makes a store's reads and writes disagree next,
// it cannot make the reference spin (it did, 8,000 lost races a second).
func TestLostRaceToNobodyBacksOff(t *testing.T) {
	ref, err := lease.LookupVariant("reference")
	if err != nil {
		t.Fatal(err)
	}
	blind := ref
	blind.Name = "test~blind-store"
	blind.Summary = "the reference over a store whose reads never show a record (a test of the lost race's back-off)"
	inner := ref.NewStore
	blind.NewStore = func(p lease.Proc, path string) lease.Store { return blindStore{inner(p, path)} }
	registerOnce(t, blind)
	cfg := sim.Config{Variant: blind.Name, Seed: 1, Horizon: 30 * time.Second,
		Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200, Start: time.Millisecond}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond}
	tr, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, l := range tr.LogLines() {
		if strings.Contains(l, "Lost takeover race") {
			lost++
		}
	}
	if lost < 5 {
		t.Fatalf("%d lost races: the test shows nothing", lost)
	}
	// Doubling to the watch interval: a dozen races lost in 30 s, not one
	// every 10 ms (3,000), which no-busy-loop's bound would let pass.
	t.Logf("%d lost races in 30 s", lost)
	if lost > 40 {
		t.Errorf("%d lost races in 30 s: the back-off does not grow", lost)
	}
	if v := CheckNoBusyLoop(tr); v != nil {
		t.Errorf("%d lost races: %v", lost, v)
	}
}

// No write goes above lease.MaxVersion, whatever it is: a renewal and a
// release of a record at it are refused as a create is (a review: only
// the create was tested).
func TestNoWriteAboveMaxVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock")
	s := &lease.VersionedFile{FS: lease.OSFS{}, Path: path, PID: 7}
	rec := lease.Record{Holder: 7, Epoch: 3, Version: lease.MaxVersion, TTL: 9 * time.Second}
	if err := os.WriteFile(path+"."+strconv.FormatInt(lease.MaxVersion, 10), []byte(`{"processId":7,"epoch":3,"leaseMs":9000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(rec, 9*time.Second); !errors.Is(err, lease.ErrNoVersionLeft) {
		t.Errorf("Renew at MaxVersion: %v, want ErrNoVersionLeft", err)
	}
	if err := s.Release(rec); !errors.Is(err, lease.ErrNoVersionLeft) {
		t.Errorf("Release at MaxVersion: %v, want ErrNoVersionLeft", err)
	}
	if _, err := s.Takeover(rec, 8, 9*time.Second); !errors.Is(err, lease.ErrNoVersionLeft) {
		t.Errorf("Takeover at MaxVersion: %v, want ErrNoVersionLeft", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the lock directory after refused writes, want the planted one", len(ents))
	}
}
