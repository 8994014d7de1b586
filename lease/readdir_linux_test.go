package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// dirNames lists dir's names that begin with prefix, as the os package
// does (sorted).
func dirNames(t *testing.T, dir, prefix string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A listing of a crowded directory takes several getdents64 calls, and
// names linked and unlinked between two of them are listed wrongly: some
// of the new ones missing, some of the removed ones still there. ReadDir
// lists again under an inotify watch until a listing saw no change, and
// returns the directory as it was at an instant.
func TestReadDirSettles(t *testing.T) {
	dir := t.TempDir()
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk.%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	churn := func() { // once, between the first two calls
		readDirHook = nil
		for i := range 200 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("junk.%04d", i*15)))
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("new.%04d", i)), nil, 0o644)
		}
	}
	defer func() { readDirHook = nil }()
	final := func() []string { return dirNames(t, dir, "") }

	readDirHook = churn
	torn, calls, err := listOnce(dir, "", false)
	if err != nil {
		t.Fatal(err)
	}
	after := final()
	if calls < 2 {
		t.Fatalf("3,000 names listed in %d getdents64 call(s): the test needs several", calls)
	}
	if slices.Equal(torn, after) {
		t.Logf("this file system listed the churned directory exactly (%d calls): the torn case did not arise", calls)
	} else {
		t.Logf("one pass over %d calls, churned between the first two: %d names, the directory then %d", calls, len(torn), len(after))
	}

	// Reset: the same churn again, undone first.
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk.%04d", i*15)), nil, 0o644)
		os.Remove(filepath.Join(dir, fmt.Sprintf("new.%04d", i)))
	}
	readDirHook = churn
	names, err := OSFS{}.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if readDirHook != nil {
		t.Fatal("the churn never ran: the listing took one call")
	}
	if after := final(); !slices.Equal(names, after) {
		t.Errorf("ReadDir returned %d names, the directory holds %d: not an instant's listing", len(names), len(after))
	}

	// ReadDirPrefix too, of the names the churn removes: their events
	// make it list again.
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk.%04d", i*15)), nil, 0o644)
		os.Remove(filepath.Join(dir, fmt.Sprintf("new.%04d", i)))
	}
	readDirHook = churn
	names, err = OSFS{}.ReadDirPrefix(dir, "junk.")
	if err != nil {
		t.Fatal(err)
	}
	if junk := dirNames(t, dir, "junk."); !slices.Equal(names, junk) {
		t.Errorf("ReadDirPrefix returned %d names, the directory holds %d of them: not an instant's listing", len(names), len(junk))
	}
}

// ReadDirPrefix lists a lock's own names in a directory other programs
// keep changing, and in one of more names than MaxReadDir's bytes hold:
// only changes to its names make it list again, only its names count.
// (ReadDir in the same directories: EAGAIN under the churn, EFBIG.)
func TestReadDirPrefixIgnoresOtherNames(t *testing.T) {
	dir := t.TempDir()
	for i := range 3000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("other.%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"job.lock.7", "job.lock.8", "job.lock.boot.1"}
	for _, n := range want {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Another program's names come and go between every two getdents64
	// calls of every listing.
	i := 0
	readDirHook = func() {
		i++
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("churn.%d", i)), nil, 0o644)
		os.Remove(filepath.Join(dir, fmt.Sprintf("churn.%d", i-1)))
	}
	defer func() { readDirHook = nil }()
	if _, err := (OSFS{}).ReadDir(dir); !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("ReadDir under churn: %v, want EAGAIN (else this test shows nothing)", err)
	}
	got, err := OSFS{}.ReadDirPrefix(dir, "job.lock.")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadDirPrefix under churn = %v, %v; want %v", got, err, want)
	}
	// Changes to its names during a listing are seen: it lists again and
	// returns the directory as of an instant. A hundred names of its own
	// linked between two getdents64 calls, so that some land behind the
	// listing's position whatever the directory's order (one name alone
	// was missed or not as its hash fell, and a mutant that ignored its
	// own names' events passed).
	own := func() []string { return dirNames(t, dir, "job.lock.") }
	link := func() {
		readDirHook = nil
		for i := range 100 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("job.lock.%d", 100+i)), nil, 0o644)
		}
	}
	unlink := func() {
		for i := range 100 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("job.lock.%d", 100+i)))
		}
	}
	readDirHook = link
	torn, calls, err := listOnce(dir, "job.lock.", true)
	if err != nil || calls < 2 {
		t.Fatalf("one pass: %d calls, %v (the test needs several)", calls, err)
	}
	if slices.Equal(torn, own()) {
		t.Fatalf("one pass with 100 of its names linked between two calls listed all %d: the torn case did not arise, and the test shows nothing", len(torn))
	}
	unlink()
	// ReadDirPrefix lists a directory that takes several calls twice,
	// the second time under its inotify watch: the links land in that
	// second listing, which only their events tell it to redo.
	gaps := 0
	readDirHook = func() { gaps++ }
	if _, _, err := listOnce(dir, "job.lock.", true); err != nil {
		t.Fatal(err)
	}
	hooks := 0
	readDirHook = func() {
		if hooks++; hooks == gaps+1 {
			link()
		}
	}
	got, err = OSFS{}.ReadDirPrefix(dir, "job.lock.")
	if hooks <= gaps {
		t.Fatalf("ReadDirPrefix listed once (%d gaps between calls, %d in one listing): the links never landed in its watched listing", hooks, gaps)
	}
	if want := own(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("ReadDirPrefix with 100 links of its own during the listing = %d names, %v; want the directory's %d", len(got), err, len(want))
	}
	readDirHook = nil
	unlink()
	// Past MaxReadDir in other names.
	for i := 3000; i < 45000; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("other.%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (OSFS{}).ReadDir(dir); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("ReadDir of 45,000 names: %v, want EFBIG (else this test shows nothing)", err)
	}
	if got, err := (OSFS{}).ReadDirPrefix(dir, "job.lock."); err != nil || !slices.Equal(got, want) {
		t.Errorf("ReadDirPrefix of 45,000 other names = %v, %v; want the lock's %v", got, err, want)
	}
}

