package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/leaselab/leaselab/trace"
)

// namedFaults are the kinds ParseFaults reads by name, in their order.
var namedFaults = append(AllFaults[:len(AllFaults):len(AllFaults)], OptInFaults...)

// faultChoices names every kind ParseFaults reads, for its error: the
// kinds that came first as they always read, then the stretches and
// nobootid.
func faultChoices() string {
	names := func(ks []trace.FaultKind) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.String())
		}
		return out
	}
	return strings.Join(append(names(namedFaults), "all", "none"), ", ")
}

// ParseFaults parses "kill,term", "all" (AllFaults) or "none".
func ParseFaults(s string) ([]trace.FaultKind, error) {
	switch s {
	case "all":
		return append([]trace.FaultKind(nil), AllFaults...), nil
	case "none", "":
		return nil, nil
	}
	var out []trace.FaultKind
	seen := map[trace.FaultKind]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		kinds := AllFaults
		if name != "all" {
			k, ok := faultByName(name)
			if !ok {
				return nil, fmt.Errorf("unknown fault %q (valid: %s)", name, faultChoices())
			}
			kinds = []trace.FaultKind{k}
		}
		for _, k := range kinds {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return slices.Index(namedFaults, out[i]) < slices.Index(namedFaults, out[j]) })
	return out, nil
}

// FaultNames prints kinds as ParseFaults reads them.
func FaultNames(kinds []trace.FaultKind) string {
	if len(kinds) == 0 {
		return "none"
	}
	all := true
	for _, k := range AllFaults {
		all = all && slices.Contains(kinds, k)
	}
	var names []string
	if all {
		names = append(names, "all")
	}
	for _, k := range kinds {
		if !all || !slices.Contains(AllFaults, k) {
			names = append(names, k.String()) // (all,lose: a kind all leaves out, kept: a review found replay lines that dropped it)
		}
	}
	return strings.Join(names, ",")
}

func faultByName(name string) (trace.FaultKind, bool) {
	for _, k := range namedFaults {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}
