//go:build udapl && cgo

package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
)

// rdmacoreProvider is the verbs provider name of rdma-core's devices
// (verbs/rdmacore.ProviderName, which a build without the rdmacore tag
// cannot import).
const rdmacoreProvider = "rdmacore"

// parseRDMAPort reads the instance data of an IA on a port of an rdma-core
// device: "rdmacore device port [address]", the device as ibv_devices
// lists it ("rdmacore rxe0 1", "rdmacore mlx5_0 1 10.0.0.5"). Without an
// address the IA takes the one the DAT registry gives that port (dat/
// providers lists it as ofa-v2-<device>-<port>: the IPv4 address of its
// RoCE GIDs, or its iWARP interface's), read when the line is loaded.
func parseRDMAPort(name, data string, f []string, built []verbs.Provider) (dat.Entry, error) {
	if len(f) < 2 || len(f) > 3 {
		return dat.Entry{}, fmt.Errorf("instance data %q: want \"rdmacore device port [address]\"", data)
	}
	if p, err := strconv.Atoi(f[1]); err != nil || p < 1 || p > 255 {
		return dat.Entry{}, fmt.Errorf("instance data %q: port %q is not a port number", data, f[1])
	}
	if !slices.ContainsFunc(built, func(p verbs.Provider) bool { return p.Name() == rdmacoreProvider }) {
		return dat.Entry{}, fmt.Errorf("instance data %q: this library is built without the rdmacore provider (make udapl UDAPL_TAGS=rdmacore)", data)
	}
	e := dat.Entry{Name: name, Provider: rdmacoreProvider, Device: f[0]}
	if len(f) == 3 {
		a, err := parseIPv4(data, f[2])
		if err != nil {
			return dat.Entry{}, err
		}
		e.Addr = a
		return e, nil
	}
	all, err := providers.DefaultEntries()
	want := fmt.Sprintf("ofa-v2-%s-%s", f[0], f[1])
	for _, p := range all {
		if p.Provider == rdmacoreProvider && p.Name == want {
			e.Interface, e.Addr = p.Interface, p.Addr
			return e, nil
		}
	}
	if err != nil {
		return dat.Entry{}, fmt.Errorf("instance data %q: %w", data, err)
	}
	return dat.Entry{}, fmt.Errorf("instance data %q: rdma-core has no port %s of device %s with an IPv4 address", data, f[1], f[0])
}
