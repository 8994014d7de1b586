package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how a long command is getting on: done of total, the
// rate, violations so far and the time left. It appears only once the
// command has run for a second, and only when standard error is a
// terminal and the output is not JSON; otherwise it is nil and silent.
// The drawing is progressbar's (github.com/schollz/progressbar/v3).
type progress struct {
	w     io.Writer
	total int64 // -1: unknown
	unit  string
	// now is the clock that says when the first second is over; tests set
	// their own.
	now      func() time.Time
	start    time.Time
	throttle time.Duration // the least time between two draws (progressbar's throttle)
	bar      *progressbar.ProgressBar
}

// newProgress returns a progress for w, or nil when w is not a terminal
// or quiet is set.
func newProgress(w io.Writer, total int64, unit string, quiet bool) *progress {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newProgressTo(w, total, unit)
}

// newProgressTo draws on w whatever it is (tests draw into a buffer).
func newProgressTo(w io.Writer, total int64, unit string) *progress {
	return &progress{w: w, total: total, unit: unit, now: time.Now, start: time.Now(), throttle: 200 * time.Millisecond}
}

// set reports done units and what has been found so far (for check and
// explore, the violations).
func (p *progress) set(done int64, found string) {
	if p == nil {
		return
	}
	if p.bar == nil {
		if p.now().Sub(p.start) < time.Second {
			return
		}
		p.bar = progressbar.NewOptions64(p.total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(p.unit),
			progressbar.OptionSetPredictTime(p.total > 0),
			progressbar.OptionThrottle(p.throttle),
			progressbar.OptionClearOnFinish(),
		)
	}
	p.bar.Describe(found)
	p.bar.Set64(done)
}

// done removes the bar.
func (p *progress) done() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
	}
}
