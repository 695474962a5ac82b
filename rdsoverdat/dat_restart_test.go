package rdsoverdat

import (
	"encoding/binary"
	"testing"
	"time"
)

// A receiver that restarts (its stack closed, a fresh one with a new
// generation number on the same address) while the peer still has
// messages for it: those queued carry the old, high sequence numbers until
// the new receiver's private data (my_gen) or its probe reveals the
// restart, and the numbers start over at 1. Acks must follow the reset, or
// the new messages are never freed and the sender blocks with its small
// send buffer full.
//
// Each incarnation binds while the sender is idle (everything acked, so
// the larger address does not reconnect on its own), which keeps the
// incarnations apart; TestDATAckSpaceFollowsPeerGeneration restarts the
// sender instead, while the receiver may be reconnecting.
func TestDATPeerRestartAcks(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		c := cfg() // one provider value: with mem, one fabric for both stacks
		c.ReconnectMax = 20 * time.Millisecond
		as := testAddrs(2)
		snd := datStack(t, c)
		a := mustBind(t, snd, ap(as[1], 0), SendBuffer(64<<10)) // the larger address sends
		recvAt := ap(as[0], 4000)
		const size, n = 1000, 1000 // n messages: far more than the send buffer holds
		msg, buf := make([]byte, size), make([]byte, 2*size)
		next := uint64(0)
		var last *Stack
		for gen := range 4 {
			rst := NewStack(Config{Transports: []Transport{DAT(c)}})
			last = rst
			b := rst.Socket()
			if err := b.SetOption(RecvBuffer(8 << 20)); err != nil {
				t.Fatal(err)
			}
			if err := b.Bind(recvAt); err != nil {
				t.Fatalf("incarnation %d: Bind: %v", gen, err)
			}
			a.SetWriteDeadline(time.Now().Add(10 * time.Second))
			for i := next; i < next+n; i++ {
				binary.BigEndian.PutUint64(msg, i)
				if _, err := a.SendTo(msg, recvAt, 0); err != nil {
					t.Fatalf("incarnation %d: send #%d: %v", gen, i, err)
				}
			}
			for i := next; i < next+n; i++ {
				l, _ := recvTimeout(t, b, buf, 10*time.Second)
				if k := binary.BigEndian.Uint64(buf); l != size || k != i {
					t.Fatalf("incarnation %d: got #%d (%d bytes), want #%d", gen, k, l, i)
				}
			}
			next += n
			eventually(t, 10*time.Second, "every message acknowledged", func() bool { s, _ := a.Buffered(); return s == 0 })
			if g := snd.nodeAt(as[1]).Conn(as[0], TransIB).PeerGenNum(); g != rst.GenNum() {
				t.Errorf("incarnation %d: sender's peer generation %#x, want %#x", gen, g, rst.GenNum())
			}
			if gen < 3 {
				b.Close()
				rst.Close()
			}
		}
		b := last
		t.Cleanup(func() { b.Close() })
	})
}
