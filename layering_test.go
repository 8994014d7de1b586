package leaselab_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/leaselab/leaselab"

// layers says, for each package of the project (matched by path prefix,
// longest first), which of the project's packages it must not depend on,
// directly or through others. Dependencies point down: the algorithms
// (lease) know nothing of how they are simulated or judged; the trace
// vocabulary (trace) knows only the algorithms' value types; the
// simulator (sim) produces traces and knows nothing of the checks; the
// checks (model, spec) read traces; the command line uses them all.
var layers = []struct {
	pkg       string
	forbidden []string
}{
	{"lease", []string{"trace", "sim", "model", "spec", "scenario", "cmd"}},
	{"trace", []string{"sim", "model", "spec", "scenario", "cmd"}},
	{"sim", []string{"model", "spec", "scenario", "cmd"}},
	{"model", []string{"sim", "spec", "scenario", "cmd"}},
	{"spec/storetest", []string{"sim", "scenario", "cmd"}},
	{"spec", []string{"scenario", "cmd"}},
	{"scenario", []string{"cmd"}},
}

// under reports whether import path p is the project's package rel or one
// below it.
func under(p, rel string) bool {
	q := module + "/" + rel
	return p == q || strings.HasPrefix(p, q+"/")
}

// TestLayering reads `go list -deps` for every package of the module and
// fails on any dependency that points up a layer.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, deps := f[0], f[1:]
		for _, l := range layers {
			if !under(pkg, l.pkg) {
				continue
			}
			checked[l.pkg] = true
			for _, d := range deps {
				for _, bad := range l.forbidden {
					if under(d, bad) {
						t.Errorf("%s depends on %s: %s must not depend on %s", pkg, d, l.pkg, bad)
					}
				}
			}
			break // the first (most specific) layer that matches
		}
	}
	for _, l := range layers {
		if !checked[l.pkg] {
			t.Errorf("no package %s/%s: the layer table is out of date", module, l.pkg)
		}
	}
}
