package leaselab_test

import (
	"encoding/binary"
	"testing"

	"github.com/leaselab/leaselab/sim"
	"github.com/leaselab/leaselab/spec"
)

// byteChooser makes a run's choices from fuzzer bytes: four bytes a
// choice, zero when they run out.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) Choose(n int) int {
	if c.i+4 > len(c.b) {
		return 0
	}
	v := binary.LittleEndian.Uint32(c.b[c.i:])
	c.i += 4
	return int(v % uint32(n))
}

// FuzzReference lets the coverage-guided fuzzer drive every choice of a
// simulated run of the reference (setup, faults of every kind, latencies,
// lateness and step order) and fails on any violation of any property:
// the random checker's search, steered by coverage instead of chance.
func FuzzReference(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x03\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\x10\x00\x00\x00"))
	f.Add([]byte("kill the leader right after its link, then pause the watcher"))
	o := sim.SetupOptions{Variant: "reference", Faults: sim.FaultKinds}
	if err := o.Normalize(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &byteChooser{b: b}
		cfg := sim.SetupFrom(o, c)
		cfg.Chooser = c
		tr, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range spec.Check(tr) {
			if v.Violation != nil {
				t.Fatalf("%s\n  setup: %s", v.Violation, tr.Setup())
			}
		}
	})
}
