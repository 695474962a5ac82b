//go:build rdmacore

// Command peer is one end of the cross-provider test of make
// rdmacore-lab: godapl's pure-Go siw on one side, godapl's rdmacore over
// the kernel's siw on the other. Both ends run this program; the active
// end (-connect) sends first, as a kernel siw initiator expects. They
// exchange private data, Send/Recv messages of several sizes both ways
// (the passive end's receives on an SRQ with -srq), RDMA Write and RDMA
// Read both ways, and check every byte; the program prints "peer: OK"
// and exits 0 when all of it held.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/rdmacore"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// Areas of each side's buffer.
const (
	slot     = 4096
	nRecv    = 16
	sendArea = nRecv * slot
	target   = 128 << 10 // the peer writes here
	source   = 256 << 10 // the peer reads this
	sink     = 384 << 10 // RDMA Read results
	area     = 64 << 10
	bufSize  = 512 << 10
)

type side struct {
	active bool
	pd     verbs.PD
	cq     verbs.CQ
	qp     verbs.QP
	srq    verbs.SRQ
	mr     verbs.MR
	buf    []byte
	peer   struct {
		addr uint64
		rkey uint32
	}
	nextID uint64
	// conn is the connection once made: a wait ends when it does, as
	// receives posted to an SRQ are not flushed when the QP fails.
	conn verbs.Conn
	// Completions that arrived while another kind was awaited: a
	// message from the peer may land before this end's own send
	// completes.
	early []verbs.WC
}

func main() {
	provider := flag.String("provider", "siw", "verbs provider: siw or rdmacore")
	device := flag.String("device", "", "rdmacore device (default: the one owning the address)")
	listen := flag.String("listen", "", "listen on ip:port (passive end)")
	connect := flag.String("connect", "", "connect to ip:port (active end)")
	useSRQ := flag.Bool("srq", false, "the passive end receives through an SRQ")
	timeout := flag.Duration("timeout", 60*time.Second, "bound on the whole exchange")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	listening := func(a net.Addr) { fmt.Println("peer: listening on", a) }
	if err := run(ctx, *provider, *device, *listen, *connect, *useSRQ, listening); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
	fmt.Println("peer: OK")
}

