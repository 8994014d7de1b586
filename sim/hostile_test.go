package sim

import (
	"strings"
	"testing"
	"time"
)

// Whatever sits at the lock path or at a version's name before the
// processes start, the reference elects a leader within a lease and never
// panics: an unreadable version is held by nobody known and expires on the
// observer's clock.
func TestReferenceHostileFiles(t *testing.T) {
	contents := map[string]string{
		"empty":      "",
		"truncated":  `{"processId":12`,
		"wrong-type": `{"processId":"x","epoch":"y"}`,
		"missing":    `{}`,
		"negative":   `{"processId":-5,"epoch":-1}`,
		"huge":       `{"processId":99999999999999999999999,"epoch":1e400}`,
		"garbage":    "\x00\xff\xfe binary \x01",
		"big":        strings.Repeat("a", 3<<20),
		"seed-style": `{"processId":1,"leaseUntil":1760476487}`,
	}
	for name, data := range contents {
		for _, where := range []string{DefaultLockPath, DefaultLockPath + ".1", DefaultLockPath + ".tmp.100.1"} {
			cfg := Config{Variant: "reference", Seed: 1, Horizon: 20 * time.Second,
				Procs:      []ProcSpec{{PID: 100}, {PID: 200, Start: time.Millisecond}},
				Files:      []File{{Path: where, Data: data}},
				SyscallMin: 5 * time.Microsecond, SyscallMax: 50 * time.Microsecond}
			tr, err := Run(cfg)
			if err != nil {
				t.Fatalf("%s at %s: %v", name, where, err)
			}
			iv := tr.Leadership()
			// At most one 9 s lease to wait out an unreadable version.
			if len(iv) == 0 || iv[0].From > int64(10*time.Second) {
				t.Errorf("%s at %s: no leader within a lease: %v", name, where, iv)
			}
		}
	}
}
