//go:build linux

package fstest_test

// TestDifferential runs random sequences of lease.FS calls on the real
// kernel (lease.OSFS in a fresh temporary directory) and on the
// simulator's file system (a View of a fresh sim.FileSystem per simulated
// process), and compares every result: return values, errors (their type,
// Op, Path and exact errno), file contents, listings (and OSFS's
// ReadDirPrefix against them), Stat's answers, the whole tree at the end,
// and the rule by which descriptors are numbered (the lowest free, on
// both). Each mismatch it found was a bug of the simulator, fixed and kept
// as a case of TestFS (names.go, flock.go), or a difference the simulator
// has on purpose, which the test leaves out where it would arise:
//
//   - open flags the simulator does not model (O_DIRECTORY, O_SYNC, ...),
//     which it refuses with EINVAL (sim/fs.go, modelled): not drawn;
//   - shared locks (LOCK_SH), refused with EINVAL (lease/fs.go), and
//     LOCK_MAND, which Linux ignores: not drawn;
//   - permissions and the umask (sim.FileSystem's doc): a mode is
//     compared with the test's umask applied to the simulator's;
//   - a directory's size (0 in the simulator, sim.FileSystem's doc), a
//     file's times and Sys: not compared;
//   - relative names, which the simulator takes from "/" (the kernel from
//     the working directory): not drawn;
//   - a blocking LOCK_EX that would wait: a View cannot (sim/flockwait.go);
//   - another process's descriptors: on the kernel every simulated
//     process shares the test's one table, so a process uses only its own
//     descriptors, and a closed one only while nobody has its number.
//
// Run it long with
//
//	go test ./lease/fstest -run TestDifferential -rapid.checks=100000
//
// (100,000 sequences take about four minutes.) Only plain semantics are
// compared: no faults, power losses or waits, which a real kernel cannot
// be made to show on demand.

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
)

// defaultChecks is how many sequences TestDifferential runs unless
// -rapid.checks says (or -short, rapid's 100): about a second.
const defaultChecks = "300"

func TestDifferential(t *testing.T) {
	if !testing.Short() && !flagSet("rapid.checks") {
		old := flag.Lookup("rapid.checks").Value.String()
		flag.Set("rapid.checks", defaultChecks)
		defer flag.Set("rapid.checks", old)
	}
	umask := syscall.Umask(0)
	syscall.Umask(umask)
	rapid.Check(t, func(rt *rapid.T) {
		w := newDiffWorld(rt, fs.FileMode(umask))
		steps := rapid.IntRange(0, 100).Draw(rt, "steps")
		for range steps {
			rapid.SampledFrom(diffActions).Draw(rt, "action").f(w, rt)
		}
		w.compareTrees(rt)
	})
}

