package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// Superseded finds the superseded write however it is wrapped, as
// errors.As would, and nothing else.
func TestSupersededWrapped(t *testing.T) {
	sup := errSuperseded{3, 4}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{sup, true},
		{&StepError{Step: "verify", Err: sup}, true},
		{fmt.Errorf("renew: %w", &StepError{Step: "verify", Err: sup}), true},
		{errors.Join(fs.ErrNotExist, fmt.Errorf("x: %w", sup)), true},
		{fmt.Errorf("a %w and %w", fs.ErrExist, sup), true},
		{ErrConflict, false},
		{&StepError{Step: "link", Err: fs.ErrExist}, false},
		{errors.Join(fs.ErrNotExist, ErrConflict), false},
		{errors.New(sup.Error()), false},
	} {
		var e errSuperseded
		if as := errors.As(c.err, &e); as != c.want {
			t.Fatalf("the table is wrong: errors.As(%v) = %v", c.err, as)
		}
		if got := Superseded(c.err); got != c.want {
			t.Errorf("Superseded(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
