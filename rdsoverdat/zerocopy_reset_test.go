package rdsoverdat

import (
	"bytes"
	"testing"
)

// Connection resets in the middle of a stream of RDMA WRITE ops and
// plain messages, on every rig: each op ends SUCCESS or DROPPED (never
// retried, never lost); an op reported SUCCESS had its ACK delivered;
// every ACK the client got found its data in place; plain messages all
// arrive, once, in order.
func TestRDMAResetMidStream(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		const ops = 40
		const size = 64 << 10
		wins := make([][]byte, ops)
		srcs := make([][]byte, ops)
		cks := make([]Cookie, ops)
		for i := range ops {
			wins[i] = make([]byte, size)
			srcs[i] = make([]byte, size)
			pattern(srcs[i], byte(i+1))
			var err error
			if cks[i], err = r.cli.GetMR(wins[i], RDMAReadWrite); err != nil {
				t.Fatal(err)
			}
		}
		for i := range ops { // the cookies reach the server (and their addresses with them)
			if got := r.request(t, r.cli, r.srv, []byte("req"), RDMADest(cks[i])); got != cks[i] {
				t.Fatalf("cookie %#x, want %#x", got, cks[i])
			}
		}
		tag := func(kind byte, i int) []byte { return []byte{kind, byte(i)} }
		for i := range ops {
			r.srv.SendTo(tag('p', i), r.cli.BoundAddr(), 0)
			r.op(t, r.srv, r.cli, tag('a', i), RDMAArgs{Cookie: cks[i], RemoteBytes: size,
				Local: [][]byte{srcs[i]}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: uint64(i)})
			if i%10 == 5 {
				r.st.Node(r.srvNode).Conn(r.cliNode, TransIB).Reset()
			}
		}
		r.srv.SendTo(tag('e', 0), r.cli.BoundAddr(), 0)
		status := map[uint64]RDMAStatus{}
		for _, n := range r.notes(t, r.srv, ops) {
			if _, dup := status[n.UserToken]; dup || (n.Status != RDMASuccess && n.Status != RDMADropped) {
				t.Fatalf("notification %+v (seen %v)", n, dup)
			}
			status[n.UserToken] = n.Status
		}
		acked := map[int]bool{}
		plain := 0
		for done := false; !done; {
			m := expectAny(t, r.cli)
			switch m[0] {
			case 'p':
				if int(m[1]) != plain {
					t.Fatalf("plain message %d, want %d", m[1], plain)
				}
				plain++
			case 'a':
				i := int(m[1])
				if acked[i] {
					t.Fatalf("ACK %d twice", i)
				}
				acked[i] = true
				if !bytes.Equal(wins[i], srcs[i]) {
					t.Fatalf("ACK %d before its data", i)
				}
			case 'e':
				done = true
			}
		}
		if plain != ops {
			t.Fatalf("%d plain messages arrived, want %d", plain, ops)
		}
		for i := range ops {
			if status[uint64(i)] == RDMASuccess && !acked[i] {
				t.Fatalf("op %d succeeded but its ACK never arrived", i)
			}
		}
		t.Logf("%d of %d ops dropped by the resets", ops-len(acked), ops)
	})
}

// expectAny receives the next message on s and returns its payload.
func expectAny(t tb, s *Socket) []byte {
	t.Helper()
	buf := make([]byte, 64)
	n, _ := recvFull(t, s, buf)
	if n == 0 {
		t.Fatalf("empty message")
	}
	return buf[:n]
}