func flagSet(name string) (set bool) {
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// names are the names the sequences use, relative to the world's
// directory ("" is the directory itself): files that exist at the start
// or not, directories (d empty, e holding f), names below a file or a
// missing directory, unclean spellings and names too long. None leads out
// of the directory. emptyName stands for the empty string.
var names = []string{
	"a", "b", "d", "e", "e/f", "d/x", // two draws in three are of these
	"c", "e/g", "a/x", "m/x",
	"", ".", "d/.", "d/..", "e/../a", "e//f", "a/", "d/", "d/x/", "a/.",
	emptyName, longest, tooLong, tooLong + "/x", "d" + strings.Repeat("/.", 2100),
}

const emptyName = "<empty>"

// longest is a name of NAME_MAX bytes, tooLong one byte more: Linux says
// ENAMETOOLONG, as for a name of PATH_MAX bytes (the last of names).
var longest, tooLong = strings.Repeat("l", 255), strings.Repeat("L", 256)

// payloads are what writes write; the largest is one byte over
// lease.MaxReadFile, so that ReadFile's bound is reached.
var payloads = []string{"", "x", "abc", "hello, world", strings.Repeat("z", lease.MaxReadFile+1)}

// perms are the modes opens ask for: the simulator has no umask, so a
// created file's mode is compared with the umask applied to the
// simulator's (see FileSystem's doc: "no ... permissions, umask").
var perms = []fs.FileMode{0o644, 0o600, 0o666, 0o755, fs.ModeSetuid | 0o640}

// accModes are the access modes; 3 (O_WRONLY|O_RDWR) is Linux's mode for
// neither reading nor writing, which open accepts.
var accModes = []int{lease.O_RDONLY, lease.O_WRONLY, lease.O_RDWR, 3}

// flagBits are the other flags lease.FS's implementations model (O_APPEND
// and O_CLOEXEC besides lease's). Flags the simulator does not model
// (O_DIRECTORY, O_SYNC, ...) are left out: it refuses them with EINVAL on
// purpose, so that code relying on them fails loudly (sim/fs.go, modelled).
var flagBits = []int{lease.O_CREATE, lease.O_EXCL, lease.O_TRUNC, os.O_APPEND, lease.O_NOFOLLOW, syscall.O_CLOEXEC}

// flockOps are the operations Flock is given, the ones that take and
// release a lock more often than the invalid ones. LOCK_SH is left out: the
// simulator does not model shared locks and refuses them with EINVAL
// (lease/fs.go, LOCK_SH). A blocking LOCK_EX is given only when it would
// not wait (a View cannot wait).
var flockOps = []int{
	lease.LOCK_EX, lease.LOCK_EX | lease.LOCK_NB, lease.LOCK_EX | lease.LOCK_NB,
	lease.LOCK_UN, lease.LOCK_UN, lease.LOCK_UN | lease.LOCK_NB,
	0, lease.LOCK_NB, lease.LOCK_EX | lease.LOCK_UN,
}

// badFDs are descriptor numbers no table has open: negative, and beyond
// any limit.
var badFDs = []lease.FD{-1, 1 << 30}

type diffWorld struct {
	dir   string
	umask fs.FileMode
	sfs   *sim.FileSystem
	procs []*diffProc
	step  int
}

// A diffProc is a simulated process: its own descriptor table in the
// simulator. On the kernel all of them share the test's table, so a
// descriptor is only ever used by the process that opened it.
type diffProc struct {
	tab     *sim.FDTable
	view    lease.FlockFS
	handles []*handle
}

// A handle is one open (or once open) descriptor on both sides.
type handle struct {
	os, sim lease.FD
	open    bool
	ino     uint64 // the kernel's inode number, for the flock model
	dev     uint64
	locked  bool // holds its file's flock lock, as both sides said
}

func newDiffWorld(rt *rapid.T, umask fs.FileMode) *diffWorld {
	w := &diffWorld{umask: umask, sfs: sim.NewFileSystem()}
	dir, err := os.MkdirTemp("", "fsdiff")
	if err != nil {
		rt.Fatal(err)
	}
	w.dir = dir
	// At once: a draw below may end the check (rapid's shrinking does).
	rt.Cleanup(w.cleanup)
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		rt.Fatal(err)
	}
	w.dir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		rt.Fatal(err)
	}
	// The simulator's directory has the kernel's name, so that the
	// names, and the Paths of errors, are the same on both sides.
	w.sfs.MkdirAll(dir)
	for _, d := range []string{"d", "e"} {
		if err := os.Mkdir(dir+"/"+d, 0o755); err != nil {
			rt.Fatal(err)
		}
		w.sfs.MkdirAll(dir + "/" + d)
	}
	for _, f := range []struct{ name, data string }{{"a", "a0"}, {"e/f", "f0"}} {
		if err := os.WriteFile(dir+"/"+f.name, []byte(f.data), 0o644); err != nil {
			rt.Fatal(err)
		}
		if err := w.sfs.Place(dir+"/"+f.name, []byte(f.data), 0o644&^umask); err != nil {
			rt.Fatal(err)
		}
	}
	n := rapid.IntRange(1, 3).Draw(rt, "procs")
	for range n {
		tab := w.sfs.NewFDTable()
		w.procs = append(w.procs, &diffProc{tab: tab, view: w.sfs.View(tab)})
	}
	return w
}

