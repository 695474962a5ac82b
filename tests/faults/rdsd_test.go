package faults

// One rdsd per host, many client processes: two namespaces, a daemon in
// each, eight client processes on each side (four senders, four
// receivers) talking to the other side's processes through the
// daemons. Every pair of nodes has one connection, whatever the number
// of processes; delivery stays exact through connection resets and a
// link outage; a client killed with SIGKILL mid-stream takes nothing
// with it; a daemon that dies fails its clients' calls at once, and its
// replacement serves new clients.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/tests/internal/netns"
)

// roleDaemon runs an rdsd: the node of Local over the transport, served
// on the Daemon socket, until SIGTERM.
func roleDaemon() error {
	c, err := readConf()
	if err != nil {
		return err
	}
	stop := stopSignal()
	path := c.Daemon
	c.Daemon = ""
	st := newStack(c)
	defer st.Close()
	d, err := rdsoverdat.NewDaemon(st, rdsoverdat.DaemonConfig{Addrs: []netip.Addr{c.Local}})
	if err != nil {
		return err
	}
	ln, err := rdsoverdat.ListenDaemon(path, 0o600, -1)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	rep := newReporter()
	rep.send(report{Kind: "ready"})
	select {
	case <-stop:
	case err := <-served:
		return err
	}
	d.Close()
	<-served
	rep.send(report{Kind: "final"})
	return nil
}

// daemonSide is one namespace's daemon and clients.
type daemonSide struct {
	name  string
	path  string
	local netip.Addr
	d     *child
	rcvs  []*child
	snds  []*child
}

// counter returns a counter of the daemon's node.
func (s *daemonSide) counter(t *testing.T, name string) uint64 {
	t.Helper()
	st := rdsoverdat.NewStack(rdsoverdat.Config{Daemon: s.path})
	defer st.Close()
	info, err := st.DaemonInfo()
	if err != nil {
		t.Fatalf("%s daemon's info: %v", s.name, err)
	}
	var v uint64
	for _, n := range info.Nodes {
		for _, c := range n.Counters {
			if c.Name == name {
				v += c.Value
			}
		}
	}
	return v
}

// conns returns the daemon's connections (what rds-info -n prints).
func (s *daemonSide) conns(t *testing.T) []rdsoverdat.ConnInfo {
	t.Helper()
	st := rdsoverdat.NewStack(rdsoverdat.Config{Daemon: s.path})
	defer st.Close()
	info, err := st.DaemonInfo()
	if err != nil {
		t.Fatalf("%s daemon's info: %v", s.name, err)
	}
	var cs []rdsoverdat.ConnInfo
	for _, n := range info.Nodes {
		cs = append(cs, n.Conns...)
	}
	return cs
}

const (
	daemonClients    = 4 // senders and receivers per side
	daemonSockets    = 2 // sockets per client process
	daemonRecvPort   = 4000
	daemonSendPort   = 5000
	daemonVictimPort = 6000
	daemonAfterPort  = 7000
)

func TestRDSDaemonTwoHosts(t *testing.T) { eachTransport(t, testRDSDaemonTwoHosts) }

