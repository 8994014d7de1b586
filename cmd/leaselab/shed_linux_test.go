package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestImageMappings(t *testing.T) {
	const exe = "/opt/lease lab/leaselab" // a path with a space
	smaps := `00400000-01272000 r-xp 00000000 fe:00 123 /opt/lease lab/leaselab
Size:              14792 kB
Rss:                7552 kB
Anonymous:             0 kB
01272000-02184000 r--p 00e72000 fe:00 123 /opt/lease lab/leaselab
Size:              15432 kB
Anonymous:             0 kB
02184000-0225a000 rw-p 01d84000 fe:00 123 /opt/lease lab/leaselab
Anonymous:           548 kB
0225a000-0235a000 r--p 01e5a000 fe:00 123 /opt/lease lab/leaselab
Anonymous:             4 kB
0235a000-0245a000 r--s 01f5a000 fe:00 123 /opt/lease lab/leaselab
Anonymous:             0 kB
7f09b2595000-7f09b26eb000 r-xp 00026000 fe:00 456 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f09b2700000-7f09b2800000 rw-p 00000000 00:00 0
Anonymous:          1024 kB
`
	got := imageMappings(smaps, exe)
	// The text and the read-only data; not the data (writable), not a
	// read-only segment someone wrote (relocated RELRO), not a shared
	// mapping, not libc, not anonymous memory.
	want := [][2]uintptr{{0x400000, 0x1272000}, {0x1272000, 0x2184000}}
	if !slices.Equal(got, want) {
		t.Fatalf("imageMappings = %#x, want %#x", got, want)
	}
	if got := imageMappings(smaps, "/other"); len(got) != 0 {
		t.Fatalf("imageMappings of another executable = %#x, want none", got)
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
	total, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			in = len(f) >= 6 && strings.Join(f[5:], " ") == exe
		} else if in && len(f) == 3 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			total += n
		}
	}
	return total
}

// shedImage drops most of the executable's resident pages, and the
// process runs on (the pages it needs fault back in).
func TestShedImage(t *testing.T) {
	replay := func() string {
		var out strings.Builder
		if err := dispatch([]string{"replay", "-variant", "seed", "-seed", "3"}, &out, &out); err != nil {
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
