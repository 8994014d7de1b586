package trace

import (
	"fmt"
	"math"
	"testing"
)

// Secs prints as fmt's "%d.%06ds" did (it was written with fmt, which a
// run called for every fault that fired), negative values and extremes
// included.
func TestSecsAsFmt(t *testing.T) {
	for _, ns := range []int64{0, 1, 999, 1000, 1001, 999999, 1e6, 1e9 - 1, 1e9, 1234567891, 48e9, 86400e9 + 5e8, -1, -1000, -1234567891, math.MaxInt64, math.MinInt64 + 1} {
		neg, a := "", ns
		if a < 0 {
			neg, a = "-", -a
		}
		want := fmt.Sprintf("%s%d.%06ds", neg, a/1e9, a%1e9/1e3)
		if got := Secs(ns); got != want {
			t.Errorf("Secs(%d) = %q, want %q", ns, got, want)
		}
	}
}