// inotifyInstances counts the process's open inotify instances.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range ents {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// crowdedDir makes a directory of n names, which a listing takes several
// getdents64 calls over.
func crowdedDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("junk.%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, calls, err := listOnce(dir, "", false); err != nil || calls < 2 {
		t.Fatalf("%d names listed in %d getdents64 call(s), %v: the test needs several", n, calls, err)
	}
	return dir
}

// The listings of crowded directories, many and concurrent, share one
// inotify instance, kept for the process: never more than one open at a
// time, during the listings or after. (Before, each listing made its own:
// eight at once held eight.)
func TestReadDirOneInotifyInstance(t *testing.T) {
	dir := crowdedDir(t, 2000)
	before := inotifyInstances(t)
	var mu sync.Mutex
	most := 0
	readDirHook = func() { // between two getdents64 calls: under the watch, the second time
		n := inotifyInstances(t)
		mu.Lock()
		most = max(most, n)
		mu.Unlock()
	}
	defer func() { readDirHook = nil }()
	for range 50 {
		if _, err := (OSFS{}).ReadDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := (OSFS{}).ReadDirPrefix(dir, "junk.1"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	readDirHook = nil
	if after := inotifyInstances(t); after > before+1 || most > before+1 {
		t.Errorf("inotify instances: %d before 130 listings (80 of them 8 at a time), at most %d during them, %d after; want at most one more", before, most, after)
	}
}

// A process that has listed a crowded directory once lists it again when
// no inotify instance can be had: it holds its own. (Before, every
// listing made one, and a user's 128 taken by other processes failed
// them all with EMFILE.) Out of instances is played by out of
// descriptors, which inotify_init1 fails with EMFILE too, and which
// touches no other process: the soft RLIMIT_NOFILE is lowered, for the
// one listing, to leave the one descriptor it opens the directory with.
// The error of an instance that could not be made keeps its errno and
// says what ran out.
func TestReadDirKeepsItsInotifyInstance(t *testing.T) {
	dir := crowdedDir(t, 2000)
	want := dirNames(t, dir, "")
	if _, err := (OSFS{}).ReadDir(dir); err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	free, err := syscall.Dup(0) // the lowest free descriptor
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(free)
	lim := old
	lim.Cur = uint64(free) + 1
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip("cannot lower RLIMIT_NOFILE:", err)
	}
	// One descriptor free: the second of two fails.
	one, err1 := syscall.Dup(0)
	_, err2 := syscall.Dup(0)
	if err1 == nil {
		syscall.Close(one)
	}
	names, err := OSFS{}.ReadDir(dir)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err1 != nil || !errors.Is(err2, syscall.EMFILE) {
		t.Fatalf("two descriptors under the lowered limit: %v, %v; want one, then EMFILE (else the test shows nothing)", err1, err2)
	}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("ReadDir with one descriptor free, after a first listing = %d names, %v; want its %d", len(names), err, len(want))
	}

	err = &fs.PathError{Op: "readdir", Path: dir, Err: ranOut("inotify instance", syscall.EMFILE)}
	if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "inotify instance for the listing: too many open files (fs.inotify.max_user_instances") {
		t.Errorf("an instance that could not be made: %v, want EMFILE and the limit named", err)
	}
	if err := ranOut("inotify watch", syscall.ENOENT); err != syscall.ENOENT {
		t.Errorf("a watch of a missing directory: %#v, want ENOENT as it is", err)
	}
}
