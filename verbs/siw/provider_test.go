package siw_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

func TestDevices(t *testing.T) {
	p := siw.New(siw.Options{})
	names, err := p.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 || names[0] != siw.DeviceName {
		t.Fatalf("Devices() = %v, want %q first", names, siw.DeviceName)
	}
	var lo string
	for _, n := range names[1:] {
		if !strings.HasPrefix(n, "siw_") {
			t.Errorf("device %q lacks the siw_ prefix", n)
		}
		if n == "siw_lo" {
			lo = n
		}
	}
	if _, err := p.Open("siw_nosuchif"); !errors.Is(err, verbs.ErrNoDevice) {
		t.Errorf("Open of an unknown interface: %v", err)
	}
	if _, err := p.Open("rxe0"); !errors.Is(err, verbs.ErrNoDevice) {
		t.Errorf("Open of a foreign name: %v", err)
	}
	if lo == "" {
		t.Skip("no loopback interface with an IPv4 address")
	}
	// An interface device listens on the interface's addresses only.
	verbstest.CheckLeaks(t)
	dev, err := p.Open(lo)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	attr := dev.Query()
	if attr.Name != lo || attr.Transport != verbs.TransportIWARP || attr.MaxQPWR != 32768 || attr.MaxSGE != 6 ||
		attr.MaxSGERead != 1 || attr.MaxIRD != 128 || attr.MaxORD != 128 || attr.MaxPrivData != 252 ||
		attr.MaxInline != 64 || attr.MaxSRQWR != 327680 || attr.MaxCQE != 3276800 || attr.MaxMW < 1 {
		t.Errorf("Query() = %+v", attr)
	}
	if _, err := dev.Listen("10.255.255.1:0", 1); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("Listen on an address of another interface: %v", err)
	}
	lis, err := dev.Listen(":0", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	other, err := p.Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Through a listener of the interface device.
	sa, sb := verbstest.ConnectPair(t, dev, other, "127.0.0.1:0", verbstest.PairAttr{})
	verbstest.RoundTrip(t, sb, sa, 10, 1, peerTimeout)
}

// TestCloseWhileBusy tears a stream down from every side while data is
// moving: Modify(ERROR), Destroy, Device.Close. Nothing may deadlock or
// leak, and every posted request completes.
func TestCloseWhileBusy(t *testing.T) {
	for _, how := range []string{"modify", "destroy", "close"} {
		t.Run(how, func(t *testing.T) {
			sa, sb := benchPairT(t)
			recvs := make([]verbs.RecvWR, 64)
			for i := range recvs {
				recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(0, 1024)}}
			}
			verbstest.MustPostRecv(t, sa.QP, recvs...)
			sends := make([]verbs.SendWR, 32)
			for i := range sends {
				sends[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
					SGL: []verbs.SGE{sb.Buf.SGE(0, 64<<10)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
			}
			verbstest.MustPostSend(t, sb.QP, sends...)
			switch how {
			case "modify":
				if err := sb.QP.Modify(verbs.QPStateError); err != nil {
					t.Fatal(err)
				}
			case "destroy":
				if err := sb.QP.Destroy(); err != nil {
					t.Fatal(err)
				}
			case "close":
				if err := sb.Dev.Close(); err != nil {
					t.Fatal(err)
				}
			}
			verbstest.WaitDone(t, sa.Conn, peerTimeout)
			if how != "close" {
				verbstest.WaitDone(t, sb.Conn, peerTimeout)
				// Every Write completed: sent before the teardown, or flushed.
				verbstest.PollN(t, sb.CQ, len(sends), peerTimeout)
			}
			// The passive side flushes its receives.
			ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
			defer cancel()
			for got := 0; got < len(recvs); {
				var wcs [16]verbs.WC
				n := sa.CQ.Poll(wcs[:])
				for _, wc := range wcs[:n] {
					if wc.Status != verbs.WCWRFlushErr {
						t.Fatalf("receive completion %+v", wc)
					}
				}
				got += n
				if n == 0 {
					if err := sa.CQ.Wait(ctx, false); err != nil {
						t.Fatalf("after %d flushed receives: %v", got, err)
					}
				}
			}
		})
	}
}
