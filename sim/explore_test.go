package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/leaselab/leaselab/lease"
)

// enumerate runs f once per sequence of choices it makes, depth first,
// and returns how many runs it took.
func enumerate(f func(c Chooser)) int {
	var prefix []int
	runs := 0
	for {
		d := &enumChooser{prefix: prefix}
		f(d)
		runs++
		i := len(d.log) - 1
		for i >= 0 && d.log[i].V+1 >= d.log[i].N {
			i--
		}
		if i < 0 {
			return runs
		}
		prefix = prefix[:0]
		for _, c := range d.log[:i] {
			prefix = append(prefix, c.V)
		}
		prefix = append(prefix, d.log[i].V+1)
	}
}

type enumChooser struct {
	prefix []int
	log    []Choice
}

func (d *enumChooser) Choose(n int) int {
	v := 0
	if i := len(d.log); i < len(d.prefix) {
		v = d.prefix[i]
	}
	d.log = append(d.log, Choice{N: n, V: v})
	return v
}

// An exploration's power loss has every prefix of the metadata journal
// and, for one file written since its last fsync, every fate: its new
// data, the synced data, zeros, or the new data cut after a byte, in the
// middle or before its last byte; no other file loses what was written.
func TestExplorePowerLossOutcomes(t *testing.T) {
	outcomes := map[string]bool{}
	runs := enumerate(func(c Chooser) {
		f := NewFileSystem()
		f.MkdirAll("/d")
		f.Place("/d/a", []byte("old a"), 0o644)
		f.TrackDurability()
		v := f.View(f.NewFDTable())
		lease.WriteFile(v, "/d/a", []byte("new a"), 0o644) // dirty, no journal entry
		lease.WriteFile(v, "/d/b", []byte("b0123"), 0o644) // journal: create b
		f.PowerLoss((&tornChooser{c: c, budget: 1}).Choose)
		a, _ := v.ReadFile("/d/a")
		b, err := v.ReadFile("/d/b")
		out := "a=" + string(a) + " b=" + string(b)
		if err != nil {
			out += "none"
		}
		outcomes[strings.ReplaceAll(out, "\x00", "0")] = true
	})
	want := []string{
		// The journal kept (b created): a or b gets one fate, or neither.
		"a=new a b=b0123",
		"a=old a b=b0123", "a=00000 b=b0123", "a=n b=b0123", "a=ne b=b0123", "a=new  b=b0123",
		"a=new a b=", "a=new a b=00000", "a=new a b=b", "a=new a b=b0", "a=new a b=b012",
		// The journal lost: no b, and a's fates.
		"a=new a b=none", "a=old a b=none", "a=00000 b=none", "a=n b=none", "a=ne b=none", "a=new  b=none",
	}
	var got []string
	for o := range outcomes {
		got = append(got, o)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || runs != len(want) {
		t.Errorf("%d runs, outcomes:\n%s\nwant:\n%s", runs, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
