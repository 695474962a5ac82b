package rdsoverdat

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Conformance pins from the line-by-line audit of the seed documents
// against the code (docs/CONFORMANCE.md names the requirement each test
// pins). Where both backends can run a case, it runs on both, so the
// kernel's AF_RDS decides the errno.

// RDMA calls on sockets whose transport has none (the kernel's loopback
// and rds_tcp, rdsoverdat's loop): the errnos and their order follow
// __rds_rdma_map, rds_free_mr and rds_cmsg_rdma_dest. RDS_RECVERR is off
// by default and reads back what was set.
func TestBackendRDMAErrnos(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		u := st.Socket()
		defer u.Close()
		_, err := u.GetMR(make([]byte, 8), 0)
		wantErrno(t, err, syscall.ENOTCONN)
		wantErrno(t, u.FreeMR(0, RDMAInvalidate), syscall.EINVAL) // no transport to flush

		a := mustBind(t, st, ap(as[0], 0))
		var re RecvErr
		if err := a.Option(&re); err != nil || re {
			t.Fatalf("RDS_RECVERR default %v, %v", re, err)
		}
		if err := a.SetOption(RecvErr(true)); err != nil {
			t.Fatal(err)
		}
		if a.Option(&re); !re {
			t.Fatal("RDS_RECVERR not kept")
		}
		_, err = a.GetMR(make([]byte, 8), 0)
		wantErrno(t, err, syscall.EOPNOTSUPP)
		wantErrno(t, a.SetOption(GetMR{Vec: make([]byte, 8)}), syscall.EOPNOTSUPP)
		wantErrno(t, a.FreeMR(0, RDMAInvalidate), syscall.EINVAL)
		wantErrno(t, a.SetOption(FreeMR{Cookie: MakeCookie(77, 0)}), syscall.EINVAL) // no such mapping
		dst := ap(as[1], 9)
		for _, c := range []struct {
			name string
			cm   []ControlMessage
			want syscall.Errno
		}{
			{"RDMA_DEST of no mapping", []ControlMessage{RDMADest(MakeCookie(77, 0))}, syscall.EINVAL},
			{"RDMA_MAP", []ControlMessage{RDMAMap{Mem: make([]byte, 8)}}, syscall.EOPNOTSUPP},
			{"RDMA_ARGS", []ControlMessage{RDMAArgs{Cookie: 5, RemoteBytes: 1, Local: [][]byte{{0}}}}, syscall.EOPNOTSUPP},
			{"MAP and DEST", []ControlMessage{RDMAMap{Mem: make([]byte, 8)}, RDMADest(5)}, syscall.EINVAL},
			{"CONG_UPDATE", []ControlMessage{CongUpdate(1)}, syscall.EINVAL},
		} {
			_, err := a.SendMsg(&Msg{Data: []byte("x"), Addr: dst, Control: c.cm}, 0)
			wantErrnoNamed(t, c.name, err, c.want)
		}
	})
}

// sendmsg refuses flags other than MSG_DONTWAIT (no out-of-band data)
// and non-unicast destinations; SO_RDS_TRANSPORT refuses RDS_TRANS_NONE
// and any change once bind attached a transport.
func TestBackendSendFlagsAndTransport(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		u := st.Socket()
		defer u.Close()
		wantErrno(t, u.SetOption(TransportOption(TransNone)), syscall.EINVAL)
		a := mustBind(t, st, ap(as[0], 0))
		wantErrno(t, a.SetOption(TransportOption(TransTCP)), syscall.EOPNOTSUPP)
		dst := ap(as[1], 9)
		for _, c := range []struct {
			name  string
			to    netip.AddrPort
			flags MsgFlags
			want  syscall.Errno
		}{
			{"MSG_OOB", dst, MsgOOB, syscall.EOPNOTSUPP},
			{"MSG_PEEK", dst, MsgPeek, syscall.EOPNOTSUPP},
			{"broadcast", netip.MustParseAddrPort("255.255.255.255:9"), 0, syscall.EINVAL},
			{"multicast", netip.MustParseAddrPort("224.0.0.1:9"), 0, syscall.EINVAL},
			{"INADDR_ANY", netip.MustParseAddrPort("0.0.0.0:9"), 0, syscall.EINVAL},
			{"no destination", netip.AddrPort{}, 0, syscall.ENOTCONN},
		} {
			_, err := a.SendTo([]byte("x"), c.to, c.flags)
			wantErrnoNamed(t, c.name, err, c.want)
		}
	})
}

