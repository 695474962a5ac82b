package rdsoverdat

import (
	"net/netip"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// registryOn returns a registry of one IA on provider p, named as the
// provider is ("mem", "siw"): what a test hands DATConfig to run the dat
// transport over a provider of its own (a fresh mem fabric, a provider
// with a fault in it).
func registryOn(p verbs.Provider) *dat.Registry {
	dev := map[string]string{"mem": mem.DeviceName, "siw": siw.DeviceName}[p.Name()]
	r, err := dat.NewRegistry([]verbs.Provider{p}, []dat.Entry{{
		Name: p.Name(), Provider: p.Name(), Device: dev, Addr: netip.AddrFrom4([4]byte{127, 0, 0, 1}),
	}}, nil)
	if err != nil {
		panic(err)
	}
	return r
}
