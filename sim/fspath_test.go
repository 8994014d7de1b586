package sim

import (
	"path"
	"testing"

	"pgregory.net/rapid"
)

// isClean is exactly "absolute, and path.Clean leaves it alone", on every
// string of the bytes a path's components are made of.
func TestIsCleanIsPathClean(t *testing.T) {
	for _, p := range []string{"", "/", "//", "/a", "/a/", "/a//b", "/.", "/..", "/a/.", "/a/..", "/./a", "/../a",
		"/a/.b", "/a/..b", "/a/b.", "/a/.../b", "a", "a/b", "./a", "/tmp/leader.lock", "/tmp/x/../leader.lock"} {
		if got, want := isClean(p), p != "" && p[0] == '/' && path.Clean(p) == p; got != want {
			t.Errorf("isClean(%q) = %v, want %v", p, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.StringOfN(rapid.SampledFrom([]rune{'/', '.', 'a', 'b'}), 0, 12, -1).Draw(t, "p")
		if got, want := isClean(p), p != "" && p[0] == '/' && path.Clean(p) == p; got != want {
			t.Fatalf("isClean(%q) = %v, want %v", p, got, want)
		}
	})
}
