package lease

import "sync"

// Notices counts a store's change notices for its [ChangeFeed]: the
// goroutine that receives them (a subscription, a watch, a LISTEN) calls
// Notify for each, and watchers wait on Changes. The zero value is ready.
type Notices struct {
	mu   sync.Mutex
	n    uint64
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
	c.n++
	if c.next != nil {
		close(c.next)
	}
	c.next = make(chan struct{})
}
