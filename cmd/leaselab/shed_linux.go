package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// shedImage drops this process's mappings of the clean pages of its own
// executable (MADV_DONTNEED on its read-only and executable segments), so
// that its death takes less time.
//
// A SIGKILLed process releases its flock only once the kernel has torn down
// its address space: do_exit unmaps memory (exit_mm) before it closes
// files (exit_files). leaselab links the Redis, etcd and SQL clients, whose
// package initialisers touch some 14 MiB of the binary; unmapping those
// pages took about 1 ms of the flock hand-over on the development machine
// (see the README's failover table). Pages the leader needs again fault
// back in from the page cache, a minor fault each.
//
// Only private mappings of the executable without anonymous pages are
// shed: a page someone wrote (relocations of a position-independent
// build's RELRO segment, a debugger's breakpoint) would revert to the
// file's bytes. Errors are ignored: shedding is an optimisation only.
func shedImage() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	for _, m := range exeMappings(string(smaps), exe) {
		if m.sheddable() {
			unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_DONTNEED)
		}
	}
}

// A mapping is one memory mapping of /proc/PID/smaps.
type mapping struct {
	lo, hi        uintptr // [lo, hi)
	perms         string  // "r-xp": read, write, execute, private or shared
	rssKB, anonKB int     // resident, and of that anonymous (written), in kB
}

// sheddable reports whether m's pages can be dropped and read back from
// the file: a private, read-only mapping none of whose pages was written.
func (m mapping) sheddable() bool {
	return m.perms[1] == '-' && m.perms[3] == 'p' && m.anonKB == 0
}

// exeMappings returns the mappings of the file exe in smaps, the text of
// /proc/PID/smaps.
func exeMappings(smaps, exe string) []mapping {
	var out []mapping
	in := false
	for _, line := range strings.Split(smaps, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			// A mapping's header: range perms offset dev inode [path].
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && len(f) >= 6 && strings.Join(f[5:], " ") == exe
			if in {
				out = append(out, mapping{lo: uintptr(a), hi: uintptr(b), perms: f[1]})
			}
		case in && len(f) == 3 && f[2] == "kB":
			n, _ := strconv.Atoi(f[1])
			switch f[0] {
			case "Rss:":
				out[len(out)-1].rssKB = n
			case "Anonymous:":
				out[len(out)-1].anonKB = n
			}
		}
	}
	return out
}
