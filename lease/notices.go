package lease

import "sync"

// Notices counts a store's change notices for its [ChangeFeed]: the
// goroutine that receives them (a subscription, a watch, a LISTEN) calls
// Notify for each, or NotifyRelease for one that says the record was
// released, and watchers wait on Changes. The zero value is ready.
type Notices struct {
	mu   sync.Mutex
	n    uint64
	rel  uint64 // the number of the latest release notice (0: none)
	next chan struct{}
}

// Changes implements ChangeFeed.
func (c *Notices) Changes() (uint64, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(chan struct{})
	}
	return c.n, c.next
}

// Notify counts one notice and wakes every watcher waiting for it.
func (c *Notices) Notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count()
}

// NotifyRelease counts one notice that says the record was released or
// deleted (nobody holds the lease as of the change it announces), and
// wakes every watcher waiting for it.
func (c *Notices) NotifyRelease() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count()
	c.rel = c.n
}

func (c *Notices) count() {
	c.n++
	if c.next != nil {
		close(c.next)
	}
	c.next = make(chan struct{})
}

// Released implements ReleaseHint: the latest notice is a release
// notice, counted after token.
func (c *Notices) Released(token uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rel == c.n && c.n > token
}
