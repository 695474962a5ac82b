package soft

import "github.com/godapl/godapl/verbs"

// MaxIRDORD is the Linux siw's limit on inbound (IRD) and outbound (ORD)
// RDMA Reads per QP.
const MaxIRDORD = 128

// Limits returns the device limits of godapl's software providers: those
// of the Linux siw driver (docs/WIRE.md, I4), so that code
// tested on one provider meets the same limits on the other, plus memory
// windows, which the engine implements in software. The provider fills in
// its name, transport and identity.
func Limits() verbs.DeviceAttr {
	return verbs.DeviceAttr{
		FWVersion:   "1.0",
		MaxMRSize:   1 << 40,
		MaxQP:       102400,
		MaxQPWR:     32768,
		MaxSGE:      verbs.MaxSGE,
		MaxSGERead:  1,
		MaxCQ:       102400,
		MaxCQE:      3276800,
		MaxMR:       1 << 20,
		MaxMW:       1 << 20,
		MaxPD:       102400,
		MaxSRQ:      102400,
		MaxSRQWR:    327680,
		MaxSRQSGE:   verbs.MaxSGE,
		MaxIRD:      MaxIRDORD,
		MaxORD:      MaxIRDORD,
		MaxInline:   MaxInline,
		MaxPrivData: verbs.MaxPrivateData,
	}
}
