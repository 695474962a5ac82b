package rdsoverdat

import (
	"fmt"
	"testing"
	"time"
)

// mprds between two Go nodes: the probe exchange settles the path count,
// the smaller side connects the other lanes with source ports encoding
// the lane, sockets hash onto lanes, and per-socket order holds across
// the fan-out and across resets.
func TestMultipath(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{Paths: 4})}})
	as := testAddrs(2)
	rcv := mustBind(t, st, ap(as[0], 4000), RecvBuffer(8<<20))
	var snd []*Socket
	for range 8 {
		snd = append(snd, mustBind(t, st, ap(as[1], 0)))
	}
	const N = 200
	buf := make([]byte, 64)
	check := func(round int) {
		next := map[uint16]int{}
		for range N * len(snd) {
			n, from := recvTimeout(t, rcv, buf, 5*time.Second)
			var r, k int
			fmt.Sscanf(string(buf[:n]), "%d %d", &r, &k)
			if r != round || k != next[from.Port()] {
				t.Fatalf("from %v: got round %d #%d, want %d #%d", from, r, k, round, next[from.Port()])
			}
			next[from.Port()]++
		}
	}
	// Sockets that send before the handshake stay on path 0 (see
	// Conn.pathFor); let a warm-up socket bring the connection up first.
	warm := mustBind(t, st, ap(as[1], 0))
	warm.SendTo(nil, rcv.BoundAddr(), 0)
	recvTimeout(t, rcv, buf, 5*time.Second)
	c := st.nodeAt(as[1]).Conn(as[0], TransTCP)
	eventually(t, 5*time.Second, "npaths 4", func() bool { return c.NPaths() == 4 })
	for round := range 3 {
		for k := range N {
			for _, s := range snd {
				if _, err := s.SendTo([]byte(fmt.Sprintf("%d %d", round, k)), rcv.BoundAddr(), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		if round == 1 {
			st.nodeAt(as[0]).Conn(as[1], TransTCP).Reset()
		}
		check(round)
	}

	eventually(t, 5*time.Second, "acks on every lane", func() bool {
		st.nodeAt(as[1]).settleAcks() // the last message of a lane waits for traffic or a look
		for i := range 4 {
			if q, u := c.Path(i).Pending(); q+u != 0 {
				return false
			}
		}
		return true
	})
	eventually(t, 5*time.Second, "all lanes up", func() bool {
		for i := range 4 {
			if !c.Path(i).IsUp() {
				return false
			}
		}
		return true
	})
	back := st.nodeAt(as[0]).Conn(as[1], TransTCP)
	lanes := 0
	for i := range 4 { // lane i on one side is lane i on the other
		tx, _ := c.Path(i).NextSeqs()
		_, rx := back.Path(i).NextSeqs()
		if tx > 1 {
			lanes++
			if rx != tx {
				t.Errorf("lane %d: sender next_tx %d, receiver next_rx %d", i, tx, rx)
			}
		}
	}
	if lanes < 2 {
		t.Errorf("8 sockets used %d lane(s)", lanes)
	}
}
