package verbs

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// TestDisconnectEventOf: how an ended connection's Err is reported.
func TestDisconnectEventOf(t *testing.T) {
	reset := &BrokenError{Err: syscall.ECONNRESET}
	for _, c := range []struct {
		err  error
		want ConnEventType
	}{
		{nil, ConnEventDisconnected},
		{ErrDisconnected, ConnEventDisconnected},
		{fmt.Errorf("siw: %w", ErrDisconnected), ConnEventDisconnected},
		{&TerminateError{Layer: TermLayerDDP, EType: 1, Code: 1}, ConnEventBroken},
		{&TerminateError{Layer: TermLayerRDMAP, Remote: true}, ConnEventBroken},
		{reset, ConnEventBroken},
		{fmt.Errorf("wrapped: %w", reset), ConnEventBroken},
		{&BrokenError{}, ConnEventBroken},
		{errors.New("something else"), ConnEventBroken},
	} {
		if got := DisconnectEventOf(c.err); got != c.want {
			t.Errorf("DisconnectEventOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if !errors.Is(reset, ErrBroken) || !errors.Is(reset, ErrDisconnected) || !errors.Is(reset, syscall.ECONNRESET) {
		t.Errorf("%v does not match ErrBroken, ErrDisconnected and ECONNRESET", reset)
	}
	if errors.Is(ErrDisconnected, ErrBroken) {
		t.Error("ErrDisconnected matches ErrBroken")
	}
	if s := reset.Error(); s != "verbs: connection broken: connection reset by peer" {
		t.Errorf("Error() = %q", s)
	}
	if s := (&BrokenError{}).Error(); s != "verbs: connection broken" {
		t.Errorf("Error() without a cause = %q", s)
	}
	if s := ConnEventBroken.String(); s != "BROKEN" {
		t.Errorf("ConnEventBroken prints %q", s)
	}
}
