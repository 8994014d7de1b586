package lease_test

import (
	"testing"

	"github.com/leaselab/leaselab/lease"
)

// FuzzVersionedRecord: the reference store's record parser never panics,
// accepts only what it writes, and reads back what it writes.
func FuzzVersionedRecord(f *testing.F) {
	for _, s := range []string{`{"processId":1,"epoch":1}`, ``, `{`, `{"processId":-1,"epoch":1}`, `{"processId":1,"epoch":0}`,
		`{"processId":123456789012345678,"epoch":9}`, "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := lease.ParseVersioned(b)
		if err != nil {
			return
		}
		if got := string(lease.AppendVersioned(nil, r)); got != string(b) {
			t.Fatalf("%q parsed as %+v, which encodes as %q", b, r, got)
		}
	})
}