func testRDSDaemonTwoHosts(t *testing.T, tr string) {
	r := newRig(t, false)
	dir := t.TempDir()
	sides := []*daemonSide{
		{name: "a", path: filepath.Join(dir, "a.sock"), local: r.addrA},
		{name: "b", path: filepath.Join(dir, "b.sock"), local: r.addrB},
	}
	nss := []*netns.NS{r.a, r.b}
	for i, s := range sides {
		s.d = startChild(t, nss[i], "rdsd", roleConf{Local: s.local, Daemon: s.path, Transport: tr})
	}
	t.Logf("%s: a daemon per namespace, %d sender and %d receiver processes on each side", tr, daemonClients, daemonClients)
	start := time.Now()
	for i, s := range sides {
		for p := range daemonClients {
			s.rcvs = append(s.rcvs, startChild(t, nss[i], "rds-recv", roleConf{Local: s.local, Sockets: daemonSockets,
				Size: 1024, Daemon: s.path, Port: daemonRecvPort + p*daemonSockets}))
		}
	}
	for i, s := range sides {
		peer := sides[1-i]
		for p := range daemonClients {
			s.snds = append(s.snds, startChild(t, nss[i], "rds-send", roleConf{Local: s.local, Peer: peer.local,
				Sockets: daemonSockets, Dests: daemonSockets, Size: 1024, Daemon: s.path,
				Port: daemonSendPort + p*daemonSockets, DestPort: daemonRecvPort + p*daemonSockets}))
		}
	}
	for _, s := range sides {
		for p := range daemonClients {
			midStream(t, s.rcvs[p], sides[1-sideIndex(sides, s)].snds[p])
		}
	}
	// One connection per pair of nodes, for sixteen processes.
	for _, s := range sides {
		cs := s.conns(t)
		if len(cs) != 1 || cs[0].Local != s.local || cs[0].Remote != sides[1-sideIndex(sides, s)].local {
			t.Fatalf("%s daemon's connections (rds-info -n): %+v, want one to the peer", s.name, cs)
		}
	}

	// A client killed mid-stream: a fifth sender on a, to a receiver
	// process of its own on b. What it had sent and not yet had
	// acknowledged is canceled: its receiver gets a prefix of its
	// stream, without gaps or duplicates, and its port is free again.
	vrcv := startChild(t, r.b, "rds-recv", roleConf{Local: r.addrB, Sockets: 1, Size: 1024, Daemon: sides[1].path,
		Port: daemonVictimPort})
	victim := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peer: r.addrB, Sockets: 1, Dests: 1,
		Size: 1024, Daemon: sides[0].path, Port: daemonVictimPort, DestPort: daemonVictimPort})
	midStream(t, vrcv, victim)
	victim.kill() // SIGKILL
	rebindAfterKill(t, sides[0].path, netip.AddrPortFrom(r.addrA, daemonVictimPort))

	// Faults on the one connection every process shares.
	destroyed := 0
	for range 2 {
		destroyed += resetMidStream(t, r.a, tr, sides[1].rcvs[1], sides[0].snds[1])
	}
	midStream(t, sides[1].rcvs[1], sides[0].snds[1])
	if err := r.veth.SetUp(false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := r.veth.SetUp(true); err != nil {
		t.Fatal(err)
	}
	// The daemon counts a reset when it notices the dead connection,
	// which may come after the link is back: wait for the count rather
	// than read it once.
	resets := sides[0].counter(t, "conn_reset")
	for end := time.Now().Add(30 * time.Second); resets < 2 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		resets = sides[0].counter(t, "conn_reset")
	}
	if destroyed < 2 || resets < 2 {
		t.Errorf("ss -K destroyed %d sockets, daemon a counts %d resets: the faults did not happen", destroyed, resets)
	}

	vr := vrcv.stop(30 * time.Second)
	if vr.Received == 0 || vr.Gaps != 0 || vr.Duplicates != 0 || vr.Corrupt != 0 {
		t.Errorf("the killed client's receiver: %+v", vr)
	}

	// Exact delivery per sender process, to the receiver process it
	// sends to.
	for i, s := range sides {
		peer := sides[1-i]
		for p := range daemonClients {
			snd, rcv := s.snds[p], peer.rcvs[p]
			sr := snd.stop(60 * time.Second)
			rcv.waitFor("all messages", 30*time.Second, func(r report) bool { return r.Received >= sr.Sent })
			rr := rcv.stop(30 * time.Second)
			exact(t, tally(fmt.Sprintf("rdsd %s %s->%s process %d: 2 resets, link down/up, a client SIGKILLed",
				tr, s.name, peer.name, p), time.Since(start), sr, rr), sr, rr)
		}
	}

	// The daemon of a dies: its clients' calls fail at once, and a new
	// daemon on the same socket serves a new sender exactly.
	after := startChild(t, r.b, "rds-recv", roleConf{Local: r.addrB, Sockets: 1, Size: 1024, Daemon: sides[1].path,
		Port: daemonAfterPort})
	sides[0].d.kill() // SIGKILL
	if _, err := os.Stat(sides[0].path); err != nil {
		t.Fatalf("the killed daemon's socket file: %v", err)
	}
	startChild(t, r.a, "rdsd", roleConf{Local: r.addrA, Daemon: sides[0].path, Transport: tr})
	snd := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peer: r.addrB, Sockets: 1, Dests: 1, Size: 1024,
		Daemon: sides[0].path, Port: daemonAfterPort, DestPort: daemonAfterPort, Count: 2000})
	sr := snd.wait(60 * time.Second)
	after.waitFor("all messages", 30*time.Second, func(r report) bool { return r.Received >= sr.Sent })
	ar := after.stop(30 * time.Second)
	exact(t, tally("rdsd a restarted: a new sender", time.Since(start), sr, ar), sr, ar)
}

// rebindAfterKill binds a through the daemon at path, which succeeds
// once the daemon has released the killed client that held it.
func rebindAfterKill(t *testing.T, path string, a netip.AddrPort) {
	t.Helper()
	st := rdsoverdat.NewStack(rdsoverdat.Config{Daemon: path})
	defer st.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := st.Socket()
		err := s.Bind(a)
		s.Close()
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatalf("binding the killed client's %v: %v", a, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sideIndex(sides []*daemonSide, s *daemonSide) int {
	for i, x := range sides {
		if x == s {
			return i
		}
	}
	return -1
}
