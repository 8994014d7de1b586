package lease_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/leaselab/leaselab/lease"
)

func TestLookupVariant(t *testing.T) {
	for _, v := range lease.Variants() {
		got, err := lease.LookupVariant(v.Name)
		if err != nil || got.Name != v.Name || got.NewStore == nil {
			t.Errorf("LookupVariant(%q) = %q, %v", v.Name, got.Name, err)
		}
	}
	for _, name := range []string{"seed", "seed-naive"} {
		if _, err := lease.LookupVariant(name); err != nil {
			t.Errorf("LookupVariant(%q): %v", name, err)
		}
	}
	_, err := lease.LookupVariant("nope")
	if !errors.Is(err, lease.ErrUnknownVariant) {
		t.Fatalf("LookupVariant(\"nope\") = %v, want ErrUnknownVariant", err)
	}
	for _, s := range []string{`"nope"`, "seed-naive", "seed"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("LookupVariant(\"nope\") error %q does not mention %s", err, s)
		}
	}
	if names := lease.VariantNames(); !strings.Contains(err.Error(), names) {
		t.Errorf("error %q does not list the variants %q", err, names)
	}
	// Variants returns a copy.
	vs := lease.Variants()
	vs[0].Name = "changed"
	if lease.Variants()[0].Name == "changed" {
		t.Error("Variants() shares its slice with the package")
	}
}
