//go:build !linux

package lease

import "time"

// monoOrigin is monoNow's origin.
var monoOrigin = time.Now()

// monoNow reads the monotonic clock (Go's, which on this system may or
// may not count the time the machine spends suspended), as a duration
// since the package's start.
func monoNow() time.Duration { return time.Since(monoOrigin) }

// afterMono implements AfterMono with a runtime timer, which counts Go's
// monotonic clock as Mono does: f is called once Mono reaches at, and
// again at the instant a move names if it has been called, as
// time.AfterFunc and Timer.Reset do.
func (p *osProc) afterMono(at time.Duration, f func()) func(time.Duration) {
	t := runtimeTimer(at-p.Mono(), f)
	return func(at time.Duration) {
		if at < 0 {
			t.Stop()
			return
		}
		t.Reset(at - p.Mono())
	}
}
