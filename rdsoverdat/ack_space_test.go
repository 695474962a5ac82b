package rdsoverdat

import (
	"encoding/binary"
	"testing"
	"time"

	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs/mem"
)

// An ack by sequence names a message of the current sequence space only
// if it lies below the next sequence to send. A larger one comes from a
// peer that has not heard of our restart yet (it acks what our previous
// incarnation sent) and must free nothing: the messages it would free
// were transmitted but may never have arrived.
func TestDropAckedOtherSpace(t *testing.T) {
	c := &connection{ackBySeq: true, node: &rdsNode{}}
	p := &connPath{conn: c, nextTxSeq: 1}
	for range 5 { // transmitted, waiting for an ack: sequences 1..5
		m := newMessage(0)
		m.sequence = p.nextTxSeq
		m.SetAckKey(uint64(m.sequence))
		p.nextTxSeq++
		p.retrans.pushBack(m)
	}
	if n := p.DropAcked(1000); n != 0 {
		t.Fatalf("an ack of another sequence space freed %d messages", n)
	}
	if n := p.DropAckedSeq(6); n != 0 {
		t.Fatalf("a connect-time ack past the last sequence sent freed %d messages", n)
	}
	if n := p.DropAcked(3); n != 3 {
		t.Fatalf("ack 3 freed %d messages, want 3", n)
	}
	if n := p.DropAckedSeq(5); n != 2 {
		t.Fatalf("ack_seq 5 freed %d messages, want 2", n)
	}
	if p.retrans.n != 0 {
		t.Fatalf("%d messages left", p.retrans.n)
	}
}

// The private data's ack_seq is tagged with the generation it counts in:
// after a receiver has taken messages from one incarnation of a sender,
// it announces that incarnation's generation, and announces a new one's
// only once it has received from it.
func TestDATAckSpaceFollowsPeerGeneration(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		c := cfg()
		as := testAddrs(2)
		rcv := datStack(t, c)
		b := mustBind(t, rcv, ap(as[0], 4000))
		buf := make([]byte, 64)
		for gen := range 2 {
			snd := NewStack(Config{Transports: []Transport{DAT(c)}})
			a := mustBind(t, snd, ap(as[1], 0))
			msg := make([]byte, 8)
			for i := range 10 {
				binary.BigEndian.PutUint64(msg, uint64(i))
				if _, err := a.SendTo(msg, ap(as[0], 4000), 0); err != nil {
					t.Fatalf("sender %d: send #%d: %v", gen, i, err)
				}
			}
			for i := range 10 {
				l, _ := recvTimeout(t, b, buf, 10*time.Second)
				if k := binary.BigEndian.Uint64(buf); l != 8 || k != uint64(i) {
					t.Fatalf("sender %d: got #%d (%d bytes), want #%d", gen, k, l, i)
				}
			}
			conn := rcv.nodeAt(as[0]).Conn(as[1], TransIB)
			eventually(t, 10*time.Second, "the sender's generation learned", func() bool { return conn.PeerGenNum() == snd.GenNum() })
			eventually(t, 10*time.Second, "ack_gen names the sender", func() bool {
				seq, g, _ := rdsdat.AckSpace((*xpath)(conn.Path(0)))
				return g == snd.GenNum() && seq > 0
			})
			a.Close()
			snd.Close()
		}
	})
}

// A connection's h_ack names only what arrived on it. Before that the
// path's last sequence received may count in a previous incarnation of the
// peer: a restarted peer that has sent as many messages on this connection
// takes it for an ack of its own and frees them, and they are lost if the
// connection fails before they arrive (2 of 300 runs of
// TestDATAckSpaceFollowsPeerGeneration timed out so).
func TestDATAckNamesWhatTheConnectionReceived(t *testing.T) {
	n := &rdsNode{}
	p := &connPath{conn: &connection{ackBySeq: true, node: n}, nextTxSeq: 1}
	e := rdsdat.DetachedProbe((*xnode)(n), (*xpath)(p), 11) // 11: the previous incarnation's last message
	ack := func() wire.Seq {
		m := newMessage(8)
		m.Header().Encode(&wire.Fields{Sequence: 1, Len: 8, Sport: 1000, Dport: 4000})
		e.Prepare(m)
		return m.Header().Ack()
	}
	if a := ack(); a != 0 {
		t.Fatalf("h_ack %d before anything arrived on the connection, want 0", a)
	}
	for _, f := range rdsdat.Frames(&wire.Fields{Sequence: 3, Sport: 1000, Dport: 4000}, make([]byte, 8), 0) {
		e.Recv(f)
	}
	if a := ack(); a != 3 {
		t.Fatalf("h_ack %d after sequence 3 arrived, want 3", a)
	}
}

// A connection's private data names its sender's generation (my_gen), and
// the receiver applies it before the connection's first message. A peer
// that restarted numbers its messages from 1 again; retransmitted after a
// failed connection, they lie below its previous incarnation's last
// sequence, and the receive state kept from that incarnation dropped them
// as duplicates (and acked them: lost) until the probe revealed the
// restart (3 of 300 runs of TestDATAckSpaceFollowsPeerGeneration timed
// out so).
func TestDATPeerGenerationFromPrivateData(t *testing.T) {
	leakCheck(t)
	st := datStack(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem"})
	as := testAddrs(2)
	b := mustBind(t, st, ap(as[0], 4000))
	n := st.nodeAt(as[0])
	c := n.Conn(as[1], TransIB)
	c.peerGenUpdate(0x1111)
	p := c.Path(0)
	p.mu.Lock()
	p.nextRxSeq = 12 // the previous incarnation's last message was 11
	p.mu.Unlock()
	var pd [rdsdat.PrivateLen]byte
	rdsdat.EncodePrivate(pd[:], as[1], as[0], 0, 0, 0x2222, 16)
	e := datNodeOf(t, n).Probe((*xpath)(p), pd[:]) // accepted from the new incarnation
	f := &wire.Fields{Sequence: 1, Sport: 1000, Dport: 4000, Flags: wire.FlagRetransmitted}
	for _, fr := range rdsdat.Frames(f, []byte("restart!"), 0) {
		e.Recv(fr)
	}
	if g := c.PeerGenNum(); g != 0x2222 {
		t.Errorf("peer generation %#x, want the private data's 0x2222", g)
	}
	buf := make([]byte, 64)
	if l, err := b.RecvMsg(&Msg{Data: buf}, MsgDontWait); err != nil || string(buf[:l]) != "restart!" {
		t.Fatalf("the new incarnation's retransmitted message #1: %q, %v", buf[:l], err)
	}
}
