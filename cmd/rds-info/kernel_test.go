package main

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

func counterRec(name string, v uint64) []byte {
	r := make([]byte, ctrLen)
	copy(r, name)
	binary.NativeEndian.PutUint64(r[ctrValue:], v)
	return r
}

func connRec(l, f string, tx, rx uint64, connected bool) []byte {
	r := make([]byte, connLen)
	binary.NativeEndian.PutUint64(r[connNextTX:], tx)
	binary.NativeEndian.PutUint64(r[connNextRX:], rx)
	la, fa := netip.MustParseAddr(l).As4(), netip.MustParseAddr(f).As4()
	copy(r[connLAddr:], la[:])
	copy(r[connFAddr:], fa[:])
	copy(r[connTransport:], "tcp")
	if connected {
		r[connFlags] = connFlagConnected
	}
	return r
}

func sockRec(a string, sndbuf, rcvbuf uint32) []byte {
	r := make([]byte, sockLen)
	ap := netip.MustParseAddrPort(a)
	b := ap.Addr().As4()
	binary.NativeEndian.PutUint32(r[sockSndBuf:], sndbuf)
	copy(r[sockBoundAddr:], b[:])
	binary.BigEndian.PutUint16(r[sockBoundPort:], ap.Port())
	binary.NativeEndian.PutUint32(r[sockRcvBuf:], rcvbuf)
	return r
}

func TestParseKernel(t *testing.T) {
	ctrs := append(counterRec("conn_reset", 3), counterRec("recv_ping", 7)...)
	conns := connRec("10.0.0.1", "10.0.0.2", 12, 34, true)
	socks := sockRec("10.0.0.1:4000", 1000, 2000)
	info, err := parseKernel(ctrs, ctrLen, conns, connLen, socks, sockLen)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Kernel || len(info.Nodes) != 2 {
		t.Fatalf("%+v", info)
	}
	all, n := info.Nodes[0], info.Nodes[1]
	if all.Addr.IsValid() || len(all.Counters) != 2 || all.Counters[1].Name != "recv_ping" || all.Counters[1].Value != 7 {
		t.Errorf("counters node %+v", all)
	}
	if len(n.Conns) != 1 || n.Conns[0].Remote != netip.MustParseAddr("10.0.0.2") || n.Conns[0].Transport != "tcp" ||
		!n.Conns[0].Paths[0].Up || n.Conns[0].Paths[0].NextTX != 12 || n.Conns[0].Paths[0].NextRX != 34 {
		t.Errorf("conns %+v", n.Conns)
	}
	if len(n.Sockets) != 1 || n.Sockets[0].Bound != netip.MustParseAddrPort("10.0.0.1:4000") ||
		n.Sockets[0].SendBuffer != 1000 || n.Sockets[0].RecvBuffer != 2000 {
		t.Errorf("sockets %+v", n.Sockets)
	}
	// A newer kernel's longer records still parse; shorter ones do not.
	if _, err := parseKernel(nil, 0, append(conns, 0, 0), connLen+2, nil, 0); err != nil {
		t.Errorf("longer record: %v", err)
	}
	if _, err := parseKernel(nil, 0, conns[:30], 30, nil, 0); !errors.Is(err, errRecordSize) {
		t.Errorf("short record: %v", err)
	}
}

// FuzzParseKernel: whatever the tables hold, parsing returns without
// panicking.
func FuzzParseKernel(f *testing.F) {
	f.Add(counterRec("x", 1), ctrLen, connRec("1.2.3.4", "5.6.7.8", 1, 2, false), connLen, sockRec("1.2.3.4:5", 1, 2), sockLen)
	f.Fuzz(func(t *testing.T, ctrs []byte, cs int, conns []byte, ns int, socks []byte, ss int) {
		if cs <= 0 || ns <= 0 || ss <= 0 {
			return // the kernel returns a positive record size
		}
		parseKernel(ctrs, cs, conns, ns, socks, ss)
	})
}
