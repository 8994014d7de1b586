package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// panicAtRenewal is a store whose fourth renewal panics.
type panicAtRenewal struct {
	lease.Store
	renewals int
}

func (s *panicAtRenewal) Renew(cur lease.Record, ttl time.Duration) (lease.Record, error) {
	if s.renewals++; s.renewals == 4 {
		var xs []int
		_ = xs[s.renewals] // index out of range
	}
	return s.Store.Renew(cur, ttl)
}

// registerMisbehaving registers, in the test binary run as the command,
// a variant whose second process blocks on a channel nothing sends on,
// and one whose store panics.
func registerMisbehaving() {
	v, err := lease.LookupVariant("reference")
	if err != nil {
		panic(err)
	}
	blocks, panics, random := v, v, v
	run, newStore := v.Run, v.NewStore
	blocks.Name, blocks.Summary = "cmd-test-blocks", "the reference, whose second process waits on a channel"
	blocks.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		if p.PID() != 1000 {
			<-make(chan struct{})
		}
		return run(p, s, path, cfg)
	}
	panics.Name, panics.Summary = "cmd-test-panics", "the reference, whose store panics at its fourth renewal"
	panics.NewStore = func(p lease.Proc, path string) lease.Store { return &panicAtRenewal{Store: newStore(p, path)} }
	random.Name, random.Summary = "cmd-test-rand", "the reference, started after a sleep drawn from the global math/rand"
	random.Run = func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
		p.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		return run(p, s, path, cfg)
	}
	for _, x := range []lease.Variant{blocks, panics, random} {
		if err := lease.Register(x); err != nil {
			panic(err)
		}
	}
}

// asCommand runs the test binary as the command, with the misbehaving
// variants, and returns its exit status and output.
func asCommand(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "LEASELAB_TEST_MAIN=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("leaselab %s: still running after 60 s\n%s", strings.Join(args, " "), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// A variant whose code waits on a channel stops its run for ever; the
// command says so, names the run, and exits 2, instead of waiting
// silently (it did, for check, replay and explore alike).
func TestStuckRunReported(t *testing.T) {
	for _, args := range [][]string{
		{"check", "-variant", "cmd-test-blocks", "-runs", "5"},
		{"replay", "-variant", "cmd-test-blocks", "-seed", "3"},
		{"explore", "-variant", "cmd-test-blocks", "-procs", "2"},
	} {
		code, out, errOut := asCommand(t, []string{"LEASELAB_STUCK=1s"}, args...)
		named := "a run of variant cmd-test-blocks (seed " // (an exploration's runs have no seed)
		if args[0] == "explore" {
			named = "a run of variant cmd-test-blocks has taken"
		}
		if code != 2 || !strings.Contains(errOut, named) || !strings.Contains(errOut, "has taken no step for 1s") {
			t.Errorf("%s: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
	if code, _, errOut := asCommand(t, []string{"LEASELAB_STUCK=soon"}, "check", "-variant", "reference", "-runs", "1"); code != 2 || !strings.Contains(errOut, "LEASELAB_STUCK") {
		t.Errorf("a bad LEASELAB_STUCK: exit %d %s", code, errOut)
	}
}

// The watchdog's tick is positive whatever the limit: LEASELAB_STUCK=1ns
// crashed the command with time.NewTicker's panic.
func TestWatchTickPositive(t *testing.T) {
	for _, after := range []time.Duration{1, 3, 4, 7, time.Microsecond, time.Millisecond, time.Second, time.Hour} {
		if tick := watchTick(after); tick <= 0 || tick > time.Second {
			t.Errorf("LEASELAB_STUCK=%v: tick %v", after, tick)
		}
	}
	code, _, errOut := asCommand(t, []string{"LEASELAB_STUCK=1ns"}, "check", "-variant", "cmd-test-blocks", "-runs", "5")
	if code != 2 || !strings.Contains(errOut, "has taken no step for 1ns") || strings.Contains(errOut, "NewTicker") {
		t.Errorf("LEASELAB_STUCK=1ns: exit %d %s", code, errOut)
	}
}

// A variant whose code panics is a process that exits on its own: check
// reports no-own-exit with where it panicked, and a replay line, instead
// of dying with the simulator's stack.
func TestPanickingVariantReported(t *testing.T) {
	code, out, errOut := asCommand(t, nil, "check", "-variant", "cmd-test-panics", "-runs", "20", "-props", "no-own-exit")
	if code != 1 || !strings.Contains(out, "VIOLATION no-own-exit") || !strings.Contains(out, "exited 2 (panic: runtime error: index out of range [4] with length 0 at leaselab/watchdog_test.go:") ||
		!strings.Contains(out, "replay: leaselab replay -variant cmd-test-panics") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// A variant whose code draws from the global math/rand makes runs that
// no seed replays: check runs one again and says so, instead of printing
// replay lines that lie; a variant that stays inside the simulator gets
// no such warning.
func TestNondeterministicVariantReported(t *testing.T) {
	const warning = "gave another trace: the variant's code reaches outside the simulator"
	code, out, errOut := asCommand(t, nil, "check", "-variant", "cmd-test-rand", "-runs", "5")
	if code > 1 || !strings.Contains(out, "# WARNING: run ") || !strings.Contains(out, warning) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	// -markdown prints only the verdict table: the warning goes to
	// standard error (it was not printed at all).
	code, out, errOut = asCommand(t, nil, "check", "-variant", "cmd-test-rand", "-runs", "5", "-markdown")
	if code > 1 || !strings.Contains(errOut, "WARNING: cmd-test-rand: run ") {
		t.Errorf("-markdown: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = asCommand(t, nil, "check", "-variant", "reference", "-runs", "5", "-json")
	if code != 0 || strings.Contains(out, warning) || !strings.Contains(out, `"replays":true`) {
		t.Errorf("reference: exit %d\n%s%s", code, out, errOut)
	}
}
