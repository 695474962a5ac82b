package rdsoverdat

import (
	"encoding/binary"
	"testing"
	"time"
)

// An ack by sequence names a message of the current sequence space only
// if it lies below the next sequence to send. A larger one comes from a
// peer that has not heard of our restart yet (it acks what our previous
// incarnation sent) and must free nothing: the messages it would free
// were transmitted but may never have arrived.
func TestDropAckedOtherSpace(t *testing.T) {
	c := &Conn{ackBySeq: true, node: &Node{}}
	p := &Path{conn: c, nextTxSeq: 1}
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
			conn := rcv.Node(as[0]).Conn(as[1], TransIB)
			eventually(t, 10*time.Second, "the sender's generation learned", func() bool { return conn.PeerGenNum() == snd.GenNum() })
			dp := conn.Path(0).TransportData.Load().(*datPath)
			eventually(t, 10*time.Second, "ack_gen names the sender", func() bool {
				seq, g := dp.ackSpace()
				return g == snd.GenNum() && seq > 0
			})
			a.Close()
			snd.Close()
		}
		var pd [datPrivateLen]byte
		p := encodeDatPrivate(pd[:], as[0], as[1], 5, 0, 16)
		if p.AckGen() != 0 || datPrivate(pd[:28]).AckGen() != 0 {
			t.Fatal("an ack_gen of 0 or missing must name no generation")
		}
	})
}
