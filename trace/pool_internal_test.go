package trace

import (
	"strings"
	"testing"
)

// A trace whose strings outgrew what the pool keeps is not recycled
// either: its arena would be handed to run after run.
func TestReleaseDropsHugeArenas(t *testing.T) {
	for range 3 {
		tr := New()
		tr.Str(strings.Repeat("x", 2*maxPooledArena))
		tr.Release()
		if got := cap(New().arena); got > maxPooledArena {
			t.Fatalf("a new trace was handed a released trace's %d bytes of strings", got)
		}
	}
}
