package sim

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
)

// A panic in a process's code (the variant's algorithm, a user's fix)
// ends that process as Go's runtime ends a program: its every activity
// stops and it exits with status 2. The trace's EvExit says why and
// where ("panic: ... at file:line"); no-own-exit judges it, and the run
// replays like any other. So does a panic in a callback of the process's
// timers (AfterMono), which the simulator calls from its own code. A
// panic raised by the simulator's own code (a bug of the simulator's, or
// a check of its invariants) is not the process's: it crashes the run,
// as before.

// panicked ends a's process after its code panicked with r; it returns
// false if the panic was the simulator's own, for the caller to raise
// again.
func (a *activity) panicked(r any) bool {
	stack := debug.Stack()
	site, ours := panicSite(stack)
	if ours || a.isolated {
		return false
	}
	if p := a.p; !p.dead {
		p.crash(r, site)
	}
	return true
}

// timerPanicked ends p after the callback of one of its timers (AfterMono)
// panicked with r, as a panic in its activities does, or raises r again
// if the panic is the simulator's own. The simulator calls the callback
// from its own code (fireTimers): on a step of p's (the fast path of
// activity.pass, or its look at the world), during another process's
// step, or from the scheduler between steps. Nothing is unwound here: the
// activity running goes on to its scheduling point, where one of p's sees
// its process dead and unwinds with errKilled (pass, blocked), and
// World.step resumes none of p's. (An unwinding from here could leave
// half done another process's death, in whose look at the world the
// timer fired: kill.)
func (p *proc) timerPanicked(r any) {
	if r == errKilled {
		panic(r) // (the simulator's unwinding of a dead process's activity)
	}
	site, ours := panicSite(debug.Stack())
	if ours {
		panic(r)
	}
	if !p.dead {
		p.crash(r, site)
	}
}

// crash ends p, whose code panicked with r at site, with exit status 2,
// its exit event saying why and where. Its other timers are dropped
// first: Go's runtime ends a program at its panic, and no timer of it
// fires after (kill looks at the world, firing the timers due, before
// the process dies).
func (p *proc) crash(r any, site string) {
	p.dropTimers()
	if p.w.kill(p, 2) {
		evs := p.w.tr.Events
		evs[len(evs)-1].Text = p.w.tr.Str(fmt.Sprintf("panic: %v at %s", r, site))
	}
}

// simPackage is the import path prefix of the simulator's functions in a
// stack trace, and tracePackage that of its record's, which only the
// simulator's code calls.
const (
	simPackage   = "github.com/leaselab/leaselab/sim."
	tracePackage = "github.com/leaselab/leaselab/trace."
)

// modules are the import paths of the binary's modules (its main module
// and its dependencies): a package under one is not the standard
// library's, even if its path has no dot (a user's module "fix").
var modules = sync.OnceValue(func() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	out := []string{bi.Main.Path}
	for _, d := range bi.Deps {
		out = append(out, d.Path)
	}
	return out
})

// stdFrame reports whether fn, a function as a stack trace names it, is
// the standard library's (slices.Delete[...], strconv.Itoa): a helper that
// panics for its caller, whose frame says whose panic it is.
func stdFrame(fn string) bool {
	pkg := fn
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		if j := strings.IndexByte(pkg[i:], '.'); j >= 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.IndexByte(pkg, '.'); j >= 0 {
		pkg = pkg[:j]
	}
	first, _, _ := strings.Cut(pkg, "/")
	if pkg == "main" || strings.Contains(first, ".") {
		return false
	}
	for _, m := range modules() {
		if m != "" && (pkg == m || strings.HasPrefix(pkg, m+"/")) {
			return false
		}
	}
	return true
}

// panicSite finds, in the stack of a panicking goroutine being recovered,
// the function that panicked (the first frame below the runtime's panic
// machinery, the recovering deferred call and the standard library's
// helpers) as "file:line", and reports whether it is the simulator's. (A
// panic in slices.Delete or strconv is its caller's: the simulator's own
// bug there was put down to the process as its exit 2.)
func panicSite(stack []byte) (site string, ours bool) {
	lines := bytes.Split(stack, []byte("\n"))
	seenPanic := false
	for i := 1; i+1 < len(lines); i += 2 {
		fn := string(lines[i])
		if strings.HasPrefix(fn, "panic(") || strings.HasPrefix(fn, "runtime.gopanic") {
			seenPanic = true
			continue
		}
		if !seenPanic || strings.HasPrefix(fn, "runtime.") || stdFrame(fn) {
			continue
		}
		loc := strings.TrimSpace(string(lines[i+1]))
		if j := strings.LastIndex(loc, " +0x"); j >= 0 {
			loc = loc[:j]
		}
		if j := strings.LastIndex(loc, "/"); j >= 0 {
			if k := strings.LastIndex(loc[:j], "/"); k >= 0 {
				loc = loc[k+1:] // the file's directory and name
			}
		}
		return loc, strings.HasPrefix(fn, simPackage) || strings.HasPrefix(fn, tracePackage)
	}
	return "an unknown place", false
}
