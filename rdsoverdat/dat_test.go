package rdsoverdat

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"pgregory.net/rapid"
)

// datProviders are the providers the dat transport is tested over: the
// in-memory one (fast, one fabric per transport value) and soft-iWARP
// over 127.0.0.x.
var datProviders = []struct {
	name string
	cfg  func() DATConfig
}{
	{"mem", func() DATConfig { return DATConfig{Registry: registryOn(mem.New()), IA: "mem"} }},
	{"siw", func() DATConfig { return DATConfig{} }},
}

func datStack(t testing.TB, cfg DATConfig) *Stack {
	st := NewStack(Config{Transports: []Transport{DAT(cfg)}})
	t.Cleanup(func() { st.Close() })
	return st
}

// forDAT runs f over every provider.
func forDAT(t *testing.T, f func(t *testing.T, cfg func() DATConfig)) {
	for _, p := range datProviders {
		t.Run(p.name, func(t *testing.T) { f(t, p.cfg) })
	}
}

func TestDATSendRecv(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(2)
		for _, dir := range [][2]int{{0, 1}, {1, 0}} { // smaller->larger and larger->smaller first
			t.Run(fmt.Sprint(dir), func(t *testing.T) {
				a := mustBind(t, st, ap(as[dir[0]], 0))
				b := mustBind(t, st, ap(as[dir[1]], 0))
				buf := make([]byte, 1<<20+1)
				for i, size := range []int{0, 1, 100, 4095, 4096, 4097, 8192, 65536, 1 << 20} {
					msg := bytes.Repeat([]byte{byte(i + 1)}, size)
					for j := range msg {
						msg[j] += byte(j / 4096)
					}
					if err := a.SetOption(SendBuffer(2 << 20)); err != nil {
						t.Fatal(err)
					}
					if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
						t.Fatal(err)
					}
					n, from := recvTimeout(t, b, buf, 10*time.Second)
					if !bytes.Equal(buf[:n], msg) || from != a.BoundAddr() {
						t.Fatalf("size %d: got %d bytes from %v", size, n, from)
					}
				}
				eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
			})
		}
		c := st.nodeAt(as[0]).Conn(as[1], TransIB)
		if c == nil || !c.Path(0).IsUp() {
			t.Fatal("no dat connection up")
		}
		eventually(t, 5*time.Second, "handshake", func() bool { return c.PeerGenNum() == st.GenNum() })
	})
}

func TestDATPropertyReliableOrdered(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		f.Value.Set("25")
	}
	leakCheck(t)
	rapid.Check(t, func(rt *rapid.T) {
		cfg := DATConfig{ReconnectMax: 20 * time.Millisecond}
		if rapid.Bool().Draw(rt, "mem") {
			cfg.Registry, cfg.IA = registryOn(mem.New()), "mem"
		}
		if rapid.Bool().Draw(rt, "tiny") {
			cfg.RecvDepth, cfg.SendDepth = 16, 8 // credit and send-slot stalls
		}
		st := NewStack(Config{Transports: []Transport{DAT(cfg)}})
		defer st.Close()
		checkReliableOrdered(rt, st, TransIB)
	})
}

