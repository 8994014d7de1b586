package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// Progress is drawn only on a terminal and never in -json mode; when
// drawn it shows done/total, the rate, what was found and the time left.
func TestProgress(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if newProgress(w, 10, "runs", false) != nil {
		t.Error("progress on a pipe")
	}
	if newProgress(&bytes.Buffer{}, 10, "runs", false) != nil {
		t.Error("progress on a buffer")
	}
	var nilBar *progress
	nilBar.set(3, "x") // a nil progress is silent, not a crash
	nilBar.done()

	var b bytes.Buffer
	p := newProgressTo(&b, 1000, "runs")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now, p.start = func() time.Time { return clock }, clock
	p.throttle = 0 // draw at every call, instead of waiting out progressbar's throttle
	p.set(10, "0 violations")
	clock = clock.Add(time.Second - time.Nanosecond)
	p.set(20, "0 violations")
	if b.Len() != 0 {
		t.Errorf("drawn within the first second: %q", b.String())
	}
	clock = clock.Add(time.Second)
	p.set(500, "2 violations")
	p.set(600, "3 violations")
	out := b.String()
	for _, want := range []string{"/1000", "runs/s", "3 violations", "50%"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	if !strings.Contains(out, "[") || !strings.Contains(out, ":") {
		t.Errorf("progress %q shows no elapsed/left times", out)
	}
}