func (w *diffWorld) cleanup() {
	for _, p := range w.procs {
		for _, h := range p.handles {
			if h.open {
				syscall.Close(int(h.os))
			}
		}
	}
	os.RemoveAll(w.dir)
}

func (w *diffWorld) name(rt *rapid.T, label string) string {
	ns := names
	if rapid.IntRange(0, 2).Draw(rt, label+" core") > 0 {
		ns = names[:6]
	}
	n := rapid.SampledFrom(ns).Draw(rt, label)
	switch n {
	case emptyName:
		return ""
	case "":
		return w.dir
	}
	return w.dir + "/" + n
}

func (w *diffWorld) proc(rt *rapid.T) (int, *diffProc) {
	i := rapid.IntRange(0, len(w.procs)-1).Draw(rt, "proc")
	return i, w.procs[i]
}

// openHandle draws an open descriptor of some process, or skips.
func (w *diffWorld) openHandle(rt *rapid.T) (int, *diffProc, *handle) {
	i, p := w.proc(rt)
	var open []*handle
	for _, h := range p.handles {
		if h.open {
			open = append(open, h)
		}
	}
	if len(open) == 0 {
		return i, p, nil
	}
	return i, p, rapid.SampledFrom(open).Draw(rt, "fd")
}

// badHandle draws a descriptor number that is not open in the drawn
// process's table, as the pair of numbers each side knows it by: a closed
// descriptor of that process (when neither side has given its number
// again, to this process in the simulator or to anyone on the kernel) or
// a number no table has.
func (w *diffWorld) badHandle(rt *rapid.T) (int, *diffProc, *handle) {
	i, p := w.proc(rt)
	cands := []*handle{}
	for _, fd := range badFDs {
		cands = append(cands, &handle{os: fd, sim: fd})
	}
	for _, h := range p.handles {
		if !h.open && !p.simOpen(h.sim) && !kernelOpen(h.os) {
			cands = append(cands, h)
		}
	}
	return i, p, rapid.SampledFrom(cands).Draw(rt, "badfd")
}

func (p *diffProc) simOpen(fd lease.FD) bool {
	for _, h := range p.handles {
		if h.open && h.sim == fd {
			return true
		}
	}
	return false
}