// A tiny SRQ share (2 credits, one kept for advertisements) makes every
// fragment wait for the peer's credit update; everything still arrives,
// in order, and the stalls are counted.
func TestDATCreditsExhausted(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		c := cfg()
		c.RecvDepth, c.ConnCredits, c.SendDepth = 8, 2, 4
		st := datStack(t, c)
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0), SendBuffer(8<<20))
		b := mustBind(t, st, ap(as[1], 0), RecvBuffer(8<<20))
		const N = 40
		errc := make(chan error, 1)
		go func() {
			for i := range N {
				msg := bytes.Repeat([]byte{byte(i)}, (i%4)*20000+1)
				if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		buf := make([]byte, 1<<17)
		for i := range N {
			n, _ := recvTimeout(t, b, buf, 10*time.Second)
			if n != (i%4)*20000+1 || buf[0] != byte(i) || buf[n-1] != byte(i) {
				t.Fatalf("message %d: %d bytes of %d", i, n, buf[0])
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
		cs := st.nodeAt(as[0]).Conn(as[1], TransIB).Stats()
		if cs.CreditStalls == 0 || st.nodeAt(as[0]).Stats().CreditStall == 0 {
			t.Errorf("no credit stalls counted: %+v", cs)
		}
		if ns := st.nodeAt(as[1]).Stats(); ns.AckSent == 0 {
			t.Errorf("receiver sent no ack-only frames: %+v", ns)
		}
	})
}

// Conn.Reset in the middle of a stream, from either side: nothing lost,
// nothing duplicated, order kept, and the acknowledged messages are not
// resent (retransmissions are dropped as duplicates or not sent at all).
func TestDATResetMidStream(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		c := cfg()
		c.ReconnectMax = 20 * time.Millisecond
		st := datStack(t, c)
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[1], 0), SendBuffer(1<<20)) // the larger address sends
		b := mustBind(t, st, ap(as[0], 0), RecvBuffer(8<<20))
		const N = 3000
		errc := make(chan error, 1)
		go func() {
			for i := range N {
				msg := make([]byte, 8+(i%7)*1500)
				binary.BigEndian.PutUint64(msg, uint64(i))
				if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		buf := make([]byte, 16<<10)
		resets := 0
		for i := range N {
			if i%500 == 250 {
				side := st.nodeAt(as[resets%2])
				side.Conn(as[1-resets%2], TransIB).Reset()
				resets++
			}
			n, _ := recvTimeout(t, b, buf, 10*time.Second)
			if k := binary.BigEndian.Uint64(buf); n != 8+(i%7)*1500 || k != uint64(i) {
				t.Fatalf("got #%d (%d bytes), want #%d", k, n, i)
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if _, err := b.RecvMsg(&Msg{Data: buf}, MsgDontWait); err == nil {
			t.Fatal("extra message (duplicate)")
		}
		eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
		if s := st.nodeAt(as[1]).Conn(as[0], TransIB).Stats(); s.Resets == 0 {
			t.Errorf("no resets counted: %+v", s)
		}
	})
}

// RDS_CANCEL_SENT_TO drops the messages queued for one destination only,
// here one the dat transport cannot reach.
func TestDATCancelSentTo(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(3)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0))
		gone := ap(as[2], 9) // no node: connects fail and are retried
		for range 3 {
			if _, err := a.SendTo(make([]byte, 1000), gone, MsgDontWait); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.SendTo([]byte("kept"), b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if err := a.SetOption(CancelSentTo(gone)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if n, _ := recvTimeout(t, b, buf, 5*time.Second); string(buf[:n]) != "kept" {
			t.Fatalf("got %q", buf[:n])
		}
		eventually(t, 5*time.Second, "cancelled bytes returned", func() bool { s, _ := a.Buffered(); return s == 0 })
		if s := st.nodeAt(as[0]).Stats(); s.SendCanceled != 3 {
			t.Errorf("SendCanceled %d, want 3", s.SendCanceled)
		}
	})
}

