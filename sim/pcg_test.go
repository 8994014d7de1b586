package sim

import (
	"math/rand/v2"
	"testing"
)

// TestPCGIsIntN holds PCG.Choose to rand.Rand.IntN on the same source:
// the runs' traces, and every replay line's hash, depend on it.
func TestPCGIsIntN(t *testing.T) {
	ns := []int{1, 2, 3, 7, 8, 46, 1000, 45001, 100001, 1 << 20, 1<<62 + 1, 3 << 61, 1<<63 - 1}
	for seed := uint64(0); seed < 50; seed++ {
		p := NewPCG(seed, 7)
		r := rand.New(rand.NewPCG(seed, 7))
		for i := 0; i < 2000; i++ {
			n := ns[i%len(ns)]
			if got, want := p.Choose(n), r.IntN(n); got != want {
				t.Fatalf("seed %d draw %d: Choose(%d) = %d, IntN = %d", seed, i, n, got, want)
			}
		}
	}
}
