package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// roceProvider is the in-memory provider with devices that say they are
// RoCE, so that the dat transport speaks the kernel's rds_rdma wire
// (internal/dat/dat_kernel.go) between two godapl nodes in one process:
// no credits, the kernel's race rule, both sides reconnecting. The mem
// fabric has no RNR retry, so these tests keep every receiver's
// unconsumed fragments far below its SRQ's 1024 buffers.
type roceProvider struct{ verbs.Provider }

func (p roceProvider) Open(name string) (verbs.Device, error) {
	d, err := p.Provider.Open(name)
	if err != nil {
		return nil, err
	}
	return roceDevice{d}, nil
}

type roceDevice struct{ verbs.Device }

func (d roceDevice) Query() verbs.DeviceAttr {
	a := d.Device.Query()
	a.Transport = verbs.TransportRoCE
	return a
}

// TestDATKernelWire runs both directions at once over a fresh connection
// that both sides open together (the kernel's race rule: each rejects the
// other's request while its own is out, and the random backoff settles
// it), then a stream each way: every message arrives, in order, over a
// connection that runs without credits.
func TestDATKernelWire(t *testing.T) {
	leakCheck(t)
	st := datStack(t, DATConfig{Registry: registryOn(roceProvider{mem.New()}), IA: "mem"})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	sizes := []int{0, 1, 4095, 4096, 4097, 65536}
	msg := func(i, n int) []byte {
		m := bytes.Repeat([]byte{byte(i)}, n)
		for j := range m {
			m[j] += byte(j / 4096)
		}
		return m
	}
	errc := make(chan error, 2)
	for _, pair := range [][2]*Socket{{a, b}, {b, a}} {
		go func(from, to *Socket) {
			for i, n := range sizes {
				if _, err := from.SendTo(msg(i, n), to.BoundAddr(), 0); err != nil {
					errc <- err
					return
				}
			}
			for i := range 200 {
				if _, err := from.SendTo([]byte(fmt.Sprint(i)), to.BoundAddr(), 0); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}(pair[0], pair[1])
	}
	buf := make([]byte, 1<<17)
	for _, s := range []*Socket{a, b} {
		for i, n := range sizes {
			got, _ := recvTimeout(t, s, buf, 20*time.Second)
			if !bytes.Equal(buf[:got], msg(i, n)) {
				t.Fatalf("%v: message %d: %d bytes, want %d", s.BoundAddr(), i, got, n)
			}
		}
		for i := range 200 {
			got, _ := recvTimeout(t, s, buf, 20*time.Second)
			if string(buf[:got]) != fmt.Sprint(i) {
				t.Fatalf("%v: stream message %d: %q", s.BoundAddr(), i, buf[:got])
			}
		}
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range as {
		c := st.nodeAt(n).Conn(as[1-i], TransIB)
		if c == nil || !c.Path(0).IsUp() {
			t.Fatalf("%v: no dat connection up", n)
		}
		kernel, noCredits := datNodeOf(t, st.nodeAt(n)).KernelWire((*xpath)(c.Path(0)))
		if !kernel || !noCredits {
			t.Errorf("%v: kernel wire %v, connection without credits %v", n, kernel, noCredits)
		}
	}
	if got := st.Info().Nodes[0].Conns[0].Transport; got != "dat" {
		t.Fatalf("connection over %s", got)
	}
}
