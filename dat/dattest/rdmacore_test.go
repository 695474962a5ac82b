//go:build rdmacore

package dattest

import (
	"os"
	"strings"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
)

// TestRdmacore runs the suite over the IA of an rdma-core device port
// (GODAPL_RDMACORE_DEVICE names the device, default the first listed),
// two IAs of it connecting through rdma_cm. Without a device it skips.
func TestRdmacore(t *testing.T) {
	reg, err := providers.New(providers.Options{})
	if reg == nil {
		t.Skipf("no registry: %v", err)
	}
	name, device := "", ""
	for _, e := range reg.Entries() {
		if !strings.HasPrefix(e.Name, "ofa-v2-") {
			continue
		}
		if dev := os.Getenv("GODAPL_RDMACORE_DEVICE"); dev == "" || e.Device == dev {
			name, device = e.Name, e.Device
			break
		}
	}
	if name == "" {
		t.Skip("no rdma-core device port with an address (load rdma_rxe or siw and add a link, or set GODAPL_RDMACORE_DEVICE)")
	}
	t.Logf("IA %s", name)
	Run(t, Harness{
		Open: func(t *testing.T) (*ia.IA, *ia.IA) {
			a, err := ia.OpenIn(reg, name, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ia.OpenIn(reg, name, 0)
			if err != nil {
				a.Close(dat.CloseAbrupt)
				t.Fatal(err)
			}
			return a, b
		},
		Registry:        reg,
		NoListenerEvent: dat.ConnectionEventNonPeerRejected,
		Short:           true,
		Skip:            rdmacoreSkips(device),
	})
}

// rdmacoreSkips names what a device cannot do, and the limit why.
func rdmacoreSkips(device string) map[string]string {
	const noSE = "libibverbs' ibv_wc has no solicited-event flag: a solicited wait cannot tell a solicited receive from another"
	const noProgress = "a device reports a receive only when it completes: a message in progress on an SRQ receive cannot be seen (no RecvInProgress)"
	s := map[string]string{
		"DTO/SolicitedWait":   noSE,
		"SRQ/SolicitedWait":   noSE,
		"SRQ/RecvQueryShared": noProgress,
		"SRQ/FlushMidMessage": noProgress,
	}
	if strings.HasPrefix(device, "rxe") {
		s["Limits/EVDQLen"] = "rxe's max_cqe is 32767; the case creates an EVD of 65536 entries"
		s["RMR/SendWithInvalidate"] = "rxe (Linux 6.1) reports neither IBV_WC_WITH_INV nor the key in the receive completion of a Send with Invalidate"
		s["SRQ/TooLongAndEmpty"] = "rxe completes a message longer than its SRQ receive with a local QP operation error (DAT_DTO_ERR_LOCAL_EP), not a local length error"
		s["DTO/SendWithoutReceive"] = "on IB and RoCE the QP retries a Send that finds no receive (RNR) without limit (rnr_retry 7, as rdma-core's tools set it): the connection does not break"
	}
	if strings.HasPrefix(device, "siw") {
		const noMW = "siw has no memory windows (max_mw 0): rmr_create is DAT_MODEL_NOT_SUPPORTED"
		for _, c := range []string{"RMR/BindWriteUnbind", "RMR/BindChecks", "RMR/SendWithInvalidate",
			"Handles/UseAfterFree", "Memory/PZInUse", "EPState/Unconnected"} {
			s[c] = noMW
		}
		const noEmpty = "siw's user library refuses a receive without segments (EINVAL)"
		for _, c := range []string{"SRQ/PostRecvErrors", "SRQ/TooLongAndEmpty", "SRQ/SegmentFill", "SRQ/LowWatermark"} {
			s[c] = noEmpty
		}
		s["SRQ/Resize"] = "siw cannot resize an SRQ (ibv_modify_srq max_wr: EOPNOTSUPP)"
		s["DTO/SendWithoutReceive"] = "the kernel's siw ends a connection torn down by a Terminate exactly as an orderly close (rdma_cm DISCONNECTED, QP in ERROR, no async event), so BROKEN cannot be told from DISCONNECTED"
	}
	return s
}