func open(provider, device, addr string) (verbs.Device, error) {
	switch provider {
	case "siw":
		return siw.New(siw.Options{}).Open(siw.DeviceName)
	case "rdmacore":
		p := rdmacore.New()
		if device == "" {
			d, err := p.OpenAddr(addr)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
		return p.Open(device)
	}
	return nil, fmt.Errorf("unknown provider %q", provider)
}

// run is one end of the exchange; the passive end calls listening once
// it listens.
func run(ctx context.Context, provider, device, listen, connect string, useSRQ bool, listening func(net.Addr)) error {
	addr := listen
	if addr == "" {
		addr = connect
	}
	dev, err := open(provider, device, addr)
	if err != nil {
		return err
	}
	defer dev.Close()
	s := &side{active: connect != ""}
	if s.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	if s.cq, err = dev.CreateCQ(verbs.CQAttr{Depth: 256}); err != nil {
		return err
	}
	init := verbs.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq, Caps: verbs.QPCaps{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 1, MaxRecvSGE: 1}}
	if useSRQ && !s.active {
		if s.srq, err = s.pd.CreateSRQ(verbs.SRQAttr{MaxWR: 32, MaxSGE: 1}); err != nil {
			return err
		}
		init.SRQ = s.srq
	}
	if s.qp, err = s.pd.CreateQP(init); err != nil {
		return err
	}
	s.buf = make([]byte, bufSize)
	if s.mr, err = s.pd.RegMR(s.buf, verbstest.DefaultAccess); err != nil {
		return err
	}
	seed := uint64(100)
	if s.active {
		seed = 200
	}
	verbstest.Fill(s.buf[source:source+area], seed)
	if err := s.qp.Modify(verbs.QPStateInit); err != nil {
		return err
	}
	for i := range nRecv {
		if err := s.postRecv(uint64(i)); err != nil {
			return err
		}
	}

	var conn verbs.Conn
	if s.active {
		conn, err = dev.Connect(ctx, s.qp, connect, verbs.ConnParam{PrivateData: []byte("godapl interop: active")})
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		if string(conn.PrivateData()) != "godapl interop: passive" {
			return fmt.Errorf("accept private data %q", conn.PrivateData())
		}
	} else {
		lis, err := dev.Listen(listen, 1)
		if err != nil {
			return err
		}
		listening(lis.Addr())
		req, err := lis.Accept(ctx)
		if err != nil {
			return err
		}
		if string(req.PrivateData()) != "godapl interop: active" {
			return fmt.Errorf("request private data %q", req.PrivateData())
		}
		if conn, err = req.Accept(s.qp, verbs.ConnParam{PrivateData: []byte("godapl interop: passive")}); err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		lis.Close()
	}
	s.conn = conn
	// Every wait below ends when the connection does: receives posted
	// to an SRQ stay posted when the QP fails, so without this a
	// passive end with -srq would only see its deadline.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-conn.Done():
			stop(connEnded(conn))
		case <-ctx.Done():
		}
	}()

	// The buffer's address and rkey, the active end first.
	var me [12]byte
	binary.BigEndian.PutUint64(me[:], s.mr.Addr())
	binary.BigEndian.PutUint32(me[8:], s.mr.RKey())
	var peer []byte
	if s.active {
		if err := s.send(ctx, me[:]); err != nil {
			return err
		}
		if peer, err = s.recv(ctx, 12); err != nil {
			return err
		}
	} else {
		if peer, err = s.recv(ctx, 12); err != nil {
			return err
		}
		if err := s.send(ctx, me[:]); err != nil {
			return err
		}
	}
	s.peer.addr, s.peer.rkey = binary.BigEndian.Uint64(peer), binary.BigEndian.Uint32(peer[8:])

	// Messages both ways, then each end writes and reads the other's
	// memory in turn, announcing each step with a Send.
	for i, n := range []int{1, 100, 1000, 4096} {
		msg := verbstest.Pattern(n, uint64(1000+i))
		if err := s.turn(ctx, func() error { return s.send(ctx, msg) }, func() error { return s.expect(ctx, msg) }); err != nil {
			return fmt.Errorf("%d-byte message: %w", n, err)
		}
		if err := s.turn(ctx, func() error { return s.expect(ctx, msg) }, func() error { return s.send(ctx, msg) }); err != nil {
			return fmt.Errorf("%d-byte reply: %w", n, err)
		}
	}
	written := verbstest.Pattern(area, 300)
	if err := s.turnBoth(ctx, func() error {
		copy(s.buf[sendArea:], written[:area])
		if err := s.rdma(ctx, verbs.OpRDMAWrite, target, area); err != nil {
			return err
		}
		return s.send(ctx, []byte("W"))
	}, func() error {
		if err := s.expect(ctx, []byte("W")); err != nil {
			return err
		}
		return check("RDMA Write", s.buf[target:target+area], written)
	}); err != nil {
		return err
	}
	if err := s.turnBoth(ctx, func() error {
		peerSeed := uint64(200)
		if s.active {
			peerSeed = 100
		}
		if err := s.rdma(ctx, verbs.OpRDMARead, source, area); err != nil {
			return err
		}
		if err := check("RDMA Read", s.buf[sink:sink+area], verbstest.Pattern(area, peerSeed)); err != nil {
			return err
		}
		return s.send(ctx, []byte("R"))
	}, func() error { return s.expect(ctx, []byte("R")) }); err != nil {
		return err
	}
	if s.active {
		return conn.Disconnect()
	}
	select {
	case <-conn.Done():
		return nil
	case <-ctx.Done():
		return errors.New("the active end did not disconnect")
	}
}

// turn runs lead on the active end and follow on the passive end.
func (s *side) turn(_ context.Context, lead, follow func() error) error {
	if s.active {
		return lead()
	}
	return follow()
}

