package lease

import (
	"encoding/binary"
	"syscall"
	"testing"
	"unsafe"
)

// event encodes one inotify event as the kernel queues it.
func event(mask uint32, name string) []byte {
	n := 0
	if name != "" {
		n = (len(name) + 1 + 15) / 16 * 16 // NUL-padded
	}
	b := make([]byte, syscall.SizeofInotifyEvent+n)
	// (Written field by field, not through a cast: the race detector's
	// pointer checks reject a struct pointer into a small allocation.)
	binary.NativeEndian.PutUint32(b[unsafe.Offsetof(syscall.InotifyEvent{}.Mask):], mask)
	binary.NativeEndian.PutUint32(b[unsafe.Offsetof(syscall.InotifyEvent{}.Len):], uint32(n))
	copy(b[syscall.SizeofInotifyEvent:], name)
	return b
}

// A DirFeed counts writes to its files only, and an event without a name
// (a queue overflow: writes lost uncounted) as a write.
func TestWritesTo(t *testing.T) {
	names := []string{"lease.db", "lease.db-wal"}
	for _, c := range []struct {
		what string
		buf  []byte
		want bool
	}{
		{"the database", event(syscall.IN_MODIFY, "lease.db"), true},
		{"its log, after another file", append(event(syscall.IN_MODIFY, "other"), event(syscall.IN_MODIFY, "lease.db-wal")...), true},
		{"another file", event(syscall.IN_MODIFY, "lease.db-shm"), false},
		{"a queue overflow", event(syscall.IN_Q_OVERFLOW, ""), true},
	} {
		if got := writesTo(c.buf, names); got != c.want {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

// A feed whose directory is removed ends: its reader sees IN_IGNORED.
func TestEnded(t *testing.T) {
	if ended(event(syscall.IN_MODIFY, "lease.db")) || !ended(append(event(syscall.IN_MODIFY, "x"), event(syscall.IN_IGNORED, "")...)) {
		t.Error("IN_IGNORED not told from a write")
	}
}
