package dat

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

func TestKernelWirePrivate(t *testing.T) {
	s, d := netip.MustParseAddr("192.168.77.31"), netip.MustParseAddr("192.168.77.32")
	// What rds_rdma sends: its struct only, dp_credit and the rest 0.
	var b [datPrivateLen]byte
	encodeDatPrivate(b[:], s, d, 0, 0, 0, 0)
	for _, kernel := range []bool{false, true} {
		dn := &datNode{kernel: kernel}
		p, err := dn.parsePeer(b[:])
		if kernel {
			if err != nil || p.Credit() != 0 || !dn.isKernelPeer(p) || p.Saddr() != s {
				t.Errorf("kernel wire: %v, credit %d, kernel peer %v", err, p.Credit(), dn.isKernelPeer(p))
			}
		} else if !errors.Is(err, errPrivCredit) {
			t.Errorf("iWARP wire took dp_credit 0: %v", err)
		}
	}
	// A godapl peer on the kernel's wire names its generation.
	encodeDatPrivate(b[:], s, d, 0, 0, 7, 0)
	dn := &datNode{kernel: true}
	if p, err := dn.parsePeer(b[:]); err != nil || dn.isKernelPeer(p) {
		t.Errorf("godapl peer: %v, kernel peer %v", err, dn.isKernelPeer(p))
	}
	// A bad version stays refused on either wire.
	b[8] = 2
	if _, err := dn.parsePeer(b[:]); !errors.Is(err, errPrivVersion) {
		t.Errorf("version 2.1: %v", err)
	}
	// What we offer on the kernel's wire: no ack, no credits.
	dp := &datPath{dn: dn}
	dp.ackNext.Store(42)
	dp.ackGen.Store(3)
	if a, g, c := dp.offer(&datEP{grant: 64}); a != 0 || g != 0 || c != 0 {
		t.Errorf("offer %d %d %d, want zeros", a, g, c)
	}
}

func TestKernelWireCreditsOff(t *testing.T) {
	var c datCredits
	c.addPosted(20)
	c.disable()
	if got, adv := c.grab(5); got != 5 || adv != 0 {
		t.Errorf("grab without flow control: %d, %d", got, adv)
	}
	if n := c.addPosted(3); n != 0 || c.posted() != 0 {
		t.Errorf("posted credits counted without flow control: %d, %d", n, c.posted())
	}
	c.unGrab(5, 0)
	if c.send() != 0 {
		t.Errorf("unGrab counted %d send credits", c.send())
	}
	// With flow control the last credit needs an advertisement.
	var on datCredits
	on.addSend(1)
	if got, _ := on.grab(1); got != 0 {
		t.Errorf("last credit spent without an advertisement")
	}
}

func TestKernelWireRaces(t *testing.T) {
	dp := &datPath{dn: &datNode{kernel: true}}
	// A request that would be stale over iWARP changes nothing here.
	var have, req [datPrivateLen]byte
	encodeDatPrivate(have[:], netip.MustParseAddr("192.168.77.32"), netip.MustParseAddr("192.168.77.31"), 0, 0, 7, 0)
	putConnID(have[:], 9)
	copy(req[:], have[:])
	putConnID(req[:], 8)
	for st, want := range map[datEPState]datVerdict{datConnecting: reqReject, datAccepted: reqReject, datUp: reqRejectDrop, datDead: reqAccept} {
		for _, pd := range [][]byte{nil, req[:]} {
			if v := dp.verdict(&datEP{state: st, peer: have}, pd); v != want {
				t.Errorf("kernel wire, EP in state %d, request %x: verdict %d, want %d", st, pd, v, want)
			}
		}
	}
	if dp.verdict(nil, nil) != reqAccept || !dp.retries() {
		t.Errorf("kernel wire: verdict with no EP %d, retries %v", dp.verdict(nil, nil), dp.retries())
	}
	if dn := (&datNode{kernel: true}); dn.privLen() != 40 {
		t.Errorf("kernel wire: %d bytes of private data, want 40 as before conn_id", dn.privLen())
	}
}

// A kernel peer's op on a use-once mapping comes unchecked, its message
// naming the mapping: that ends the op, where from a godapl peer it is a
// protocol error (no check admitted it).
func TestKernelWireUncheckedUseOnce(t *testing.T) {
	dn := &datNode{kernel: true}
	dn.mrs.mrs = map[uint32]*datMR{0x1234: {rkey: 0x1234, useOnce: true}}
	h := wire.Header(make([]byte, wire.HeaderLen))
	if err := h.AddExt(wire.RDMAExt(0x1234)); err != nil {
		t.Fatal(err)
	}
	for _, kernel := range []bool{true, false} {
		e := &datEP{dn: dn, kernelPeer: kernel}
		if ok := e.rdmaArrived(h); ok != kernel {
			t.Errorf("kernel peer %v: message on an unchecked use-once mapping accepted %v", kernel, ok)
		}
	}
}
