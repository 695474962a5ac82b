//go:build udapl && cgo

package main

import "testing"

func TestTransmitInWaitEnv(t *testing.T) {
	for _, c := range []struct {
		val  string
		want bool
	}{{"", true}, {"1", true}, {"0", false}} {
		t.Setenv(transmitInWaitEnv, c.val)
		if got := transmitInWait(); got != c.want {
			t.Errorf("%s=%q: TransmitInWait %v, want %v", transmitInWaitEnv, c.val, got, c.want)
		}
	}
}
