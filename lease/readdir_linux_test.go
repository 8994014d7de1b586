package lease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
