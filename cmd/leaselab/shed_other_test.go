//go:build !linux

package main

import "testing"

// imageRSS needs Linux's /proc/PID/smaps: elsewhere the test that asks is
// skipped.
func imageRSS(t *testing.T, _ string) int {
	t.Helper()
	t.Skip("the executable's resident size needs /proc/PID/smaps (Linux)")
	return 0
}
