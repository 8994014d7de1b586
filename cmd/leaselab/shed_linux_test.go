package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

func TestExeMappings(t *testing.T) {
	const exe = "/opt/lease lab/leaselab" // a path with a space
	smaps := `00400000-01272000 r-xp 00000000 fe:00 123 /opt/lease lab/leaselab
Size:              14792 kB
Rss:                7552 kB
Anonymous:             0 kB
01272000-02184000 r--p 00e72000 fe:00 123 /opt/lease lab/leaselab
Size:              15432 kB
Rss:                6600 kB
Anonymous:             0 kB
02184000-0225a000 rw-p 01d84000 fe:00 123 /opt/lease lab/leaselab
Rss:                 548 kB
Anonymous:           548 kB
7f09b2595000-7f09b26eb000 r-xp 00026000 fe:00 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 876 kB
Anonymous:             0 kB
7f09b2700000-7f09b2800000 rw-p 00000000 00:00 0
Rss:                1024 kB
Anonymous:          1024 kB
`
	want := []mapping{
		{0x400000, 0x1272000, "r-xp", 7552, 0},
		{0x1272000, 0x2184000, "r--p", 6600, 0},
		{0x2184000, 0x225a000, "rw-p", 548, 548},
	}
	if got := exeMappings(smaps, exe); !slices.Equal(got, want) {
		t.Fatalf("exeMappings = %+v, want %+v", got, want)
	}
	if got := exeMappings(smaps, "/other"); len(got) != 0 {
		t.Fatalf("exeMappings of another executable = %+v, want none", got)
	}
	// Only private read-only mappings none of whose pages was written:
	// not the data, not a relocated RELRO segment, not a shared mapping.
	for _, c := range []struct {
		m    mapping
		want bool
	}{
		{mapping{perms: "r-xp"}, true},
		{mapping{perms: "r--p", rssKB: 100}, true},
		{mapping{perms: "rw-p"}, false},
		{mapping{perms: "r--p", rssKB: 100, anonKB: 4}, false},
		{mapping{perms: "r--s"}, false},
	} {
		if got := c.m.sheddable(); got != c.want {
			t.Errorf("%+v.sheddable() = %v, want %v", c.m, got, c.want)
		}
	}
}

// imageRSS is the resident size, in kB, of process pid's mappings of its
// executable ("self" for this process).
func imageRSS(t *testing.T, pid string) int {
	t.Helper()
	exe, err := os.Readlink("/proc/" + pid + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + pid + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, m := range exeMappings(string(b), exe) {
		total += m.rssKB
	}
	return total
}

// shedImage drops most of the executable's resident pages, and the
// process runs on (the pages it needs fault back in).
func TestShedImage(t *testing.T) {
	replay := func() string {
		var out strings.Builder
		if err := dispatch([]string{"replay", "-variant", "reference", "-seed", "3"}, &out, &out); err != nil {
			t.Fatalf("replay: %v", err)
		}
		return out.String()
	}
	first := replay()
	before := imageRSS(t, "self")
	shedImage()
	after := imageRSS(t, "self")
	t.Logf("executable resident: %d kB before, %d kB after", before, after)
	if before < 1024 {
		t.Fatalf("only %d kB of the test binary resident before shedding: nothing to measure", before)
	}
	if after > before/2 {
		t.Fatalf("executable resident %d kB after shedding, %d kB before: want at most half", after, before)
	}
	// It runs on, through code whose pages it shed, and computes the same.
	if again := replay(); again != first {
		t.Fatalf("a replay after shedding differs from the one before:\n%s\nvs\n%s", again, first)
	}
}

// BenchmarkFlockHandover measures the kernel's part of the flock variant's
// crash failover, without leaselab's: this process waits in flock(2) on a
// lock file while its holder is SIGKILLed, and each sample runs from
// kill(2) to flock returning. Holders, 30 samples each (3 with -short), in
// one run: the smallest Go program that holds a flock
// (testdata/flockholder), a `leaselab run -store flock` leader (built
// static), one with -shed=false, and one built with cgo (dynamically linked
// with the C library). A holder releases its flock only once the kernel has
// torn its address space down, so the gap grows with what it has mapped.
func BenchmarkFlockHandover(b *testing.B) {
	n := 30
	if testing.Short() {
		n = 3
	}
	holder := filepath.Join(b.TempDir(), "flockholder")
	build := exec.Command("go", "build", "-o", holder, "./testdata/flockholder")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building flockholder: %v\n%s", err, out)
	}
	bin := leaselabBinary(b) // static
	type holderCmd struct {
		name  string
		args  []string // {lock} is the lock file
		ready string   // the holder's line once it holds the lock
	}
	holders := []holderCmd{
		{"minimal-go", []string{holder, "{lock}"}, "locked"},
		{"leaselab", []string{bin, "run", "-store", "flock", "-path", "{lock}"}, "[LEADER] Acquired flock"},
		{"leaselab-noshed", []string{bin, "run", "-store", "flock", "-shed=false", "-path", "{lock}"}, "[LEADER] Acquired flock"},
	}
	// And linked with the C library (cgo), when there is a C compiler.
	dynamic := filepath.Join(b.TempDir(), "leaselab-cgo")
	build = exec.Command("go", "build", "-o", dynamic, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		b.Logf("no cgo build of leaselab (%v): %s", err, out)
	} else {
		holders = append(holders, holderCmd{"leaselab-cgo", []string{dynamic, "run", "-store", "flock", "-path", "{lock}"}, "[LEADER] Acquired flock"})
	}
	for _, h := range holders {
		b.Run(h.name, func(b *testing.B) {
			var gaps []time.Duration
			for range b.N {
				gaps = gaps[:0]
				for range n {
					gaps = append(gaps, handover(b, h.args, h.ready))
				}
			}
			slices.Sort(gaps)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(gaps[len(gaps)/2]), "median-ms")
			b.ReportMetric(ms(gaps[len(gaps)-1]), "max-ms")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: %d hand-overs, median %.2f ms, max %.2f ms", h.name, len(gaps), ms(gaps[len(gaps)/2]), ms(gaps[len(gaps)-1]))
		})
	}
}

// handover starts a holder of a fresh lock file, waits in flock(2) for the
// lock, SIGKILLs the holder and returns how long flock took to return.
func handover(b *testing.B, args []string, ready string) time.Duration {
	b.Helper()
	lock := filepath.Join(b.TempDir(), "lock")
	argv := slices.Clone(args)
	for i, a := range argv {
		if a == "{lock}" {
			argv[i] = lock
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	for !strings.Contains(sc.Text(), ready) {
		if !sc.Scan() {
			b.Fatalf("%s ended before saying %q", argv[0], ready)
		}
	}
	go io.Copy(io.Discard, out)
	time.Sleep(50 * time.Millisecond) // a leader sheds its image right after its log line
	fd, err := lease.OSFS{}.Open(lock, lease.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer lease.OSFS{}.Close(fd)
	got := make(chan time.Time, 1)
	go func() {
		if err := (lease.OSFS{}).Flock(fd, lease.LOCK_EX); err != nil {
			b.Error(err)
		}
		got <- time.Now()
	}()
	time.Sleep(20 * time.Millisecond) // into its blocking flock(2)
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	select {
	case at := <-got:
		return at.Sub(killed)
	case <-time.After(5 * time.Second):
		b.Fatalf("flock still waits 5 s after SIGKILL of its holder")
	}
	return 0
}
