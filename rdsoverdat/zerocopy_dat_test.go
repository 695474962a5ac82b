package rdsoverdat

import "github.com/godapl/godapl/verbs/mem"

// The zerocopy tests over the dat transport, on the in-memory verbs
// provider, on it posing as RoCE (the kernel's wire: zero-based mappings
// named by their cookies' offsets) and on soft-iWARP.
func init() {
	rdmaRigs = append(rdmaRigs,
		rigMaker{"dat-mem", func(t tb, lim RDMALimits) *rdmaRig {
			return newDATRig(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem", RDMA: lim})
		}, ""},
		rigMaker{"dat-roce", func(t tb, lim RDMALimits) *rdmaRig {
			r := newDATRig(t, DATConfig{Registry: registryOn(roceProvider{mem.New()}), IA: "mem", RDMA: lim})
			r.kernelWire = true
			return r
		}, ""},
		rigMaker{"dat-siw", func(t tb, lim RDMALimits) *rdmaRig {
			return newDATRig(t, DATConfig{RDMA: lim})
		}, ""},
	)
}

func newDATRig(t tb, cfg DATConfig) *rdmaRig {
	st := NewStack(Config{Transports: []Transport{DAT(cfg)}, RecvBuffer: 64 << 20, SendBuffer: 64 << 20})
	t.Cleanup(func() { st.Close() })
	return newRig(t, st, nil)
}
