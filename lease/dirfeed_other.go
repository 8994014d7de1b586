//go:build !linux

package lease

import "errors"

// DirFeed calls a function for every write to some files of one
// directory; on this system it cannot start (no inotify), and the store
// that asked for one polls.
type DirFeed struct{}

// WatchFiles fails on this system.
func WatchFiles(dir string, notify func(), names ...string) (*DirFeed, error) {
	return nil, errors.New("watching files for writes needs inotify (Linux)")
}

// Close does nothing.
func (d *DirFeed) Close() error { return nil }
