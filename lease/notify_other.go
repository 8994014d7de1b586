//go:build !linux

package lease

import (
	"context"
	"time"
)

// inotify is Linux's; elsewhere the real runtime has no Notifier and the
// reference variant polls.
type inotify struct{}

// close has nothing to close.
func (*inotify) close() {}

// WaitChangeContext implements ContextWaiter: without a Notifier it is
// never asked, and only waits.
func (p *osProc) WaitChangeContext(ctx context.Context, _ string, _ uint64, until time.Duration) bool {
	p.SleepContext(ctx, until-p.Mono())
	return false
}
