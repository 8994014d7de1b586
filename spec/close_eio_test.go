package spec

import (
	"syscall"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/trace"
)

// A close that fails (EIO) frees the descriptor all the same, and the
// flock lock it held, as Linux's close does whatever it reports: the
// simulator kept both, so a holder whose close failed held the lock for
// good in the model (and a retried close, a bug on Linux, where the
// number may be another's by then, passed). Process 100 locks the file
// and closes it, the close failing, then opens it again; process 200
// tries the lock at 1 ms.
func TestFailedCloseFreesTheDescriptor(t *testing.T) {
	v := toyVariant("toy-close-eio", false)
	v.Run = func(p lease.Proc, _ lease.Store, path string, cfg lease.Config) error {
		if p.PID() == 200 {
			p.Sleep(time.Millisecond)
		}
		fd, err := p.Open(path, lease.O_RDWR|lease.O_CREATE, 0o644)
		if err != nil {
			return nil
		}
		if p.PID() == 200 {
			p.(lease.FlockFS).Flock(fd, lease.LOCK_EX|lease.LOCK_NB)
			return nil
		}
		if p.(lease.FlockFS).Flock(fd, lease.LOCK_EX) == nil {
			p.Close(fd)
			p.Open(path, lease.O_RDWR, 0)
			p.Sleep(time.Hour)
		}
		return nil
	}
	registerOnce(t, v)
	tr, err := sim.Run(sim.Config{Variant: "toy-close-eio", Seed: 1, Horizon: 10 * time.Millisecond, Lease: lease.DefaultConfig(),
		Procs:      []sim.ProcSpec{{PID: 100}, {PID: 200}},
		SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond,
		Faults: []sim.Fault{{Kind: trace.FSError, Proc: 0, Call: "close", Nth: 1, Errno: syscall.EIO}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Release()
	var opens []int32
	closeFailed, locked := false, false
	for _, e := range tr.Events {
		if e.Kind != trace.EvSyscall {
			continue
		}
		switch {
		case e.Proc == 0 && e.Op == trace.OpOpen && e.Errno == 0:
			opens = append(opens, e.FD)
		case e.Proc == 0 && e.Op == trace.OpClose:
			closeFailed = e.Errno.Sys() == syscall.EIO
		case e.Proc == 1 && e.Op == trace.OpFlock:
			locked = e.Errno == 0
		}
	}
	if !closeFailed {
		t.Fatal("process 100's close did not fail: the fault was not injected")
	}
	if len(opens) != 2 || opens[0] != opens[1] {
		t.Errorf("process 100's opens returned %v: want the failed close's descriptor number again (it is free)", opens)
	}
	if !locked {
		t.Error("process 200 could not lock the file after process 100's failed close: its lock was kept")
	}
}
