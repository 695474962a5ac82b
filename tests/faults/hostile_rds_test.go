package faults

// A hostile peer against an RDS/TCP node: raw TCP connections that send
// random bytes, truncated headers and payloads, oversized lengths, wrong
// congestion maps, bad sequence numbers, unknown extension headers and
// messages to unbound ports, while a good node keeps a numbered stream
// going to the same node. The node must drop the connections that break
// the protocol, count what it dropped, keep the good stream exact, never
// panic and not grow.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs/verbstest"
)

// rdsHeader builds a 48-byte RDS header by hand (rds-wire.md §1: all
// fields big-endian; extension area zero unless ext is given).
func rdsHeader(seq uint64, length uint32, sport, dport uint16, flags byte, ext []byte) []byte {
	h := make([]byte, 48)
	binary.BigEndian.PutUint64(h[0:], seq)
	binary.BigEndian.PutUint32(h[16:], length)
	binary.BigEndian.PutUint16(h[20:], sport)
	binary.BigEndian.PutUint16(h[22:], dport)
	h[24] = flags
	copy(h[32:], ext)
	return h
}

// rdsAttack is one hostile connection. mustClose says the bytes break the
// protocol, so the node must end the connection.
type rdsAttack struct {
	name      string
	mustClose bool
	bytes     func(r *rand.Rand, port uint16) []byte
	hangUp    bool // close our side after sending (truncations)
}

func rdsAttacks() []rdsAttack {
	msg := func(seq uint64, dport uint16, flags byte, payload []byte) []byte {
		return append(rdsHeader(seq, uint32(len(payload)), 9999, dport, flags, nil), payload...)
	}
	return []rdsAttack{
		{"random-bytes", false, func(r *rand.Rand, _ uint16) []byte {
			b := make([]byte, 48+r.IntN(4096))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}, true},
		{"length-above-max", true, func(r *rand.Rand, p uint16) []byte {
			return rdsHeader(1, wire.MaxMsgSize+1+uint32(r.IntN(1<<30)), 9999, p, 0, nil)
		}, false},
		{"cong-map-short", true, func(r *rand.Rand, _ uint16) []byte {
			return append(rdsHeader(0, 100, 0, 0, byte(wire.FlagCongBitmap), nil), make([]byte, 100)...)
		}, false},
		{"cong-map-long", true, func(r *rand.Rand, _ uint16) []byte {
			return append(rdsHeader(0, wire.CongMapBytes*2, 0, 0, byte(wire.FlagCongBitmap), nil), make([]byte, wire.CongMapBytes*2)...)
		}, false},
		{"truncated-header", false, func(r *rand.Rand, p uint16) []byte {
			return rdsHeader(1, 10, 9999, p, 0, nil)[:1+r.IntN(46)]
		}, true},
		{"truncated-payload", false, func(r *rand.Rand, p uint16) []byte {
			return append(rdsHeader(1, 1000, 9999, p, 0, nil), make([]byte, r.IntN(999))...)
		}, true},
		{"sequence-backwards-retransmitted", false, func(r *rand.Rand, p uint16) []byte {
			var b []byte
			for i := range 20 {
				b = append(b, msg(uint64(100-i), 9, byte(wire.FlagRetransmitted), []byte("old"))...)
			}
			return b
		}, true},
		{"sequence-random", false, func(r *rand.Rand, p uint16) []byte {
			var b []byte
			for range 50 {
				b = append(b, msg(r.Uint64(), 9, 0, []byte("x"))...)
			}
			return b
		}, true},
		{"unknown-ext-headers-probe", false, func(r *rand.Rand, p uint16) []byte {
			ext := make([]byte, 16)
			for i := range ext {
				ext[i] = byte(r.Uint32()) | 0x80 // types the kernel does not define
			}
			return rdsHeader(1, 0, uint16(wire.ProbePort), uint16(wire.PingPort), 0, ext)
		}, true},
		{"truncated-ext-headers-probe", false, func(r *rand.Rand, p uint16) []byte {
			ext := []byte{byte(wire.ExtNPaths), 0, 8, byte(wire.ExtGenNum), 1, 2, 3, 4, byte(wire.ExtNPaths)} // last one cut by the area's end
			ext = append(ext, make([]byte, 16-len(ext))...)
			ext[15] = byte(wire.ExtGenNum)
			return rdsHeader(1, 0, uint16(wire.ProbePort), uint16(wire.PingPort), 0, ext)
		}, true},
		{"unbound-port", false, func(r *rand.Rand, p uint16) []byte {
			return msg(1, 1+uint16(r.IntN(1000)), 0, []byte("nobody home"))
		}, true},
	}
}

