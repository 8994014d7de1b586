package lease

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

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
	final := func() []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}

	readDirHook = churn
	torn, calls, err := listOnce(dir)
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
}
