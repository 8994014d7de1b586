package sim

import (
	"strings"
	"testing"
)

// panicSite tells the process's panics from the simulator's own: the
// first frame below the runtime's panic machinery decides.
func TestPanicSite(t *testing.T) {
	const user = `goroutine 7 [running]:
runtime/debug.Stack()
	/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e
github.com/leaselab/leaselab/sim.(*activity).panicked(0x1, {0x2, 0x3})
	/work/main/sim/panic.go:22 +0x1d
github.com/leaselab/leaselab/sim.(*worker).run.func1()
	/work/main/sim/worker.go:40 +0x45
panic({0x7a9f40?, 0xb15fd0?})
	/usr/lib/go/src/runtime/panic.go:783 +0x132
runtime.mapassign_faststr(0x0, 0x0, {0x8, 0x4})
	/usr/lib/go/src/internal/runtime/maps/runtime_faststr.go:263 +0x3c5
example.com/fix.(*store).Renew(0x1)
	/home/u/fix/store.go:24 +0x4a
github.com/leaselab/leaselab/lease.(*Reference).renew(0x1)
	/work/main/lease/reference_calls.go:100 +0x10
`
	if site, ours := panicSite([]byte(user)); site != "fix/store.go:24" || ours {
		t.Errorf("user's panic: %q, ours %v", site, ours)
	}
	const sim = `goroutine 7 [running]:
runtime/debug.Stack()
	/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e
github.com/leaselab/leaselab/sim.(*worker).run.func1()
	/work/main/sim/worker.go:40 +0x45
panic({0x7a9f40?, 0xb15fd0?})
	/usr/lib/go/src/runtime/panic.go:783 +0x132
runtime.panicIndex(...)
	/usr/lib/go/src/runtime/panic.go:115 +0x33
github.com/leaselab/leaselab/sim.(*proc).Open(0x1)
	/work/main/sim/proc_fs.go:40 +0x4a
example.com/fix.(*store).Renew(0x1)
	/home/u/fix/store.go:24 +0x4a
`
	if site, ours := panicSite([]byte(sim)); site != "sim/proc_fs.go:40" || !ours {
		t.Errorf("the simulator's panic: %q, ours %v", site, ours)
	}
}

// A panic in a standard library helper is its caller's: the simulator's
// own bug in slices.Delete still crashes (it was put down to the process,
// exit 2, as the library's frame is not the simulator's), a user's is the
// user's with the user's line, and the simulator's record (trace) is the
// simulator's.
func TestPanicSiteSkipsTheStandardLibrary(t *testing.T) {
	const head = `goroutine 7 [running]:
runtime/debug.Stack()
	/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e
github.com/leaselab/leaselab/sim.(*worker).run.func1()
	/work/main/sim/worker.go:40 +0x45
panic({0x7a9f40?, 0xb15fd0?})
	/usr/lib/go/src/runtime/panic.go:783 +0x132
`
	for _, c := range []struct {
		frames, site string
		ours         bool
	}{
		{`slices.Delete[...](...)
	/usr/lib/go/src/slices/slices.go:223
github.com/leaselab/leaselab/sim.(*proc).dropTimer(...)
	/work/main/sim/timer.go:63
github.com/leaselab/leaselab/sim.(*proc).Sleep(0x1)
	/work/main/sim/proc_clock.go:40 +0x4a
`, "sim/timer.go:63", true},
		{`strings.Repeat({0x1, 0x2}, 0xffffffffffffffff)
	/usr/lib/go/src/strings/strings.go:600 +0x3c5
internal/bytealg.MakeNoZero(...)
	/usr/lib/go/src/internal/bytealg/bytealg.go:1 +0x3c5
example.com/fix.(*store).Renew(0x1)
	/home/u/fix/store.go:24 +0x4a
`, "fix/store.go:24", false},
		{`github.com/leaselab/leaselab/trace.(*Trace).Str(0x1)
	/work/main/trace/str.go:20 +0x4a
github.com/leaselab/leaselab/sim.(*World).record(0x1)
	/work/main/sim/world.go:502 +0x4a
`, "trace/str.go:20", true},
		{`main.(*panicAtRenewal).Renew(0x1)
	/work/main/cmd/leaselab/watchdog_test.go:25 +0x4a
`, "leaselab/watchdog_test.go:25", false},
	} {
		if site, ours := panicSite([]byte(head + c.frames)); site != c.site || ours != c.ours {
			t.Errorf("%s: %q, ours %v; want %q, %v", c.frames[:strings.IndexByte(c.frames, '(')], site, ours, c.site, c.ours)
		}
	}
	if stdFrame("github.com/leaselab/leaselab/lease.(*Reference).renew") || !stdFrame("slices.Delete[...]") || !stdFrame("internal/runtime/maps.(*Map).putSlot") {
		t.Error("stdFrame")
	}
}
