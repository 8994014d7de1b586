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
	for _, m := range imageMappings(string(smaps), exe) {
		unix.Syscall(unix.SYS_MADVISE, m[0], m[1]-m[0], unix.MADV_DONTNEED)
	}
}

// imageMappings returns the [start, end) of each mapping of exe in smaps
// (the text of /proc/PID/smaps) that is private, not writable, and has no
// anonymous pages.
func imageMappings(smaps, exe string) [][2]uintptr {
	var out [][2]uintptr
	var cur [2]uintptr
	ok := false
	for _, line := range strings.Split(smaps, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4:
			// A mapping's header: range perms offset dev inode [path].
			lo, hi, _ := strings.Cut(f[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			path := ""
			if len(f) >= 6 {
				path = strings.Join(f[5:], " ")
			}
			ok = err1 == nil && err2 == nil && path == exe && f[1][1] == '-' && f[1][3] == 'p'
			cur = [2]uintptr{uintptr(a), uintptr(b)}
		case ok && len(f) == 3 && f[0] == "Anonymous:":
			if f[1] == "0" {
				out = append(out, cur)
			}
			ok = false
		}
	}
	return out
}
