package main

import (
	"fmt"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// memFabric is shared by the devices this process opens, so that the
// loopback mode's two ends meet.
var memFabric = mem.New()

func openDevice(provider string) (verbs.Device, error) {
	switch provider {
	case "mem":
		return memFabric.Open(mem.DeviceName)
	}
	return nil, fmt.Errorf("unknown provider %q (have mem)", provider)
}
