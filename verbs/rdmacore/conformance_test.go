//go:build rdmacore

package rdmacore

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// The tests run against a real device: GODAPL_RDMACORE_DEVICE names it
// (default: the first one libibverbs lists) and GODAPL_RDMACORE_ADDR is
// the IPv4 address rdma_cm reaches it by (default: the address in a RoCE
// GID, else the first IPv4 address of an interface that is up and not
// loopback). Without a device they skip.

// testDevice returns the device name and listen address the tests use.
func testDevice(t testing.TB) (name, addr string) {
	t.Helper()
	names, err := New().Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	name = os.Getenv("GODAPL_RDMACORE_DEVICE")
	if name == "" {
		if len(names) == 0 {
			t.Skip("no RDMA device (ibv_get_device_list found none): load rdma_rxe or siw and add a link (rdma link add rxe0 type rxe netdev eth0), or set GODAPL_RDMACORE_DEVICE")
		}
		name = names[0]
	}
	addr = os.Getenv("GODAPL_RDMACORE_ADDR")
	if addr == "" {
		d, err := New().OpenDevice(name)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		for _, p := range d.Ports() {
			for _, g := range p.GIDs {
				if g.Is4In6() {
					addr = g.Unmap().String()
				}
			}
		}
		d.Close()
	}
	if addr == "" {
		addr = firstIPv4(t)
	}
	return name, addr
}

func firstIPv4(t testing.TB) string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
					return ip.Unmap().String()
				}
			}
		}
	}
	t.Skip("no IPv4 address for rdma_cm: set GODAPL_RDMACORE_ADDR")
	return ""
}

func openPair(t testing.TB, name string, opts ...Option) (a, b verbs.Device) {
	t.Helper()
	p := New(opts...)
	a, err := p.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err = p.Open(name)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	return a, b
}

// TestConformance runs the provider-neutral suite on two contexts of the
// device, connected through rdma_cm over its own address.
func TestConformance(t *testing.T) {
	name, addr := testDevice(t)
	d, err := New().OpenDevice(name)
	if err != nil {
		t.Fatal(err)
	}
	attr := d.Query()
	d.Close()
	t.Logf("device %s (%v), address %s", name, attr.Transport, addr)
	verbstest.Run(t, verbstest.Harness{
		NewPair: func(t *testing.T) (verbs.Device, verbs.Device, string) {
			a, b := openPair(t, name)
			return a, b, addr + ":0"
		},
		Skip: skips(attr),
	})
}

// skips names the cases a device cannot pass, and the limit why.
func skips(attr verbs.DeviceAttr) map[string]string {
	// The fault cases check the iWARP Terminate (layer, type, code) in
	// Conn.Err; libibverbs reports none (IB has no such message and the
	// kernel's siw keeps it to itself). TestFaults checks what a device
	// does report: the completion status and the end of the connection.
	const noTerm = "libibverbs reports no Terminate contents (IB has no Terminate; the kernel's siw does not pass it up), and the case checks them"
	s := map[string]string{
		"Faults":               noTerm,
		"CQ/WaitSolicitedOnly": "libibverbs' ibv_wc has no solicited-event flag, so WC.Solicited cannot be set",
	}
	if attr.MaxMW == 0 {
		s["MW"] = attr.Name + " has no memory windows (max_mw 0)"
	} else {
		for _, c := range []string{"ReadOutsideWindow", "WriteNotGranted", "Rebind", "LocalInvalidate", "SendWithInvalidate"} {
			s["MW/"+c] = noTerm
		}
	}
	if attr.Transport != verbs.TransportIWARP {
		const req = "an IB CM connect request (RoCE) carries 56 bytes of private data, below verbs.MaxPrivateData (252)"
		s["Device/QueryLimits"] = req
		s["CM/PrivateData"] = req
		s["CM/Reject"] = "an IB CM reject carries 148 bytes of private data; the case rejects with 252"
	} else {
		const mpa = "Linux iWARP counts MPA v2's 4-byte IRD/ORD header against the 252 bytes of an MPA frame: 248 bytes of private data reach the peer, the case sends 252"
		s["Device/QueryLimits"] = mpa
		s["CM/PrivateData"] = mpa
		s["CM/Reject"] = mpa
	}
	if strings.HasPrefix(attr.Name, "rxe") {
		s["Send/WithInvalidate"] = "rxe invalidates only memory windows and fast-registration MRs, not ibv_reg_mr registrations (the peer answers remote invalid request)"
		s["QP/SendQueueFull"] = "rxe (Linux 6.1) does not restart its requester on SQD -> RTS: sends posted in SQD wait for the next post"
	}
	if strings.HasPrefix(attr.Name, "siw") {
		s["MR/KeysDistinct"] = "siw (Linux 6.1) gives every user MR the key byte 0: its rkeys differ only in the index"
		s["CQ/Overflow"] = "siw cannot resize a CQ (ibv_resize_cq: EOPNOTSUPP), so its CQs are made with room to grow and overflow only at that size"
		s["SRQ/QueueLimits"] = "siw cannot resize an SRQ (ibv_modify_srq max_wr: EOPNOTSUPP)"
		s["QP/SendQueueFull"] = "siw does not take a user QP to SQD (no SQ_DRAINED event)"
		s["Send/WithInvalidate"] = "siw refuses a Send with Invalidate of an ibv_reg_mr registration (remote invalid request)"
		s["RDMA/SendQueueOrder"] = "siw completes an RDMA Write once it is sent, ahead of an earlier RDMA Read still waiting for its response"
	}
	return s
}

func TestDevices(t *testing.T) {
	name, _ := testDevice(t)
	d, err := New().OpenDevice(name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	a := d.Query()
	if a.Name != name || a.Provider != ProviderName || a.MaxQP <= 0 || a.MaxCQE <= 0 {
		t.Errorf("Query() = %+v", a)
	}
	if len(d.Ports()) == 0 {
		t.Error("no ports")
	}
	for _, p := range d.Ports() {
		t.Logf("%s port %d: %v %s mtu %d gids %v", name, p.Num, p.State, p.LinkLayer, p.MTU, p.GIDs)
	}
	if _, err := New().Open("no-such-device"); err == nil {
		t.Error("Open of an unknown device succeeded")
	}
}
