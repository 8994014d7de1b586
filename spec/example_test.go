package spec_test

import (
	"fmt"

	"github.com/leaselab/leaselab/scenario"
	"github.com/leaselab/leaselab/spec"
)

// Checking the post's takeover race: the two watchers that see the dead
// leader's lease expire both take over.
func Example() {
	s, err := scenario.Lookup("takeover-race")
	if err != nil {
		panic(err)
	}
	r, err := s.Run(scenario.Options{})
	if err != nil {
		panic(err)
	}
	for _, v := range spec.Check(r.Trace) {
		if v.Property == spec.ExclusiveLeadership && v.Violation != nil {
			fmt.Println(v.Violation.Property, v.Violation.PIDs)
			fmt.Printf("at %.2fs\n", v.Violation.At.Seconds())
		}
	}
	// Output:
	// exclusive-leadership [200 300]
	// at 12.10s
}
