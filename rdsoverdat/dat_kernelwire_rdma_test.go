package rdsoverdat

import (
	"bytes"
	"os"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// On the kernel's wire a mapping is zero-based at the start of its
// memory's first page and its cookie carries the memory's offset in that
// page, with no address extension: rds_rdma addresses the cookie as
// remote_vec.addr + offset, which is what the server's op computes here
// too. Over iWARP the cookie's offset is 0 and the address goes with it.
func TestDATKernelWireZeroBasedCookie(t *testing.T) {
	for _, c := range []struct {
		name   string
		kernel bool
		p      verbs.Provider
	}{{"roce", true, roceProvider{mem.New()}}, {"mem", false, mem.New()}} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			r := newDATRig(t, DATConfig{Registry: registryOn(c.p), IA: "mem"})
			win := make([]byte, 3*4096)[4000 : 4000+5000]
			off := uint32(verbs.AddrOf(win) % uint64(os.Getpagesize()))
			ck, err := r.cli.GetMR(win, RDMAReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck)); got != ck {
				t.Fatalf("cookie %#x arrived as %#x", ck, got)
			}
			addr := r.st.nodeAt(r.srvNode).Conn(r.cliNode, TransIB).rdmaAddrs.get(ck.RKey())
			if c.kernel && (ck.Offset() != off || addr != 0) {
				t.Fatalf("kernel wire: cookie offset %#x (memory at page offset %#x), address extension %#x", ck.Offset(), off, addr)
			}
			if !c.kernel && (ck.Offset() != 0 || addr != verbs.AddrOf(win)) {
				t.Fatalf("cookie offset %#x, address extension %#x (memory at %#x)", ck.Offset(), addr, verbs.AddrOf(win))
			}
			src := bytes.Repeat([]byte{0x5a}, 1000)
			r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteAddr: 3000, RemoteBytes: 1000,
				Local: [][]byte{src}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 9})
			expectNext(t, r.cli, []byte("ack"))
			if !bytes.Equal(win[3000:4000], src) || win[2999] != 0 || win[4000] != 0 {
				t.Fatal("the WRITE did not land at remote_vec.addr 3000 of the mapping")
			}
			if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 9, Status: RDMASuccess}) {
				t.Fatalf("notification %+v", n[0])
			}
		})
	}
}
