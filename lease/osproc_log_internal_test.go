package lease

import (
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gate is a writer that blocks every write until opened, as a pipe whose
// reader has stopped reading does.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
	b    strings.Builder
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Write(p)
}

// A log whose reader has stopped reading stalls no caller: Log returns at
// once, past the queue's bound too (found by a probe: a leaselab run whose
// stdout pipe was full stopped renewing, and ignored SIGTERM until it was
// drained); an exit waits for it at most logFlushWait; the lines come out
// in order once the reader reads again, with a count of those dropped.
func TestLogNeverBlocks(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	p := NewOSProcOptions(OSProcOptions{Out: g, Err: g, ID: 7}).(*osProc)
	p.Log(MsgRenewed, 0, 0)
	for queued := 1; queued > 0; time.Sleep(time.Millisecond) { // the writer has taken line 0, and blocks on it
		p.logOut.mu.Lock()
		queued = len(p.logOut.queue)
		p.logOut.mu.Unlock()
	}
	start := time.Now()
	for i := 1; i <= maxLogQueue+10; i++ {
		p.Log(MsgRenewed, int64(i), 0)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%d lines to a blocked writer took %v", maxLogQueue+10, d)
	}
	start = time.Now()
	p.flushLog(50 * time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("flush of a blocked log returned after %v, want its 50 ms", d)
	}
	close(g.open) // the reader reads again
	p.flushLog(10 * time.Second)
	p.Log(MsgReleased, 0, 0) // the first line after the drops: their count comes first
	p.flushLog(10 * time.Second)
	g.mu.Lock()
	lines := strings.Split(strings.TrimSuffix(g.b.String(), "\n"), "\n")
	g.mu.Unlock()
	if len(lines) != maxLogQueue+3 {
		t.Fatalf("%d lines written, want %d (the one in flight, the queue, a count of the dropped, the last)", len(lines), maxLogQueue+3)
	}
	for i, l := range lines[:maxLogQueue+1] {
		if want := MsgRenewed.Format(int64(i), 0, time.Local); !strings.HasSuffix(l, want) {
			t.Fatalf("line %d: %q, want it to end %q", i, l, want)
		}
	}
	if want := "[10 log lines dropped: the log's reader fell behind]"; lines[maxLogQueue+1] != want {
		t.Errorf("after the queue: %q, want %q", lines[maxLogQueue+1], want)
	}
	if want := MsgReleased.Format(0, 0, time.Local); !strings.HasSuffix(lines[maxLogQueue+2], want) {
		t.Errorf("last line %q, want it to end %q", lines[maxLogQueue+2], want)
	}
}

// A standard error whose reader stopped reading holds up no standard
// output line (found by review: with one queue for both, a full stderr
// pipe left leaselab run's "Lease released" unwritten); one writer, or
// two files open on one pipe, keep one queue, and their lines' order.
func TestLogStreamsApart(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	out := &syncBuffer{}
	p := NewOSProcOptions(OSProcOptions{Out: out, Err: g, ID: 7}).(*osProc)
	p.Log(MsgStarted, 7, 0) // standard error: blocked
	p.Log(MsgReleased, 0, 0)
	p.flushLog(100 * time.Millisecond)
	if got, want := out.String(), MsgReleased.Format(0, 0, time.Local); !strings.Contains(got, want) {
		t.Errorf("stdout %q with stderr blocked, want %q", got, want)
	}
	close(g.open)
	p.flushLog(10 * time.Second)
	g.mu.Lock()
	errText := g.b.String()
	g.mu.Unlock()
	if !strings.Contains(errText, MsgStarted.Format(7, 0, time.Local)) {
		t.Errorf("stderr %q once read, want the start line", errText)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w2, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer w2.Close()
	for _, c := range []struct {
		out, err io.Writer
		same     bool
	}{{g, g, true}, {w, w2, true}, {w, os.Stderr, false}, {g, out, false}} {
		if got := sameWriter(c.out, c.err); got != c.same {
			t.Errorf("sameWriter(%T, %T) = %v, want %v", c.out, c.err, got, c.same)
		}
	}
}
