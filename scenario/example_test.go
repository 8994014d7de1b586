package scenario_test

import (
	"fmt"

	"github.com/leaselab/leaselab/scenario"
)

// The post's SIGKILL experiment on the post's program and on the reference
// algorithm. The seed's watchers notice the expiry only at their next 3 s
// poll; the reference's are notified of each renewal, time the lease from
// the last one and take over the moment it runs out.
func ExampleScenario_Run() {
	s, err := scenario.Lookup("kill-leader")
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"seed", "reference"} {
		r, err := s.Run(scenario.Options{Variant: v})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: leaderless for %.2f s (post: %.2f s)\n", v, r.Fields["leaderless_gap_s"], r.Fields["post_gap_s"])
	}
	// Output:
	// seed: leaderless for 9.53 s (post: 9.53 s)
	// reference: leaderless for 6.53 s (post: 9.53 s)
}
