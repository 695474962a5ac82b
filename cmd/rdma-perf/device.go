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

// openDevice opens the named provider's device for addr: siw's "siw"
// (every local address), mem's only device, or the rdma-core device
// rdma_cm uses for addr.
func openDevice(provider, addr string) (verbs.Device, error) {
	switch provider {
	case "siw":
		return siw.New(siw.Options{}).Open("siw")
	case "mem":
		return memFabric.Open(mem.DeviceName)
	case "rdmacore":
		return openRdmacore(addr)
	}
	return nil, fmt.Errorf("unknown provider %q (have siw, mem, rdmacore)", provider)
}
