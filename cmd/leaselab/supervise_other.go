//go:build !linux

package main

import (
	"context"
	"os"
	"syscall"
)

// Outside Linux the supervisor has no subreaper and no parent-death
// signal: it kills the command's process group, and a descendant that
// leaves the group survives.

func selfExe() (string, error) { return os.Executable() }

func setSubreaper() bool { return false }

func setLimitMark(string) {}

func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func childPIDs() []int { return nil }

func statOf(int) (byte, int) { return 0, 0 }

func procIsOurs() bool { return true }

func procProblem() string { return "" }

// killStale finds nothing outside Linux: there is no /proc to read other
// processes' environments from.
func killStale(context.Context, string) int { return 0 }

func closeOnExecFrom(fd int) {
	for n := fd; n < 256; n++ {
		syscall.CloseOnExec(n)
	}
}

func bytesWaiting(int) int { return 0 }
