package main

import (
	"slices"
	"testing"
	"time"

	"github.com/leaselab/leaselab/lease"
)

// namingProc is a Proc with a Notifier that records the lease names it is
// given (lease.NameWatcher); nothing else of it is called.
type namingProc struct {
	lease.Proc
	names []string
}

func (p *namingProc) ChangeToken(string) uint64                     { return 0 }
func (p *namingProc) WaitChange(string, uint64, time.Duration) bool { return false }
func (p *namingProc) WatchName(path string)                         { p.names = append(p.names, path) }

// A history's Proc (-events) passes the lease's name on to the real
// runtime's watch: without it, every file written beside the lease woke
// the watchers of a run with -events (a review: 1,142 listings for 20,000
// lines of a log beside the lease, against 2 without -events).
func TestHistoryForwardsWatchName(t *testing.T) {
	inner := &namingProc{}
	p := withHistory(inner, nil, nil)
	w, ok := p.(lease.NameWatcher)
	if !ok {
		t.Fatal("a history's Proc over a Notifier is no NameWatcher")
	}
	w.WatchName("/var/lib/job/lease")
	if !slices.Equal(inner.names, []string{"/var/lib/job/lease"}) {
		t.Errorf("the real runtime was given %q", inner.names)
	}
}
