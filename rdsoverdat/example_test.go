package rdsoverdat_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/rdsoverdat"
)

// Two RDS sockets exchange a request and its answer. A Stack is the RDS
// instance of a process; each local address a socket binds to becomes a
// node, and nodes reach each other through the stack's transport: here
// the dat transport (RDS over DAT) on the DAT registry's "mem" IA, the
// in-memory provider, so the example needs no network. Without an IA name
// the dat transport runs over soft-iWARP, and two processes on two hosts
// do the same with one node each.
func Example() {
	// A registry of the example's own: its mem fabric is nobody else's.
	// (An error beside a registry only says the interfaces' IAs are
	// missing.)
	reg, err := providers.New(providers.Options{})
	if reg == nil {
		fmt.Println(err)
		return
	}
	st := rdsoverdat.NewStack(rdsoverdat.Config{
		Transports: []rdsoverdat.Transport{rdsoverdat.DAT(rdsoverdat.DATConfig{Registry: reg, IA: "mem"})},
	})
	defer st.Close()

	server := st.Socket()
	if err := server.Bind(netip.MustParseAddrPort("127.93.0.2:4000")); err != nil {
		fmt.Println(err)
		return
	}
	client := st.Socket()
	if err := client.Bind(netip.MustParseAddrPort("127.93.0.1:4001")); err != nil {
		fmt.Println(err)
		return
	}
	client.SetDeadline(time.Now().Add(10 * time.Second))
	server.SetDeadline(time.Now().Add(10 * time.Second))

	// The first send brings the connection between the two nodes up.
	if _, err := client.SendTo([]byte("ping?"), server.BoundAddr(), 0); err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 64)
	m := rdsoverdat.Msg{Data: buf}
	n, err := server.RecvMsg(&m, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("server got %q from %v\n", buf[:n], m.Addr)
	server.SendTo([]byte("pong!"), m.Addr, 0)

	m = rdsoverdat.Msg{Data: buf}
	if n, err = client.RecvMsg(&m, 0); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("client got %q from %v\n", buf[:n], m.Addr)

	c := st.Info().Nodes[0].Conns[0]
	fmt.Printf("connection %v -> %v over %s\n", c.Local, c.Remote, c.Transport)
	// Output:
	// server got "ping?" from 127.93.0.1:4001
	// client got "pong!" from 127.93.0.2:4000
	// connection 127.93.0.1 -> 127.93.0.2 over dat
}
