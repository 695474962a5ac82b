package rdsoverdat

import (
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// A client that goes while an RDMA op of its is still referenced (a
// transport holds the op's message while a work request is posted)
// leaves its regions mapped in the daemon until the message is freed:
// the op's late access reaches memory, not a hole, and the mapping
// goes with the message.
func TestDaemonRegionOutlivesClient(t *testing.T) {
	leakCheck(t)
	st, d := daemonStack(t, Config{Transports: []Transport{DAT(DATConfig{Registry: registryOn(mem.New()), IA: "mem"})}})
	as := testAddrs(2)
	cli := mustBind(t, st, ap(as[0], 0))
	buf, err := cli.SharedMem(4096)
	if err != nil {
		t.Fatal(err)
	}
	dc := daemonConnOf(cli.b.(*daemonSocket))
	tab := dc.mem.t
	sk := dc.s.b.(*sock)

	// No node listens at as[1]: the message stays queued, as one whose
	// op the transport has posted stays referenced.
	dst := ap(as[1], 4000)
	if _, err := cli.SendMsg(&Msg{Data: []byte("op"), Addr: dst, Control: []ControlMessage{
		RDMAArgs{Cookie: MakeCookie(1, 0), RemoteBytes: 64, Local: [][]byte{buf[:64]}, Flags: RDMAReadWrite}}}, 0); err != nil {
		t.Fatal(err)
	}
	var held *message
	eventually(t, 5*time.Second, "the op's message on a path", func() bool {
		n := sk.boundNode()
		if n == nil {
			return false
		}
		n.mu.RLock()
		conns := n.connList
		n.mu.RUnlock()
		for _, c := range conns {
			for _, p := range c.allPaths() {
				p.mu.Lock()
				for _, l := range []*msgList{&p.sendQ, &p.retrans} {
					for m := l.head; m != nil && held == nil; m = m.next {
						if m.sock == sk && m.rdma != nil {
							m.Hold() // as a transport does while its work request is posted
							held = m
						}
					}
				}
				p.mu.Unlock()
			}
		}
		return held != nil
	})
	local := held.rdma.Local()[0]

	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the daemon to let the client go", func() bool { return d.Clients() == 0 })
	if tab.Mapped() == 0 {
		t.Fatal("the client's region was unmapped under a referenced op")
	}
	copy(local, "the op's late write") // a fault here kills the test
	held.release()
	if n := tab.Mapped(); n != 0 {
		t.Fatalf("%d bytes still mapped once the op's message was freed", n)
	}
}
