package sim

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// A run whose process's code waits on something the simulator does not
// control (a channel, a mutex held across a Proc call, a goroutine
// started with the go statement, real I/O or time.Sleep), or loops
// without a system call, never hands control back: its world stops, and
// with it the search that waits for the run. The simulator cannot
// interrupt it; Running lets a caller with a clock of its own (the
// leaselab command's watchdog) see that a run has stopped moving and say
// which.

// Flight is a run in progress, as Running reports it.
type Flight struct {
	// ID tells the runs of a process apart (1, 2, ... in their start order).
	ID uint64
	// Variant and Seed name the run (Config.Variant, Config.Seed: a
	// search's replay line is its setup flags and -seed Seed).
	Variant string
	Seed    uint64
	// Beats rises as the run's world takes steps (every 256 turns of its
	// scheduler); it stays put while the run is stuck.
	Beats uint64
}

// flight is a world's entry in the registry of runs in progress.
type flight struct {
	id      uint64
	variant string
	seed    uint64
	turns   uint64 // the world's own count (no other goroutine reads it)
	beats   atomic.Uint64
}

var flights struct {
	sync.Mutex
	next   uint64
	worlds []*World
}

// takeOff registers w as running.
func (w *World) takeOff() {
	flights.Lock()
	flights.next++
	w.fl.id, w.fl.turns, w.fl.variant, w.fl.seed = flights.next, 0, w.cfg.Variant, w.cfg.Seed
	w.fl.beats.Store(0)
	flights.worlds = append(flights.worlds, w)
	flights.Unlock()
}

// land removes w from the runs in progress.
func (w *World) land() {
	flights.Lock()
	if i := slices.Index(flights.worlds, w); i >= 0 {
		last := len(flights.worlds) - 1
		flights.worlds[i] = flights.worlds[last]
		flights.worlds[last] = nil
		flights.worlds = flights.worlds[:last]
	}
	flights.Unlock()
}

// turn counts one turn of w's scheduler.
func (w *World) turn() {
	if w.fl.turns++; w.fl.turns&255 == 0 {
		w.fl.beats.Store(w.fl.turns >> 8)
	}
}

// Running returns the runs in progress in this process (Run, World.Run),
// in their start order.
func Running() []Flight {
	flights.Lock()
	defer flights.Unlock()
	out := make([]Flight, 0, len(flights.worlds))
	for _, w := range flights.worlds {
		out = append(out, Flight{ID: w.fl.id, Variant: w.fl.variant, Seed: w.fl.seed, Beats: w.fl.beats.Load()})
	}
	slices.SortFunc(out, func(a, b Flight) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
