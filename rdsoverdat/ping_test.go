package rdsoverdat

import (
	"testing"
	"time"
)

// A message to port 0 is answered by a 0-byte pong from port 0 (rds-ping).
func TestPing(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		mustBind(t, st, ap(as[1], 0))     // a node answers pings once it exists
		for _, dst := range []int{1, 0} { // the peer node and our own
			for range 3 {
				if _, err := a.SendTo(nil, ap(as[dst], 0), 0); err != nil {
					t.Fatal(err)
				}
				n, from := recvTimeout(t, a, make([]byte, 8), 5*time.Second)
				if n != 0 || from != ap(as[dst], 0) {
					t.Fatalf("pong: %d bytes from %v", n, from)
				}
			}
		}
		if s := st.nodeAt(as[0]).Stats(); s.RecvPing < 3 || s.SendPong < 3 {
			t.Errorf("stats %+v", s)
		}
	})
}
