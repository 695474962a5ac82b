package main

import (
	"fmt"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// memFabric is shared by the devices this process opens, so that the
// loopback mode's two ends meet.
var memFabric = mem.New()

// openDevice opens the named provider's default device: siw's "siw"
// (every local address) or mem's only device.
func openDevice(provider string) (verbs.Device, error) {
	switch provider {
	case "siw":
		return siw.New(siw.Options{}).Open("siw")
	case "mem":
		return memFabric.Open(mem.DeviceName)
	}
	return nil, fmt.Errorf("unknown provider %q (have siw, mem)", provider)
}
