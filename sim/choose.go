package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Chooser makes a run's random choices: system-call latencies, timer
// lateness, the order of same-instant steps, and (through SetupFrom) the
// setup itself. The default is a PCG generator seeded from the run's seed;
// a property test plugs in rapid, so that a failure shrinks choice by
// choice; a Recorder and Decisions record and replay a run's choices
// exactly.
type Chooser interface {
	// Choose returns a number in [0, n); n >= 1.
	Choose(n int) int
}

// PCG is the default Chooser: r.IntN over the PCG source src.
type PCG struct {
	r   *rand.Rand
	src *rand.PCG
}

// NewPCG returns a Chooser seeded with seed and stream.
func NewPCG(seed, stream uint64) *PCG {
	src := rand.NewPCG(seed, stream)
	return &PCG{rand.New(src), src}
}

// Choose implements Chooser. It is rand.Rand.IntN's algorithm on a 64-bit
// platform (Lemire's multiply and reject), with the source called
// directly: the run's latency and lateness draws, two or three a system
// call, went through two more calls each, one of them an interface's.
// TestPCGIsIntN holds it to IntN, draw for draw.
func (p *PCG) Choose(n int) int {
	if n <= 0 || strconv.IntSize == 32 {
		return p.r.IntN(n) // (its panic; and on a 32-bit platform IntN draws otherwise)
	}
	un := uint64(n)
	if un&(un-1) == 0 {
		return int(p.src.Uint64() & (un - 1))
	}
	hi, lo := bits.Mul64(p.src.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(p.src.Uint64(), un)
		}
	}
	return int(hi)
}

// Choice is one recorded choice: Choose(N) returned V.
type Choice struct{ N, V int }

// Recorder passes choices through from C and records them.
type Recorder struct {
	C   Chooser
	Log []Choice
}

// Choose implements Chooser.
func (r *Recorder) Choose(n int) int {
	v := r.C.Choose(n)
	r.Log = append(r.Log, Choice{n, v})
	return v
}

// Decisions replays a recorded list of choices. A run that asks for a
// choice the list does not have (a different setup or variant) gets 0 and
// Err reports the first mismatch.
type Decisions struct {
	List []Choice
	next int
	err  error
}

// Choose implements Chooser.
func (d *Decisions) Choose(n int) int {
	if d.next >= len(d.List) {
		if d.err == nil {
			d.err = fmt.Errorf("decision %d: the list has only %d decisions", d.next+1, len(d.List))
		}
		d.next++
		return 0
	}
	c := d.List[d.next]
	d.next++
	if c.N != n || c.V < 0 || c.V >= n {
		if d.err == nil {
			d.err = fmt.Errorf("decision %d: the run asks for a choice among %d, the list recorded %d of %d", d.next, n, c.V, c.N)
		}
		return 0
	}
	return c.V
}

// Err reports whether the run asked for exactly the recorded choices.
func (d *Decisions) Err() error {
	if d.err == nil && d.next != len(d.List) {
		return fmt.Errorf("the run used %d of %d recorded decisions", d.next, len(d.List))
	}
	return d.err
}

// WriteDecisions writes a choice list, one "N V" pair a line after a
// header line.
func WriteDecisions(w io.Writer, header string, list []Choice) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# leaselab decisions: %s\n", header)
	for _, c := range list {
		fmt.Fprintf(bw, "%d %d\n", c.N, c.V)
	}
	return bw.Flush()
}

// ReadDecisions reads what WriteDecisions wrote, returning the header.
func ReadDecisions(r io.Reader) (string, []Choice, error) {
	sc := bufio.NewScanner(r)
	header := ""
	var list []Choice
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			if line == 1 {
				header = strings.TrimSpace(strings.TrimPrefix(t, "# leaselab decisions:"))
			}
			continue
		}
		f := strings.Fields(t)
		if len(f) != 2 {
			return "", nil, fmt.Errorf("line %d: want \"N V\", got %q", line, t)
		}
		n, err1 := strconv.Atoi(f[0])
		v, err2 := strconv.Atoi(f[1])
		if err := errors.Join(err1, err2); err != nil || n < 1 || v < 0 || v >= n {
			return "", nil, fmt.Errorf("line %d: want two integers with 0 <= V < N, got %q", line, t)
		}
		list = append(list, Choice{n, v})
	}
	return header, list, sc.Err()
}

// chooserScheduler lets a Chooser order same-instant steps.
type chooserScheduler struct{ c Chooser }

func (s chooserScheduler) Pick(cands []Candidate) int { return s.c.Choose(len(cands)) }