func TestHostileRDSPeer(t *testing.T) {
	verbstest.CheckLeaks(t)
	// Ports: an RDS/TCP port of our own, so that other tests on the
	// loopback (with 16385) are not hit.
	port := 20000 + os.Getpid()%20000
	tcp := rdsoverdat.TCP(rdsoverdat.TCPConfig{Port: port, ReconnectMax: 100 * time.Millisecond})
	nodeAddr, goodAddr := testutil.LoopbackAddr(), testutil.LoopbackAddr()
	node := rdsoverdat.NewStack(rdsoverdat.Config{Transports: []rdsoverdat.Transport{tcp}})
	good := rdsoverdat.NewStack(rdsoverdat.Config{Transports: []rdsoverdat.Transport{tcp}})
	defer node.Close()
	defer good.Close()
	rs := node.Socket()
	if err := rs.Bind(netip.AddrPortFrom(nodeAddr, 9)); err != nil {
		t.Skipf("bind %v: %v", nodeAddr, err)
	}
	gs := good.Socket()
	if err := gs.Bind(netip.AddrPortFrom(goodAddr, 9)); err != nil {
		t.Fatal(err)
	}

	// The good stream: numbered messages from gs to rs, checked in order
	// by the reader; the hostile "old" and "x" messages to port 9 come
	// from other addresses and are told apart by source.
	var goodSent, goodRecv, goodBad, hostileDelivered atomic.Int64
	stopGood := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 256)
		for seq := uint64(0); ; seq++ {
			select {
			case <-stopGood:
				return
			default:
			}
			fillMsg(buf, 0, seq)
			gs.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := gs.SendTo(buf, netip.AddrPortFrom(nodeAddr, 9), 0); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					seq--
					continue
				}
				select {
				case <-stopGood: // closed under a send at the end of the test
				default:
					t.Errorf("good send: %v", err)
				}
				return
			}
			goodSent.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		m := rdsoverdat.Msg{Data: buf}
		next := uint64(0)
		for {
			n, err := rs.RecvMsg(&m, 0)
			if err != nil {
				return
			}
			if m.Addr.Addr() != goodAddr {
				hostileDelivered.Add(1)
				continue
			}
			_, seq, ok := checkMsg(buf[:n])
			if !ok || seq != next {
				goodBad.Add(1)
			}
			next = seq + 1
			goodRecv.Add(1)
		}
	}()

	var m0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s0, _ := node.NodeStats(nodeAddr)
	start := time.Now()
	attacks := rdsAttacks()
	type result struct {
		from   netip.Addr
		closed bool
		err    error
	}
	outcomes := attackLoop(scale(3, 40), attacks, func(n int, at rdsAttack, r *rand.Rand) result {
		// Every connection from its own address below the node's, so
		// the node accepts it as the peer's connection.
		from := netip.AddrFrom4([4]byte{127, 0, byte(1 + (n+1)/250), byte(1 + (n+1)%250)})
		closed, err := rdsAttackOnce(from, netip.AddrPortFrom(nodeAddr, uint16(port)), at, r)
		return result{from, closed, err}
	})
	// The good stream must still flow after the attack.
	after := goodRecv.Load()
	deadline := time.Now().Add(10 * time.Second)
	for goodRecv.Load() < after+100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stopGood)
	elapsed := time.Since(start)
	s1, _ := node.NodeStats(nodeAddr)

	for i, at := range attacks {
		closed := 0
		for _, o := range outcomes[i] {
			if o.err != nil {
				t.Errorf("%s from %v: %v", at.name, o.from, o.err)
			}
			if o.closed {
				closed++
			}
		}
		runs := len(outcomes[i])
		t.Logf("ATTACK %-34s runs=%d closed-by-node=%d left-open=%d", at.name, runs, closed, runs-closed)
		if at.mustClose && closed != runs {
			t.Errorf("%s: the node kept %d of %d connections that broke the protocol", at.name, runs-closed, runs)
		}
	}
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	d := func(a, b uint64) uint64 { return b - a }
	c := counts{Scenario: "hostile RDS/TCP peer vs node", Sent: uint64(goodSent.Load()), Received: uint64(goodRecv.Load()),
		Duration: elapsed, Resets: d(s0.ConnReset, s1.ConnReset), DupsDropped: d(s0.RecvDropOldSeq, s1.RecvDropOldSeq),
		Extra: fmt.Sprintf("good-out-of-order=%d bad-header=%d bad-cong-map=%d no-sock=%d hostile-delivered=%d heap-before=%dKiB heap-after=%dKiB",
			goodBad.Load(), d(s0.RecvDropBadHeader, s1.RecvDropBadHeader), d(s0.RecvDropBadCongMap, s1.RecvDropBadCongMap),
			d(s0.RecvDropNoSock, s1.RecvDropNoSock), hostileDelivered.Load(), m0.HeapInuse>>10, m1.HeapInuse>>10)}
	t.Log(c)
	if goodRecv.Load() <= after || goodBad.Load() != 0 {
		t.Errorf("the good stream suffered: %v", c)
	}
	if s1.RecvDropBadHeader == s0.RecvDropBadHeader || s1.RecvDropBadCongMap == s0.RecvDropBadCongMap || s1.RecvDropNoSock == s0.RecvDropNoSock {
		t.Errorf("the node did not count the bad input: %v", c)
	}
	if m1.HeapInuse > m0.HeapInuse+64<<20 {
		t.Errorf("heap grew from %d to %d bytes during the attack", m0.HeapInuse, m1.HeapInuse)
	}
	rs.Close()
	gs.Close()
	wg.Wait()
}

// rdsAttackOnce connects from `from` to the node, sends the attack, and
// reports whether the node closed the connection within 5 s (or, for
// attacks that hang up themselves, whether the exchange ended cleanly).
func rdsAttackOnce(from netip.Addr, to netip.AddrPort, at rdsAttack, r *rand.Rand) (closed bool, err error) {
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp4", to.String())
	if err != nil {
		return false, err
	}
	c := nc.(*net.TCPConn)
	defer c.Close()
	c.Write(at.bytes(r, 9))
	if at.hangUp {
		c.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.Copy(io.Discard, c) // the node's congestion map, pongs, then EOF or reset
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, nil
	}
	return true, nil
}