// Without SO_SNDBUF/SO_RCVBUF a socket gets the wmem_default and
// rmem_default sysctls, as RDS counts them (half).
func TestBackendDefaultBuffers(t *testing.T) {
	want := func(t *testing.T, path string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Skipf("no %s: %v", path, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return n / 2
	}
	backends(t, func(t *testing.T, st *Stack) {
		s := st.Socket()
		defer s.Close()
		var sb SendBuffer
		var rb RecvBuffer
		if err := s.Option(&sb); err != nil {
			t.Fatal(err)
		}
		if err := s.Option(&rb); err != nil {
			t.Fatal(err)
		}
		if w := want(t, "/proc/sys/net/core/wmem_default"); int(sb) != w {
			t.Errorf("SO_SNDBUF %d, want %d", sb, w)
		}
		if w := want(t, "/proc/sys/net/core/rmem_default"); int(rb) != w {
			t.Errorf("SO_RCVBUF %d, want %d", rb, w)
		}
	})
}

// The RDS port space is its own: a port held by a UDP socket, or the
// TCP port of the tcp transport's listener, is free for an RDS socket.
func TestBackendPortSpace(t *testing.T) {
	check := func(t *testing.T, st *Stack) {
		as := testAddrs(1)
		uc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap(as[0], 0)))
		if err != nil {
			t.Skipf("no UDP socket on %v: %v", as[0], err)
		}
		defer uc.Close()
		mustBind(t, st, ap(as[0], uc.LocalAddr().(*net.UDPAddr).AddrPort().Port()))
		mustBind(t, st, ap(as[0], wire.TCPPort))
	}
	backends(t, check)
	t.Run("tcp", func(t *testing.T) {
		leakCheck(t)
		check(t, tcpStack(t))
	})
}

// A socket that chose its transport with SO_RDS_TRANSPORT and binds an
// address that transport cannot use: ENOPROTOOPT (rds_bind), not the
// EADDRNOTAVAIL of a socket whose transport bind picks.
func TestBindChosenTransportRefuses(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	s := st.Socket()
	defer s.Close()
	if err := s.SetOption(TransportOption(TransTCP)); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, s.Bind(netip.MustParseAddrPort("10.255.254.253:4000")), syscall.ENOPROTOOPT)
	p := st.Socket()
	defer p.Close()
	wantErrno(t, p.Bind(netip.MustParseAddrPort("10.255.254.253:4000")), syscall.EADDRNOTAVAIL)
}

// RDS_CONG_MONITOR with a mask installed by setsockopt: a port group in
// the mask that becomes uncongested yields one RDS_CMSG_CONG_UPDATE,
// alone, with no data and no sender address; a socket whose mask does
// not cover the port gets nothing.
func TestCongMonitorInstalledMask(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 4200), RecvBuffer(1000))
		other := mustBind(t, st, ap(as[0], 0))
		mask := CongMonitorMask(b.BoundAddr().Port())
		if err := a.SetOption(CongMonitor{Enable: true, Mask: mask}); err != nil {
			t.Fatal(err)
		}
		if err := other.SetOption(CongMonitor{Enable: true, Mask: ^mask}); err != nil {
			t.Fatal(err)
		}
		// a's Msg is reused: the sender of this message must not linger
		// on the notification.
		if _, err := b.SendTo([]byte("hi"), a.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		m := Msg{Data: make([]byte, 1000)}
		a.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := a.RecvMsg(&m, 0); err != nil || n != 2 || m.Addr != b.BoundAddr() {
			t.Fatalf("first message: %d %v from %v", n, err, m.Addr)
		}
		for range 2 {
			if _, err := a.SendTo(make([]byte, 600), b.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
		}
		conn := st.nodeAt(as[0]).connFor(as[1], a.sock().trans.Type())
		bport := wire.Port(b.BoundAddr().Port())
		eventually(t, 5*time.Second, "peer map update", func() bool { return conn.fcong.test(bport) })
		buf := make([]byte, 1000)
		for range 2 {
			recvTimeout(t, b, buf, 5*time.Second)
		}
		eventually(t, 5*time.Second, "uncongested", func() bool { return !conn.fcong.test(bport) })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := a.Wait(ctx, PollIn); err != nil {
			t.Fatal(err)
		}
		n, err := a.RecvMsg(&m, MsgDontWait)
		if err != nil || n != 0 || len(m.Control) != 1 || m.Control[0] != CongUpdate(mask) || m.Addr.IsValid() {
			t.Fatalf("notification: %d %v control %v from %v", n, err, m.Control, m.Addr)
		}
		_, err = other.RecvMsg(&Msg{}, MsgDontWait)
		wantErrno(t, err, syscall.EAGAIN)
	})
}

