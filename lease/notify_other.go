//go:build !linux

package lease

// inotify is Linux's; elsewhere the real runtime has no Notifier and the
// reference variant polls.
type inotify struct{}
