//go:build rdmacore

package rdsib

import (
	"net/netip"
	"testing"
	"time"
)

// TestFaults breaks the connection under two streams of 10,000 messages,
// one each way, once a tenth of them has arrived: the kernel VM's link
// loses every frame for ten seconds (netem; taking eth0 down under
// rxe is no good, see docs/INTEROP-FINDINGS.md), or its RoCE device is
// removed and added again, which drops every rds_rdma connection on it.
// Both streams must arrive whole: nothing lost, nothing duplicated, order
// kept.
func TestFaults(t *testing.T) {
	e, k := setup(t)
	for i, f := range []struct{ name, cmd string }{
		{"link-cut", "tc qdisc add dev eth0 root netem loss 100% && sleep 10 && tc qdisc del dev eth0 root"},
		{"rdma-link-del-add", "rdma link del rxe0 && sleep 1 && rdma link add rxe0 type rxe netdev eth0"},
	} {
		t.Run(f.name, func(t *testing.T) {
			st := e.stack(t)
			port := 4600 + 10*i
			s := e.sock(t, st, uint16(port), 8*time.Minute)
			k.must(t, map[string]any{"op": "open", "port": port + 1})
			kaddr := netip.AddrPortFrom(e.peer, uint16(port+1))
			sizes := streamSizes(10000)
			kRecv := k.bg(t, map[string]any{"op": "recv", "port": port + 1, "first": 0, "sizes": sizes, "timeout": 300})
			kSend := k.bg(t, map[string]any{"op": "send", "port": port + 1, "dst": s.BoundAddr().String(), "first": 0, "sizes": sizes, "timeout": 400})
			errc := make(chan error, 1)
			go func() { errc <- sendAll(s, kaddr, 0, sizes) }()
			if err := recvAll(s, kaddr, 0, sizes[:1000]); err != nil {
				t.Fatal("kernel to godapl, before the fault:", err)
			}
			fault := k.bg(t, map[string]any{"op": "sh", "cmd": f.cmd})
			if err := recvAll(s, kaddr, 1000, sizes[1000:]); err != nil {
				t.Error("kernel to godapl:", err)
			}
			if err := <-errc; err != nil {
				t.Error("godapl send:", err)
			}
			for what, w := range map[string]func() (map[string]any, error){"fault": fault, "godapl to kernel": kRecv, "kernel send": kSend} {
				if _, err := w(); err != nil {
					t.Error(what+":", err)
				}
			}
			for _, n := range st.Info().Nodes {
				for _, c := range n.Conns {
					for _, p := range c.Paths {
						t.Logf("%v -> %v: path up %d times", c.Local, c.Remote, p.Ups)
					}
				}
			}
		})
	}
}