// A message with no payload takes no SO_SNDBUF room at the sender and no
// SO_RCVBUF room at the receiver (it cannot congest a port), yet arrives
// with its sender's address.
func TestZeroLengthTakesNoRoom(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0), SendBuffer(1))
		b := mustBind(t, st, ap(as[1], 0), RecvBuffer(1))
		const n = 20
		for i := range n {
			if _, err := a.SendTo(nil, b.BoundAddr(), MsgDontWait); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			if snd, _ := a.Buffered(); snd != 0 {
				t.Fatalf("SO_SNDBUF charged %d bytes", snd)
			}
		}
		eventually(t, 5*time.Second, "delivery", func() bool { return b.Poll()&PollIn != 0 })
		for range n {
			k, from := recvTimeout(t, b, make([]byte, 4), 5*time.Second)
			if k != 0 || from != a.BoundAddr() {
				t.Fatalf("%d bytes from %v", k, from)
			}
			if _, rcv := b.Buffered(); rcv != 0 {
				t.Fatalf("SO_RCVBUF charged %d bytes", rcv)
			}
		}
		if st.nodeAt(as[1]).lcong.test(wire.Port(b.BoundAddr().Port())) {
			t.Fatal("zero-length messages congested the port")
		}
	})
}

// Closing a socket cancels the messages it still has queued or
// unacknowledged.
func TestCloseCancelsPending(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	s := mustBind(t, st, ap(as[0], 0))
	dst := ap(as[1], 9) // nobody listens: nothing is ever acknowledged
	for range 3 {
		if _, err := s.SendTo([]byte("x"), dst, 0); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if n := st.nodeAt(as[0]).Stats().SendCanceled; n != 3 {
		t.Fatalf("%d messages canceled by close, want 3", n)
	}
}

// An RDMA status notification makes the socket readable (POLLIN) and is
// read as an empty message with no sender; each op yields at most one.
func TestRDMANotifyPollIn(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	win := make([]byte, 16)
	ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite})
	m := Msg{Data: make([]byte, 16)}
	r.srv.SetReadDeadline(time.Now().Add(rigWait))
	r.cli.SendTo([]byte("hi"), r.srv.BoundAddr(), 0)
	if _, err := r.srv.RecvMsg(&m, 0); err != nil || m.Addr != r.cli.BoundAddr() {
		t.Fatalf("message: %v from %v", err, m.Addr)
	}
	r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: 16, Local: [][]byte{make([]byte, 16)},
		Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 5})
	expectNext(t, r.cli, []byte("ack"))
	ctx, cancel := context.WithTimeout(context.Background(), rigWait)
	defer cancel()
	if ev, err := r.srv.Wait(ctx, PollIn); err != nil || ev&PollIn == 0 {
		t.Fatalf("Wait: %#x %v", ev, err)
	}
	n, err := r.srv.RecvMsg(&m, MsgDontWait)
	if err != nil || n != 0 || len(m.Control) != 1 || m.Control[0] != (RDMANotify{UserToken: 5, Status: RDMASuccess}) || m.Addr.IsValid() {
		t.Fatalf("notification: %d %v control %v from %v", n, err, m.Control, m.Addr)
	}
	if ev := r.srv.Poll(); ev&PollIn != 0 {
		t.Fatalf("a second notification for one op (poll %#x)", ev)
	}
}

// The sysctl reader behind the default buffers: half the file's value,
// the fallback when it is missing or not a number.
func TestSysctlBuffer(t *testing.T) {
	dir := t.TempDir()
	file := func(s string) string {
		p := dir + "/" + strconv.Itoa(len(s))
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{file("4000\n"), 2000},
		{file("junk"), 7},
		{dir + "/missing", 7},
	} {
		if got := sysctlBuffer(c.path, 7); got != c.want {
			t.Errorf("%s: %d, want %d", c.path, got, c.want)
		}
	}
}

