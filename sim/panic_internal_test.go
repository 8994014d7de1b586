package sim

import "testing"

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
