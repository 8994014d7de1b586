package spec_test

import (
	"fmt"

	"github.com/leaselab/leaselab/spec"
)

// Which of the seed's known bugs does a fix remove? Search for each
// catalogued bug, with the bug's own faults, on the fix instead of the
// seed. Here the fix is seed-link, the post's temporary file published
// with link(2): it removes the bugs that come from the empty lock file and
// keeps the rest. (Give your own registered variant's name instead; see
// example_fix_test.go at the root.)
func Example_whichBugsAFixRemoves() {
	for _, b := range spec.Bugs {
		if b.Variant != "seed" {
			continue
		}
		b.Variant = "seed-link"
		_, n, found := b.Find(1, "random", 1000)
		verdict := "removed (not found in 1000 runs)"
		if found {
			verdict = fmt.Sprintf("still there (run %d)", n)
		}
		fmt.Printf("%-20s %s\n", b.ID, verdict)
	}
	// Output:
	// empty-after-create   removed (not found in 1000 runs)
	// empty-after-renew    removed (not found in 1000 runs)
	// empty-after-enospc   removed (not found in 1000 runs)
	// takeover-race        still there (run 747)
	// paused-leader        still there (run 1)
	// clock-skew           still there (run 1)
	// clock-jump           still there (run 9)
	// term-before-handler  still there (run 3)
	// term-resurrects      still there (run 9)
	// term-wedges          removed (not found in 1000 runs)
	// paused-creator       removed (not found in 1000 runs)
	// truncated-read       removed (not found in 1000 runs)
}