// turnBoth runs a step twice, led by each end in turn, the active end first.
func (s *side) turnBoth(_ context.Context, do, see func() error) error {
	first, second := do, see
	if !s.active {
		first, second = see, do
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}

func (s *side) postRecv(i uint64) error {
	wr := []verbs.RecvWR{{ID: i, SGL: []verbs.SGE{verbs.SGEOf(s.mr, int(i)*slot, slot)}}}
	if s.srq != nil {
		_, err := s.srq.PostRecv(wr)
		return err
	}
	_, err := s.qp.PostRecv(wr)
	return err
}

// wait returns the next completion of a receive (recv) or of this end's
// own requests (!recv), keeping the other kind for later.
func (s *side) wait(ctx context.Context, what string, recv bool) (verbs.WC, error) {
	for i, wc := range s.early {
		if (wc.Opcode == verbs.WCRecv) == recv {
			s.early = append(s.early[:i], s.early[i+1:]...)
			return wc, status(what, wc)
		}
	}
	var wcs [1]verbs.WC
	for {
		for s.cq.Poll(wcs[:]) == 0 {
			if err := s.cq.Wait(ctx, false); err != nil {
				if cause := context.Cause(ctx); cause != nil && cause != err {
					err = fmt.Errorf("%w (%w)", err, cause)
				}
				return verbs.WC{}, fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		if wcs[0].Status != verbs.WCSuccess {
			return wcs[0], s.failed(ctx, what, wcs[0])
		}
		if (wcs[0].Opcode == verbs.WCRecv) == recv {
			return wcs[0], nil
		}
		s.early = append(s.early, wcs[0])
	}
}

// failed describes a failed completion with the reason the connection
// ended, which a flush follows: the error that matters is that reason.
func (s *side) failed(ctx context.Context, what string, wc verbs.WC) error {
	if s.conn == nil {
		return status(what, wc)
	}
	select {
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	select {
	case <-s.conn.Done():
		return fmt.Errorf("%s: completion %+v; %w", what, wc, connEnded(s.conn))
	default:
		return fmt.Errorf("%s: completion %+v; the connection is still up", what, wc)
	}
}

// connEnded says that conn has ended, and why.
func connEnded(conn verbs.Conn) error {
	if err := conn.Err(); err != nil {
		return fmt.Errorf("the connection ended: %w", err)
	}
	return errors.New("the connection ended")
}

func status(what string, wc verbs.WC) error {
	if wc.Status != verbs.WCSuccess {
		return fmt.Errorf("%s: completion %+v", what, wc)
	}
	return nil
}

func (s *side) send(ctx context.Context, msg []byte) error {
	copy(s.buf[sendArea:], msg)
	s.nextID++
	wr := verbs.SendWR{ID: s.nextID, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{verbs.SGEOf(s.mr, sendArea, len(msg))}}
	if _, err := s.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		return err
	}
	wc, err := s.wait(ctx, "send", false)
	if err == nil && (wc.Opcode != verbs.WCSend || wc.ID != s.nextID) {
		err = fmt.Errorf("send completion %+v", wc)
	}
	return err
}

func (s *side) recv(ctx context.Context, n int) ([]byte, error) {
	wc, err := s.wait(ctx, "receive", true)
	if err != nil {
		return nil, err
	}
	if wc.Opcode != verbs.WCRecv || int(wc.ByteLen) != n {
		return nil, fmt.Errorf("receive completion %+v, want %d bytes", wc, n)
	}
	got := append([]byte(nil), s.buf[int(wc.ID)*slot:int(wc.ID)*slot+n]...)
	return got, s.postRecv(wc.ID)
}

func (s *side) expect(ctx context.Context, want []byte) error {
	got, err := s.recv(ctx, len(want))
	if err != nil {
		return err
	}
	return check("message", got, want)
}

// rdma writes area bytes of the send area to the peer's target area, or
// reads the peer's source area into the sink.
func (s *side) rdma(ctx context.Context, op verbs.Opcode, peerOff int, n int) error {
	local := sendArea
	if op == verbs.OpRDMARead {
		local = sink
	}
	s.nextID++
	wr := verbs.SendWR{ID: s.nextID, Opcode: op, Flags: verbs.SendSignaled, SGL: []verbs.SGE{verbs.SGEOf(s.mr, local, n)},
		RemoteAddr: s.peer.addr + uint64(peerOff), RKey: s.peer.rkey}
	if _, err := s.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		return err
	}
	_, err := s.wait(ctx, op.String(), false)
	return err
}

func check(what string, got, want []byte) error {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s: byte %d is %#02x, want %#02x", what, i, got[i], want[i])
		}
	}
	return nil
}