// kernelOpen reports whether the test process has descriptor fd open.
func kernelOpen(fd lease.FD) bool {
	if fd < 0 {
		return false
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// An action is one kind of step of a sequence.
type action struct {
	name string
	f    func(*diffWorld, *rapid.T)
}

func (a action) String() string { return a.name }

// diffActions are the steps a sequence is drawn from, each listed as
// often as it should be drawn: the calls that change files and
// descriptors more often than those that only look, so that a sequence
// reaches states (a file written through two descriptors, a lock held
// and released, a directory filled and renamed onto) where the two
// file systems could part.
var diffActions = weighted([]struct {
	action
	n int
}{
	{action{"open", (*diffWorld).open}, 8},
	{action{"write", (*diffWorld).write}, 8},
	{action{"writefile", (*diffWorld).writeFile}, 3},
	{action{"close", (*diffWorld).close}, 3},
	{action{"fsync", (*diffWorld).fsync}, 1},
	{action{"flock", (*diffWorld).flock}, 6},
	{action{"kill", (*diffWorld).kill}, 1},
	{action{"readfile", (*diffWorld).readFile}, 3},
	{action{"stat", (*diffWorld).stat}, 2},
	{action{"remove", (*diffWorld).remove}, 2},
	{action{"rename", (*diffWorld).rename}, 4},
	{action{"link", (*diffWorld).link}, 3},
	{action{"readdir", (*diffWorld).readDir}, 2},
	{action{"tree", (*diffWorld).compareTrees}, 1},
	{action{"write-bad", (*diffWorld).writeBad}, 1},
	{action{"close-bad", (*diffWorld).closeBad}, 1},
	{action{"fsync-bad", (*diffWorld).fsyncBad}, 1},
	{action{"flock-bad", (*diffWorld).flockBad}, 1},
})

func weighted(as []struct {
	action
	n int
}) []action {
	var out []action
	for _, a := range as {
		for range a.n {
			out = append(out, a.action)
		}
	}
	return out
}

// same fails the check when the two sides' results differ.
func (w *diffWorld) same(rt *rapid.T, call, osRes, simRes string) {
	rt.Helper()
	w.step++
	if osRes != simRes {
		rt.Fatalf("step %d: %s:\n  linux: %s\n  sim:   %s", w.step, call, osRes, simRes)
	}
	rt.Logf("step %d: %s: %s", w.step, call, osRes)
}

// errString describes err as the test compares it: its type, Op, Path
// (a descriptor's number replaced by "fd #", the two sides numbering
// differently) and errno.
func errString(err error, fd lease.FD) string {
	if err == nil {
		return "ok"
	}
	pe, ok := err.(*fs.PathError)
	if !ok {
		return fmt.Sprintf("%T %v (not an *fs.PathError)", err, err)
	}
	path := pe.Path
	if path == "fd "+strconv.Itoa(int(fd)) {
		path = "fd #"
	}
	errno, ok := pe.Err.(syscall.Errno)
	if !ok {
		return fmt.Sprintf("%s %q: %T %v (not a syscall.Errno)", pe.Op, path, pe.Err, pe.Err)
	}
	return fmt.Sprintf("%s %q: errno %d (%v)", pe.Op, path, int(errno), errno)
}

func (w *diffWorld) open(rt *rapid.T) {
	i, p := w.proc(rt)
	name := w.name(rt, "name")
	flag := rapid.SampledFrom(accModes).Draw(rt, "access")
	for _, b := range flagBits {
		if rapid.Bool().Draw(rt, "flag "+strconv.Itoa(b)) {
			flag |= b
		}
	}
	perm := rapid.SampledFrom(perms).Draw(rt, "perm")
	ofd, oerr := lease.OSFS{}.Open(name, flag, perm)
	sfd, serr := p.view.Open(name, flag, perm)
	call := fmt.Sprintf("proc %d Open(%q, %#o, %v)", i, name, flag, perm)
	w.same(rt, call, errString(oerr, -2), errString(serr, -2))
	if oerr != nil {
		if ofd != -1 || sfd != -1 {
			rt.Fatalf("%s failed: descriptors %d (linux), %d (sim), want -1", call, ofd, sfd)
		}
		return
	}
	h := &handle{os: ofd, sim: sfd, open: true}
	var st unix.Stat_t
	if err := unix.Fstat(int(ofd), &st); err != nil {
		rt.Fatal(err)
	}
	h.ino, h.dev = st.Ino, st.Dev
	// Both number descriptors as Linux does: the lowest free. The
	// simulator's process has 0, 1 and 2 open; the kernel's test process
	// whatever it has.
	want := lease.FD(3)
	for p.simOpen(want) {
		want++
	}
	if sfd != want {
		rt.Fatalf("%s: sim descriptor %d, want %d (the lowest free)", call, sfd, want)
	}
	for fd := lease.FD(0); fd < ofd; fd++ {
		if !kernelOpen(fd) {
			rt.Fatalf("%s: linux gave descriptor %d while %d was free", call, ofd, fd)
		}
	}
	p.handles = append(p.handles, h)
}

func (w *diffWorld) write(rt *rapid.T) {
	i, p, h := w.openHandle(rt)
	if h == nil {
		return // nothing open: a step that does nothing
	}
	w.writeTo(rt, i, p, h)
}

func (w *diffWorld) writeBad(rt *rapid.T) {
	i, p, h := w.badHandle(rt)
	w.writeTo(rt, i, p, h)
}

func (w *diffWorld) writeTo(rt *rapid.T, i int, p *diffProc, h *handle) {
	b := []byte(rapid.SampledFrom(payloads).Draw(rt, "data"))
	on, oerr := lease.OSFS{}.Write(h.os, b)
	sn, serr := p.view.Write(h.sim, b)
	w.same(rt, fmt.Sprintf("proc %d Write(#, %d bytes)", i, len(b)),
		fmt.Sprintf("%d, %s", on, errString(oerr, h.os)), fmt.Sprintf("%d, %s", sn, errString(serr, h.sim)))
}

func (w *diffWorld) close(rt *rapid.T) {
	i, p, h := w.openHandle(rt)
	if h == nil {
		return // nothing open: a step that does nothing
	}
	w.closeOf(rt, i, p, h)
}

func (w *diffWorld) closeBad(rt *rapid.T) {
	i, p, h := w.badHandle(rt)
	w.closeOf(rt, i, p, h)
}

func (w *diffWorld) closeOf(rt *rapid.T, i int, p *diffProc, h *handle) {
	oerr := lease.OSFS{}.Close(h.os)
	serr := p.view.Close(h.sim)
	h.open, h.locked = false, false
	w.same(rt, fmt.Sprintf("proc %d Close(#)", i), errString(oerr, h.os), errString(serr, h.sim))
}

func (w *diffWorld) fsync(rt *rapid.T) {
	i, p, h := w.openHandle(rt)
	if h == nil {
		return // nothing open: a step that does nothing
	}
	w.fsyncOf(rt, i, p, h)
}

func (w *diffWorld) fsyncBad(rt *rapid.T) {
	i, p, h := w.badHandle(rt)
	w.fsyncOf(rt, i, p, h)
}

func (w *diffWorld) fsyncOf(rt *rapid.T, i int, p *diffProc, h *handle) {
	oerr := lease.OSFS{}.Fsync(h.os)
	serr := p.view.Fsync(h.sim)
	w.same(rt, fmt.Sprintf("proc %d Fsync(#)", i), errString(oerr, h.os), errString(serr, h.sim))
}

func (w *diffWorld) flock(rt *rapid.T) {
	i, p, h := w.contender(rt)
	if h == nil {
		i, p, h = w.openHandle(rt)
	}
	if h == nil {
		return // nothing open: a step that does nothing
	}
	w.flockOf(rt, i, p, h)
}

func (w *diffWorld) flockBad(rt *rapid.T) {
	i, p, h := w.badHandle(rt)
	w.flockOf(rt, i, p, h)
}

func (w *diffWorld) flockOf(rt *rapid.T, i int, p *diffProc, h *handle) {
	how := rapid.SampledFrom(flockOps).Draw(rt, "how")
	if how == lease.LOCK_EX && h.open && !h.locked && w.lockedElsewhere(h) {
		return // a blocking LOCK_EX would wait: a step that does nothing
	}
	done := make(chan error, 1)
	go func() { done <- lease.OSFS{}.Flock(h.os, how) }()
	var oerr error
	select {
	case oerr = <-done:
	case <-time.After(5 * time.Second):
		rt.Fatalf("proc %d Flock(#, %#x) on linux still waits after 5 s", i, how)
	}
	serr := p.view.Flock(h.sim, how)
	w.same(rt, fmt.Sprintf("proc %d Flock(#, %#x)", i, how), errString(oerr, h.os), errString(serr, h.sim))
	if oerr == nil && h.open {
		switch how &^ lease.LOCK_NB {
		case lease.LOCK_EX:
			h.locked = true
		case lease.LOCK_UN:
			h.locked = false
		}
	}
}

// contender draws, half the time when there is one, a descriptor whose
// file another description has locked: where flock's rules are tested.
func (w *diffWorld) contender(rt *rapid.T) (int, *diffProc, *handle) {
	type c struct {
		i int
		h *handle
	}
	var cs []c
	for i, p := range w.procs {
		for _, h := range p.handles {
			if h.open && !h.locked && w.lockedElsewhere(h) {
				cs = append(cs, c{i, h})
			}
		}
	}
	if len(cs) == 0 || !rapid.Bool().Draw(rt, "contend") {
		return 0, nil, nil
	}
	x := cs[rapid.IntRange(0, len(cs)-1).Draw(rt, "contender")]
	return x.i, w.procs[x.i], x.h
}

// lockedElsewhere reports whether another open description of h's file
// holds its lock.
func (w *diffWorld) lockedElsewhere(h *handle) bool {
	for _, p := range w.procs {
		for _, o := range p.handles {
			if o != h && o.open && o.locked && o.ino == h.ino && o.dev == h.dev {
				return true
			}
		}
	}
	return false
}

// kill ends a process: the simulator drops its table (CloseAll), the
// kernel closes each of its descriptors.
func (w *diffWorld) kill(rt *rapid.T) {
	i, p := w.proc(rt)
	p.tab.CloseAll()
	for _, h := range p.handles {
		if h.open {
			if err := syscall.Close(int(h.os)); err != nil {
				rt.Fatal(err)
			}
			h.open, h.locked = false, false
		}
	}
	w.step++
	rt.Logf("step %d: proc %d killed", w.step, i)
}

func (w *diffWorld) readFile(rt *rapid.T) {
	_, p := w.proc(rt)
	name := w.name(rt, "name")
	ob, oerr := lease.OSFS{}.ReadFile(name)
	sb, serr := p.view.ReadFile(name)
	w.same(rt, fmt.Sprintf("ReadFile(%q)", name), bytesString(ob, oerr), bytesString(sb, serr))
}

func bytesString(b []byte, err error) string {
	s := fmt.Sprintf("nil=%v ", b == nil)
	if len(b) > 40 {
		s += fmt.Sprintf("%d bytes %q...", len(b), b[:40])
	} else {
		s += strconv.Quote(string(b))
	}
	return s + ", " + errString(err, -2)
}

func (w *diffWorld) stat(rt *rapid.T) {
	_, p := w.proc(rt)
	name := w.name(rt, "name")
	ofi, oerr := lease.OSFS{}.Stat(name)
	sfi, serr := p.view.Stat(name)
	w.same(rt, fmt.Sprintf("Stat(%q)", name), w.infoString(ofi, oerr, 0), w.infoString(sfi, serr, w.umask))
}

// infoString describes a Stat result. A directory's size is not
// compared: the model gives directories no blocks (0, where ext4 says
// 4096). mask is the umask to apply to the mode (the simulator's).
func (w *diffWorld) infoString(fi fs.FileInfo, err error, mask fs.FileMode) string {
	if err != nil {
		return errString(err, -2)
	}
	size := "-"
	if !fi.IsDir() {
		size = strconv.FormatInt(fi.Size(), 10)
	}
	return fmt.Sprintf("name %q size %s mode %v isdir %v", fi.Name(), size, fi.Mode()&^mask, fi.IsDir())
}

func (w *diffWorld) remove(rt *rapid.T) {
	_, p := w.proc(rt)
	name := w.name(rt, "name")
	oerr := lease.OSFS{}.Remove(name)
	serr := p.view.Remove(name)
	w.same(rt, fmt.Sprintf("Remove(%q)", name), errString(oerr, -2), errString(serr, -2))
}

func (w *diffWorld) rename(rt *rapid.T) {
	_, p := w.proc(rt)
	from, to := w.name(rt, "from"), w.name(rt, "to")
	oerr := lease.OSFS{}.Rename(from, to)
	serr := p.view.Rename(from, to)
	w.same(rt, fmt.Sprintf("Rename(%q, %q)", from, to), errString(oerr, -2), errString(serr, -2))
}

func (w *diffWorld) link(rt *rapid.T) {
	_, p := w.proc(rt)
	from, to := w.name(rt, "from"), w.name(rt, "to")
	oerr := lease.OSFS{}.Link(from, to)
	serr := p.view.Link(from, to)
	w.same(rt, fmt.Sprintf("Link(%q, %q)", from, to), errString(oerr, -2), errString(serr, -2))
}

// readDir lists a directory on both; on the kernel also with
// ReadDirPrefix (lease.PrefixLister, which the simulator does not offer),
// which must list what ReadDir lists of the names with the prefix.
func (w *diffWorld) readDir(rt *rapid.T) {
	_, p := w.proc(rt)
	dir := w.name(rt, "dir")
	on, oerr := lease.OSFS{}.ReadDir(dir)
	sn, serr := p.view.ReadDir(dir)
	w.same(rt, fmt.Sprintf("ReadDir(%q)", dir), fmt.Sprintf("%q, %s", on, errString(oerr, -2)), fmt.Sprintf("%q, %s", sn, errString(serr, -2)))
	if !slices.IsSorted(on) {
		rt.Fatalf("ReadDir(%q) on linux is not sorted: %q", dir, on)
	}
	prefix := rapid.SampledFrom([]string{"", "a", "x", "e"}).Draw(rt, "prefix")
	pn, perr := lease.OSFS{}.ReadDirPrefix(dir, prefix)
	var want []string
	for _, n := range sn {
		if strings.HasPrefix(n, prefix) {
			want = append(want, n)
		}
	}
	w.same(rt, fmt.Sprintf("ReadDirPrefix(%q, %q)", dir, prefix), fmt.Sprintf("%q, %s", pn, errString(perr, -2)), fmt.Sprintf("%q, %s", want, errString(serr, -2)))
}

// writeFile is lease.WriteFile, the three calls as one action.
func (w *diffWorld) writeFile(rt *rapid.T) {
	_, p := w.proc(rt)
	name := w.name(rt, "name")
	b := []byte(rapid.SampledFrom(payloads).Draw(rt, "data"))
	oerr := lease.WriteFile(lease.OSFS{}, name, b, 0o644)
	serr := lease.WriteFile(p.view, name, b, 0o644)
	// The failed write of WriteFile names a descriptor each side numbers
	// its own way, closed by now: compare its number out.
	w.same(rt, fmt.Sprintf("WriteFile(%q, %d bytes)", name, len(b)), fdless(errString(oerr, -2)), fdless(errString(serr, -2)))
}

func fdless(s string) string {
	if i := strings.Index(s, `"fd `); i >= 0 {
		if j := strings.IndexByte(s[i+1:], '"'); j >= 0 {
			return s[:i] + `"fd #"` + s[i+j+2:]
		}
	}
	return s
}

// compareTrees compares everything below the directory on both sides:
// each name, whether it is a directory, a file's mode and content.
func (w *diffWorld) compareTrees(rt *rapid.T) {
	var osTree []string
	err := filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		s := path + " " + fi.Mode().String()
		if !fi.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s += " " + digest(b)
		}
		osTree = append(osTree, s)
		return nil
	})
	if err != nil {
		rt.Fatal(err)
	}
	var simTree []string
	v := w.procs[0].view
	for _, f := range w.sfs.Files() {
		if f.Name != w.dir && !strings.HasPrefix(f.Name, w.dir+"/") {
			continue
		}
		fi, err := v.Stat(f.Name)
		if err != nil {
			rt.Fatal(err)
		}
		s := f.Name + " " + (fi.Mode() &^ w.umask).String()
		if !f.Dir {
			s += " " + digest(f.Data)
		}
		simTree = append(simTree, s)
	}
	slices.Sort(osTree)
	slices.Sort(simTree)
	w.same(rt, "the tree", strings.Join(osTree, "\n    "), strings.Join(simTree, "\n    "))
}

func digest(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
	}
	if bytes.Count(b, []byte{0}) > 0 {
		return fmt.Sprintf("%q (with zeros)", b)
	}
	return strconv.Quote(string(b))
}
