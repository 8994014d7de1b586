package lease

import "time"

// Clock is a process's view of time. Every wait the algorithm makes goes
// through it, so a simulator can run processes in virtual time, pause them,
// and give each its own offset and rate.
type Clock interface {
	// Now reads the wall clock (CLOCK_REALTIME): what time.Now().Unix() sees.
	// It can jump when an operator or NTP steps the clock.
	Now() time.Time
	// Mono reads the monotonic clock (CLOCK_MONOTONIC) as a duration since an
	// arbitrary origin. It never jumps but may run at a slightly wrong rate.
	Mono() time.Duration
	// Sleep blocks for d on the monotonic clock.
	Sleep(d time.Duration)
	// NewTicker returns a ticker with time.Ticker's semantics: ticks every d
	// on the monotonic clock, a receiver that falls behind gets one pending
	// tick at once and the missed ones are dropped.
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of time.Ticker the algorithms use.
type Ticker interface {
	// Wait blocks until the next tick.
	Wait()
	// Stop stops the ticker.
	Stop()
}
