package rping

import (
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

// siwFabric runs the engine over real TCP on 127.0.0.1 with the
// soft-iWARP provider, each side a device of its own.
func siwFabric() fabric {
	p := siw.New(siw.Options{})
	return fabric{
		name:       "siw",
		listenAddr: "127.0.0.1:0",
		open: func(t *testing.T) verbs.Device {
			t.Helper()
			return openDevice(t, p, siw.DeviceName)
		},
	}
}
