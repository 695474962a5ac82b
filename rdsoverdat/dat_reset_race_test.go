package rdsoverdat

import (
	"encoding/binary"
	"testing"
	"time"
)

// Resets from the receiving side around each send, back to back: a
// sender round still holding the EP of the previous connection must not
// take messages of the next one, or they are posted on an EP whose
// messages were already requeued, and the next connection's later
// sequences ack them unseen (lost). Under load this lost a message in
// about one run in ten before transmit rounds were tied to the path's
// generation (connPath.NextTx).
func TestDATResetBackToBack(t *testing.T) {
	leakCheck(t)
	st := datStack(t, DATConfig{ReconnectMax: 20 * time.Millisecond})
	checkResetBackToBack(t, st, TransIB, 300)
}

// The same over tcp, whose writer reports Down itself and so never holds
// a connection past it; fewer rounds, as each waits for a TCP reconnect.
func TestTCPResetBackToBack(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{ReconnectMax: 20 * time.Millisecond})}})
	checkResetBackToBack(t, st, TransTCP, 60)
}

func checkResetBackToBack(t *testing.T, st *Stack, tt TransportType, rounds int) {
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[1], 0), SendBuffer(1<<20))
	b := mustBind(t, st, ap(as[0], 0), RecvBuffer(8<<20))
	reset := func() {
		if c := st.nodeAt(as[0]).Conn(as[1], tt); c != nil {
			c.Reset()
		}
	}
	msg := make([]byte, 100)
	buf := make([]byte, 4096)
	next := uint64(0)
	for round := range rounds {
		for i := range 2 {
			if i == 0 || round%2 == 0 {
				reset()
			}
			binary.BigEndian.PutUint64(msg, next+uint64(i))
			if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			b.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _, err := b.ReadFrom(buf)
			if err != nil {
				t.Fatalf("round %d: waiting for #%d: %v", round, next, err)
			}
			if got := binary.BigEndian.Uint64(buf[:n]); got != next {
				t.Fatalf("round %d: got #%d, want #%d (loss, duplicate or reorder)", round, got, next)
			}
			next++
		}
	}
	// A reset finds the connection down, or not yet up, as often as
	// timing has it: how often it took one down is for the log only.
	t.Logf("the receiver's path went down %d times in %d rounds", st.nodeAt(as[0]).Conn(as[1], tt).Stats().Resets, rounds)
}