// Many sockets on three nodes, every one sending to every other one.
func TestDATManySockets(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(3)
		var socks []*Socket
		for i := range 12 {
			socks = append(socks, mustBind(t, st, ap(as[i%3], uint16(3000+i))))
		}
		const per = 20
		errc := make(chan error, len(socks))
		for i, s := range socks {
			go func() {
				for k := range per {
					for j, r := range socks {
						if j == i {
							continue
						}
						if _, err := s.SendTo(fmt.Appendf(nil, "%d %d", i, k), r.BoundAddr(), 0); err != nil {
							errc <- err
							return
						}
					}
				}
				errc <- nil
			}()
		}
		for j, r := range socks {
			next := make([]int, len(socks))
			buf := make([]byte, 32)
			for range per * (len(socks) - 1) {
				n, from := recvTimeout(t, r, buf, 10*time.Second)
				var i, k int
				fmt.Sscanf(string(buf[:n]), "%d %d", &i, &k)
				if k != next[i] || from != socks[i].BoundAddr() || i == j {
					t.Fatalf("socket %d: from %d (%v) got %d, want %d", j, i, from, k, next[i])
				}
				next[i]++
			}
		}
		for range socks {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Closing the stack while messages stream stops everything: senders get
// an error, no goroutine outlives the stack.
func TestDATCloseWithTraffic(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := NewStack(Config{Transports: []Transport{DAT(cfg())}})
		as := testAddrs(2)
		a, b := st.Socket(), st.Socket()
		if err := a.Bind(ap(as[0], 0)); err != nil {
			t.Fatal(err)
		}
		if err := b.Bind(ap(as[1], 0)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		for _, pair := range [][2]*Socket{{a, b}, {b, a}} {
			go func() {
				defer func() { done <- struct{}{} }()
				msg := make([]byte, 9000)
				for {
					if _, err := pair[0].SendTo(msg, pair[1].BoundAddr(), 0); err != nil {
						return
					}
				}
			}()
		}
		buf := make([]byte, 9000)
		for range 50 {
			recvTimeout(t, b, buf, 5*time.Second)
			recvTimeout(t, a, buf, 5*time.Second)
		}
		st.Close()
		<-done
		<-done
	})
}

// A peer that breaks the fragment rules (a fragment of another message
// while one is in reassembly) gets its connection reset and counted;
// the node keeps serving its other connections.
func TestDATProtocolError(t *testing.T) {
	leakCheck(t)
	fabric := mem.New()
	st := datStack(t, DATConfig{Registry: registryOn(fabric), IA: "mem"})
	as := testAddrs(3)
	b := mustBind(t, st, ap(as[0], 0))
	good := mustBind(t, st, ap(as[1], 0))

	// A raw DAT peer on as[2], speaking the private data correctly.
	reg, err := dat.NewRegistry([]verbs.Provider{fabric}, []dat.Entry{{Name: "raw", Provider: "mem", Device: mem.DeviceName, Addr: as[2]}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rawIA, err := ia.OpenIn(reg, "raw", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rawIA.Close(dat.CloseAbrupt)
	pz, _ := rawIA.CreatePZ()
	ev, _ := evd.Create(rawIA, 64, nil, dat.EVDDTO|dat.EVDConnection)
	buf, err := lmr.Create(rawIA, pz, make([]byte, 32*rdsdat.SlotLen), dat.MemPrivLocalRead|dat.MemPrivLocalWrite, dat.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ep.Create(rawIA, pz, ev, ev, ev, &dat.EPAttr{MaxRecvDTOs: 16, MaxRequestDTOs: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 { // room for the node's congestion map and probe
		if err := rep.PostRecv([]dat.LMRTriplet{buf.Triplet((16+i)*rdsdat.SlotLen, rdsdat.SlotLen)}, dat.DTOCookie(i), dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	var pd [rdsdat.PrivateLen]byte
	rdsdat.EncodePrivate(pd[:], as[2], as[0], 0, 0, 0, 16)
	if err := rep.Connect(as[0], wire.RDMAPort, 5*time.Second, pd[:], dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	waitEvent := func(want dat.EventNumber) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for {
			e, _, err := ev.Wait(ctx, 1)
			if err != nil {
				t.Fatalf("waiting for %v: %v", want, err)
			}
			if e.Number == want {
				return
			}
		}
	}
	waitEvent(dat.ConnectionEventEstablished)

	// First fragment of message 1, then a fragment of message 2.
	dport := b.BoundAddr().Port()
	f1 := rdsdat.Frames(&wire.Fields{Sequence: 1, Sport: 77, Dport: wire.Port(dport)}, make([]byte, 5000), 0)[0]
	f2 := rdsdat.Frames(&wire.Fields{Sequence: 2, Sport: 77, Dport: wire.Port(dport)}, make([]byte, 100), 0)[0]
	copy(buf.Bytes(), f1)
	copy(buf.Bytes()[rdsdat.SlotLen:], f2)
	for i, f := range [][]byte{f1, f2} {
		if err := rep.PostSend([]dat.LMRTriplet{buf.Triplet(i*rdsdat.SlotLen, len(f))}, dat.DTOCookie(100+i), dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent(dat.ConnectionEventDisconnected)
	if s := st.nodeAt(as[0]).Stats(); s.RecvDropBadHeader == 0 || s.RecvDelivered != 0 {
		t.Errorf("bad fragment not counted, or delivered: %+v", s)
	}
	// The node still serves its other peers.
	if _, err := good.SendTo([]byte("still here"), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	rb := make([]byte, 32)
	if n, from := recvTimeout(t, b, rb, 5*time.Second); string(rb[:n]) != "still here" || from != good.BoundAddr() {
		t.Fatalf("got %q from %v", rb[:n], from)
	}
	rep.Free()
}

// Both nodes send first at the same moment: both connect, the smaller
// address's connection wins, and every message arrives once.
func TestDATSimultaneousConnect(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		for range 5 {
			st := NewStack(Config{Transports: []Transport{DAT(cfg())}})
			as := testAddrs(2)
			s := [2]*Socket{st.Socket(), st.Socket()}
			for i := range s {
				if err := s[i].Bind(ap(as[i], 0)); err != nil {
					t.Fatal(err)
				}
			}
			start := make(chan struct{})
			errc := make(chan error, 2)
			for i := range s {
				go func() {
					<-start
					for k := range 20 {
						if _, err := s[i].SendTo([]byte{byte(k)}, s[1-i].BoundAddr(), 0); err != nil {
							errc <- err
							return
						}
					}
					errc <- nil
				}()
			}
			close(start)
			buf := make([]byte, 8)
			for i := range s {
				for k := range 20 {
					if n, _ := recvTimeout(t, s[i], buf, 10*time.Second); n != 1 || buf[0] != byte(k) {
						t.Fatalf("node %d: got %v, want %d", i, buf[:n], k)
					}
				}
			}
			for range s {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
		}
	})
}

// More peers than the initial SRQ can grant credits to: the SRQ grows,
// and every peer gets through.
func TestDATSRQGrows(t *testing.T) {
	leakCheck(t)
	st := datStack(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem", RecvDepth: 8, ConnCredits: 4})
	as := testAddrs(6)
	dst := mustBind(t, st, ap(as[0], 0))
	for _, a := range as[1:] {
		s := mustBind(t, st, ap(a, 0))
		if _, err := s.SendTo(make([]byte, 20000), dst.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 20000)
	for range as[1:] {
		if n, _ := recvTimeout(t, dst, buf, 10*time.Second); n != 20000 {
			t.Fatalf("got %d bytes", n)
		}
	}
	c, r := datNodeOf(t, st.nodeAt(as[0])).SRQ()
	if c < 20 || r > c {
		t.Errorf("SRQ of %d buffers, %d granted", c, r)
	}
	if p, lazy := datNodeOf(t, st.nodeAt(as[0])).Posted(); !lazy || p < r || p > c {
		t.Errorf("%d buffers posted (lazy %v), %d granted of %d", p, lazy, r, c)
	}
}

// A node keeps only its connections' shares (plus a few) of its receive
// buffers on the SRQ, so that a stream cycles through buffers that stay
// in the cache; a stream of large messages through them, in both
// directions, arrives whole and in order.
func TestDATSRQPostsShares(t *testing.T) {
	leakCheck(t)
	st := datStack(t, DATConfig{})
	as := testAddrs(2)
	a, b := mustBind(t, st, ap(as[0], 0)), mustBind(t, st, ap(as[1], 0))
	const n, size = 200, 65536
	errc := make(chan error, 2)
	for _, s := range []*Socket{a, b} {
		to := b.BoundAddr()
		if s == b {
			to = a.BoundAddr()
		}
		go func() {
			msg := make([]byte, size)
			for i := range n {
				msg[0], msg[size-1] = byte(i), byte(i)
				if _, err := s.SendTo(msg, to, 0); err != nil { // blocks for room
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	buf := make([]byte, size)
	for i := range n {
		for _, s := range []*Socket{a, b} {
			if k, _ := recvTimeout(t, s, buf, 10*time.Second); k != size || buf[0] != byte(i) || buf[size-1] != byte(i) {
				t.Fatalf("message %d: %d bytes, first %d last %d", i, k, buf[0], buf[size-1])
			}
		}
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range as {
		nd := datNodeOf(t, st.nodeAt(addr))
		c, r := nd.SRQ()
		p, lazy := nd.Posted()
		if !lazy || p < r || p > r+16 || p >= c {
			t.Errorf("node %v: %d buffers posted (lazy %v), %d granted of %d", addr, p, lazy, r, c)
		}
	}
}
