package lease_test

import (
	"context"
	"time"

	"github.com/leaselab/leaselab/lease"
	"github.com/leaselab/leaselab/spec"
)

// clockMutants are mistakes of a runtime's clock rather than of the
// algorithm: the runtime a variant is handed breaks lease.Clock's
// contract.
var clockMutants = []mutant{
	{
		name: "redis~monotonic-clock", base: "redis",
		mistake:  "the runtime's Mono is CLOCK_MONOTONIC, which stops while the machine is suspended (the OS runtime's until 2026-12-08): a leader whose machine alone is suspended past its lease comes back with its deadline still ahead while the server has expired its record and another machine leads",
		property: spec.ExclusiveLeadership,
		newStore: serverStore("redis", func(p lease.Proc, s lease.Store) lease.Store {
			return monotonicStore{s, p.(suspendingProc)}
		}),
		run: func(p lease.Proc, s lease.Store, path string, cfg lease.Config) error {
			return lease.RunReferenceWith(0, true)(monotonicRuntime{p.(suspendingProc)}, s, path, cfg)
		},
		exploreWhy: "no exploration suspends a machine (its pauses are SIGSTOPs)",
		confirm:    &confirmation{faults: "suspend"},
		missed:     "a suspend is opt-in (-faults all draws as it did before it); -faults suspend finds it in its first runs",
	},
}

// suspendingProc is what the simulator's processes offer: every optional
// ability the reference asks a Proc for, and Suspended.
type suspendingProc interface {
	lease.Proc
	lease.Notifier
	lease.ShutdownNotifier
	lease.ContextWaiter
	lease.MonoTimer
	lease.BootIDer
	lease.Instancer
	// Suspended is how long the process's machine has been suspended
	// (CLOCK_BOOTTIME less CLOCK_MONOTONIC).
	Suspended() time.Duration
}

// monotonicRuntime is a simulated process as a runtime on CLOCK_MONOTONIC
// would be: its Mono, its timer, its sleeps and its waits' deadlines
// leave out the time its machine spent suspended. (Its tickers are the
// simulator's; the reference uses none.)
type monotonicRuntime struct{ suspendingProc }

// Sleep sleeps until Mono has advanced by d: a sleep across a suspension
// ends that much later.
func (m monotonicRuntime) Sleep(d time.Duration) {
	until := m.Mono() + d
	for left := d; left > 0; left = until - m.Mono() {
		m.suspendingProc.Sleep(left)
	}
}

// SleepContext is Sleep cut short when ctx is done.
func (m monotonicRuntime) SleepContext(ctx context.Context, d time.Duration) {
	until := m.Mono() + d
	for left := d; left > 0 && ctx.Err() == nil; left = until - m.Mono() {
		m.suspendingProc.SleepContext(ctx, left)
	}
}

func (m monotonicRuntime) Mono() time.Duration {
	return m.suspendingProc.Mono() - m.Suspended()
}

// Lead reports a deadline on CLOCK_MONOTONIC, which the simulator reads
// on its Mono: restated there as of the suspensions so far. (Without it
// a process whose machine was suspended before it led was judged to lead
// a suspension's length short of its belief, and honest-role blamed
// what CLOCK_MONOTONIC does right: TestMonotonicClockLeadRestated.)
func (m monotonicRuntime) Lead(epoch int64, deadline time.Duration) {
	m.suspendingProc.Lead(epoch, deadline+m.Suspended())
}

// AfterMono arms the simulator's timer where CLOCK_MONOTONIC will read at
// if the machine is not suspended again, and, if it is, arms it again
// when it fires early.
func (m monotonicRuntime) AfterMono(at time.Duration, f func()) func(time.Duration) {
	target := at
	var move func(time.Duration)
	move = m.suspendingProc.AfterMono(at+m.Suspended(), func() {
		if m.Mono() < target {
			move(target + m.Suspended())
			return
		}
		f()
	})
	return func(at time.Duration) {
		if at >= 0 {
			target = at
			at += m.Suspended()
		}
		move(at)
	}
}

func (m monotonicRuntime) WaitChange(dir string, token uint64, until time.Duration) bool {
	return m.suspendingProc.WaitChange(dir, token, until+m.Suspended())
}

func (m monotonicRuntime) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	return m.suspendingProc.WaitChangeContext(ctx, dir, token, until+m.Suspended())
}

// monotonicStore is a server's store whose notices a monotonicRuntime
// waits for: their deadlines are on its clock.
type monotonicStore struct {
	lease.Store
	p suspendingProc
}

func (s monotonicStore) notifier() lease.StoreNotifier { return s.Store.(lease.StoreNotifier) }

func (s monotonicStore) ChangeToken(dir string) uint64 { return s.notifier().ChangeToken(dir) }

func (s monotonicStore) WaitChangeContext(ctx context.Context, dir string, token uint64, until time.Duration) bool {
	return s.notifier().WaitChangeContext(ctx, dir, token, until+s.p.Suspended())
}

func (s monotonicStore) Released(token uint64) bool {
	return s.notifier().(lease.ReleaseHint).Released(token)
}

func (s monotonicStore) Unwrap() lease.Store { return s.Store }