// An RDMA_DEST names a mapping of the sending socket: a cookie of
// another socket's mapping is EINVAL even on an RDMA transport.
func TestRDMADestOwnMappingOnly(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	ck, err := r.cli.GetMR(make([]byte, 8), 0)
	if err != nil {
		t.Fatal(err)
	}
	other := r.socket(t, r.cliNode)
	_, err = other.SendMsg(&Msg{Data: []byte("x"), Addr: r.srv.BoundAddr(), Control: []ControlMessage{RDMADest(ck)}}, 0)
	wantErrno(t, err, syscall.EINVAL)
	if got := r.request(t, r.cli, r.srv, []byte("own"), RDMADest(ck)); got != ck {
		t.Fatalf("cookie %#x, want %#x", got, ck)
	}
}

// A blocking send to a congested port waits, and SO_SNDTIMEO ends the
// wait with ETIMEDOUT as rds(7) says of every wait (the kernel's
// rds_cong_wait itself ignores the timeout).
func TestCongestedSendTimesOut(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(10))
	if _, err := a.SendTo(make([]byte, 20), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	conn := st.nodeAt(as[0]).connFor(as[1], a.sock().trans.Type())
	eventually(t, 5*time.Second, "peer map update", func() bool { return conn.fcong.test(wire.Port(b.BoundAddr().Port())) })
	if err := a.SetOption(SendTimeout(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := a.SendTo([]byte("x"), b.BoundAddr(), 0)
	wantErrno(t, err, syscall.ETIMEDOUT)
	_, err = a.SendTo([]byte("x"), b.BoundAddr(), MsgDontWait)
	wantErrno(t, err, syscall.ENOBUFS)
}

// RDS_CANCEL_SENT_TO also drops messages already transmitted and not yet
// acknowledged: the transport holds them, the cancel returns their
// SO_SNDBUF room, and the reconnect that follows retransmits none.
func TestCancelSentToTransmittedUnacked(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	r.srv.SendTo([]byte("up"), r.cli.BoundAddr(), 0)
	expectNext(t, r.cli, []byte("up"))
	r.mem.hold.Store(true)
	for range 3 {
		if _, err := r.srv.SendTo([]byte("lost"), r.cli.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	node := r.st.nodeAt(r.srvNode)
	conn := node.Conn(r.cliNode, TransIB)
	p := conn.Path(0)
	node.mu.RLock()
	mn := node.trans[TransIB].(*memNode)
	node.mu.RUnlock()
	eventually(t, 5*time.Second, "transmitted", func() bool { return mn.parkedOn(p) == 3 })
	if q, u := p.Pending(); q != 0 || u != 3 {
		t.Fatalf("pending: %d queued, %d unacknowledged; want 0, 3", q, u)
	}
	canceled := node.Stats().SendCanceled
	if err := r.srv.SetOption(CancelSentTo(r.cli.BoundAddr())); err != nil {
		t.Fatal(err)
	}
	if q, u := p.Pending(); q != 0 || u != 0 || node.Stats().SendCanceled-canceled != 3 {
		t.Fatalf("after cancel: %d queued, %d unacknowledged, %d canceled", q, u, node.Stats().SendCanceled-canceled)
	}
	if snd, _ := r.srv.Buffered(); snd != 0 {
		t.Fatalf("SO_SNDBUF still charged %d bytes", snd)
	}
	r.mem.hold.Store(false)
	conn.Reset()
	r.srv.SendTo([]byte("after"), r.cli.BoundAddr(), 0)
	expectNext(t, r.cli, []byte("after"))
}

// The default limits of rds-rdma(7): 2048 mappings, 1 MiB each.
func TestRDMADefaultLimits(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	buf := make([]byte, 1)
	for i := range 2048 {
		if _, err := r.cli.GetMR(buf, 0); err != nil {
			t.Fatalf("mapping %d: %v", i, err)
		}
	}
	_, err := r.cli.GetMR(buf, 0)
	wantErrno(t, err, syscall.EAGAIN)
	_, err = r.cli.GetMR(make([]byte, 1<<20+1), 0)
	wantErrno(t, err, syscall.EINVAL)
	r.cli.Close()
	if _, err := r.srv.GetMR(make([]byte, 1<<20), 0); err != nil {
		t.Fatalf("1 MiB mapping: %v", err)
	}
}

// Congestion on both backends (one address: the kernel's loopback keeps
// the congestion bit in the map of the connection's local address, so
// only a socket's own address shows it to a sender): a receiver over
// SO_RCVBUF makes non-blocking sends to its port fail with ENOBUFS,
// which arms a monitoring sender's mask; once the receiver has read its
// queue, the sender gets one RDS_CMSG_CONG_UPDATE for the port, alone,
// with no sender address, and may send again. The kernel half binds a
// non-loopback address of the host (a socket on 127/8 never congests
// there, see TestBackendKernelLoopNeverCongests), so it needs a
// transport that serves one: rds_tcp, as in the lab VM.
func TestBackendCongestion(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		addr := testAddrs(1)[0]
		if st.Kernel() {
			addr = kernelTransportAddr(t, st)
		}
		a := mustBind(t, st, ap(addr, 0), CongMonitor{Enable: true})
		b := mustBind(t, st, ap(addr, 0), RecvBuffer(1000))
		mask := CongMonitorMask(b.BoundAddr().Port())
		sent := 0
		for {
			_, err := a.SendTo(make([]byte, 600), b.BoundAddr(), MsgDontWait)
			if err != nil {
				wantErrno(t, err, syscall.ENOBUFS)
				break
			}
			if sent++; sent > 50 {
				t.Fatal("no ENOBUFS after 50 messages of 600 bytes to a 1000-byte SO_RCVBUF")
			}
			time.Sleep(time.Millisecond) // let a map update travel
		}
		buf := make([]byte, 1000)
		for range sent {
			recvTimeout(t, b, buf, 5*time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := a.Wait(ctx, PollIn); err != nil {
			t.Fatal(err)
		}
		m := Msg{Data: buf, Addr: b.BoundAddr()}
		n, err := a.RecvMsg(&m, MsgDontWait)
		if err != nil || n != 0 || len(m.Control) != 1 || m.Control[0] != CongUpdate(mask) || m.Addr.IsValid() {
			t.Fatalf("notification: %d %v control %v from %v", n, err, m.Control, m.Addr)
		}
		if _, err := a.SendTo([]byte("x"), b.BoundAddr(), MsgDontWait); err != nil {
			t.Fatalf("after uncongestion: %v", err)
		}
		_, err = a.RecvMsg(&m, MsgDontWait)
		wantErrno(t, err, syscall.EAGAIN) // one notification only
	})
}

// The kernel's loopback transport, which a socket bound to a 127/8
// address gets, keeps no congestion state: rds_recv_rcvbuf_delta returns
// before its congestion check for RDS_TRANS_LOOP sockets, so a receiver
// far over its SO_RCVBUF never makes a send to it fail with ENOBUFS, and
// a monitoring sender gets no RDS_CMSG_CONG_UPDATE. rds(7) has every
// socket congest, and rdsoverdat does on all its transports (the
// rdsoverdat half of TestBackendCongestion runs on 127/8); this pins the
// kernel's exception (docs/CONFORMANCE.md).
func TestBackendKernelLoopNeverCongests(t *testing.T) {
	t.Run("kernel", func(t *testing.T) {
		requireKernel(t)
		st := newTestStack(t, Config{Kernel: true})
		as := testAddrs(1)
		a := mustBind(t, st, ap(as[0], 0), CongMonitor{Enable: true})
		b := mustBind(t, st, ap(as[0], 0), RecvBuffer(1000))
		const n = 20
		for i := range n {
			if _, err := a.SendTo(make([]byte, 600), b.BoundAddr(), MsgDontWait); err != nil {
				t.Fatalf("send %d (%d bytes unread by a 1000-byte SO_RCVBUF): %v", i, i*600, err)
			}
			time.Sleep(time.Millisecond) // room for a map update, were there one
		}
		buf := make([]byte, 1000)
		for range n {
			recvTimeout(t, b, buf, 5*time.Second)
		}
		_, err := a.RecvMsg(&Msg{Data: buf}, MsgDontWait)
		wantErrno(t, err, syscall.EAGAIN) // no CONG_UPDATE
	})
}

// kernelTransportAddr returns a non-loopback IPv4 address of the host
// that the kernel's RDS binds (rds_tcp or rds_rdma serves it), and skips
// the test when there is none.
func kernelTransportAddr(t *testing.T, st *Stack) netip.Addr {
	t.Helper()
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var tried []string
	for _, ifa := range ifas {
		pfx, err := netip.ParsePrefix(ifa.String())
		if err != nil || !pfx.Addr().Is4() || pfx.Addr().IsLoopback() {
			continue
		}
		s := st.Socket()
		err = s.Bind(ap(pfx.Addr(), 0))
		s.Close()
		if err == nil {
			return pfx.Addr()
		}
		tried = append(tried, err.Error())
	}
	t.Skipf("no non-loopback address the kernel's RDS binds (rds_tcp not loaded?): %v", tried)
	return netip.Addr{}
}
