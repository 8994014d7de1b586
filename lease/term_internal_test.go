package lease

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fixedClock is a Clock whose monotonic reading the test sets.
type fixedClock struct {
	Clock
	mono time.Duration
}

func (c *fixedClock) Mono() time.Duration { return c.mono }

// A term's context says why it ended, and says it the same at every
// call: DeadlineExceeded once the deadline has passed (before the timer
// ends it, and after), Canceled for a term ended before its deadline,
// even once the deadline has passed since. (A probe: the timer's
// cancellation turned DeadlineExceeded into Canceled.)
func TestTermContextErr(t *testing.T) {
	for _, c := range []struct {
		name        string
		endAt, then time.Duration // when the elector ends it (0: never), and when Err is asked
		want        error
	}{
		{"live", 0, 5 * time.Second, nil},
		{"past the deadline, before the timer", 0, 11 * time.Second, context.DeadlineExceeded},
		{"ended by the timer at the deadline", 10 * time.Second, 12 * time.Second, context.DeadlineExceeded},
		{"ended before the deadline (a lost lease)", 4 * time.Second, 5 * time.Second, context.Canceled},
		{"ended before the deadline, asked after it", 4 * time.Second, 30 * time.Second, context.Canceled},
	} {
		clk := &fixedClock{}
		term := &Term{clock: clk, deadline: 10 * time.Second}
		cctx, cancelCtx := context.WithCancel(context.Background())
		ctx := termContext{cctx, term}
		if c.endAt > 0 {
			clk.mono = c.endAt
			term.end()
			cancelCtx()
		}
		clk.mono = c.then
		for range 2 {
			if err := ctx.Err(); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
				t.Errorf("%s: Err = %v, want %v", c.name, err, c.want)
			}
		}
		cancelCtx()
	}
}
