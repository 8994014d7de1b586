// Command flockholder is the smallest Go program that holds a flock: it
// locks the file named by its argument, says "locked", and sleeps until
// it is killed. BenchmarkFlockHandover measures how soon the kernel hands
// its lock over after SIGKILL, beside a leaselab leader's.
package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: flockholder LOCKFILE")
		os.Exit(2)
	}
	fd, err := unix.Open(os.Args[1], unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err == nil {
		err = unix.Flock(fd, unix.LOCK_EX)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flockholder:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	for {
		time.Sleep(time.Hour)
	}
}
