package lease

import (
	"slices"
	"testing"
)

// A watcher whose takeovers keep failing (a server down for hours)
// remembers the newest maxTried of their nonces, not every one: the list
// grew by one a failed takeover, for good.
func TestTriedBounded(t *testing.T) {
	r := &Reference{}
	for i := range 1000 {
		r.unknownWrite(Record{Nonce: uint64(i + 1)})
	}
	if len(r.tried) != maxTried || !slices.Contains(r.tried, 1000) || slices.Contains(r.tried, 1000-maxTried) {
		t.Errorf("after 1,000 failed takeovers: %d nonces remembered, the newest %v, the last evicted %v; want the newest %d", len(r.tried), slices.Contains(r.tried, 1000), slices.Contains(r.tried, 1000-maxTried), maxTried)
	}
}
