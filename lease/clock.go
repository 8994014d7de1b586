package lease

import "time"

// Clock is a process's view of time. Every wait the algorithm makes goes
// through it, so a simulator can run processes in virtual time, pause them,
// and give each its own offset and rate.
type Clock interface {
	// Now reads the wall clock (CLOCK_REALTIME): what time.Now().Unix() sees.
	// It can jump when an operator or NTP steps the clock.
	Now() time.Time
	// Mono reads the monotonic clock as a duration since an arbitrary
	// origin. It never jumps but may run at a slightly wrong rate. It counts
	// the time the machine spends suspended (the real runtime's is
	// CLOCK_BOOTTIME on Linux, not CLOCK_MONOTONIC, which stops meanwhile),
	// as a lease server's clock does and another machine's: the local
	// deadlines kept on it pass during a suspension, as the server's TTL
	// does, rather than after it.
	Mono() time.Duration
	// Sleep blocks for d on the monotonic clock. (The real runtime's
	// sleeps and tickers count CLOCK_MONOTONIC: across a suspension they
	// wake late by it, which delays a renewal or a look, never a
	// deadline: MonoTimer ends a term on Mono's clock.)
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
