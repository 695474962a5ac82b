package rdsoverdat

import (
	"bytes"
	"encoding/binary"
	"flag"
	"testing"

	"pgregory.net/rapid"
)

// rtTB adapts a rapid.T to the rig helpers.
type rtTB struct{ *rapid.T }

func (rtTB) Helper() {}

// TestRDMAPropertyMixed mixes plain messages and RDMA ops (WRITE and
// READ, several sizes, several sockets) in random order with receives
// interleaved, and checks:
//   - per (server socket, client socket) every message arrives exactly
//     once and in order, RDMA ACKs included;
//   - atomicity: when a client receives a WRITE's ACK its window already
//     holds the data; when it receives a READ's ACK the server already
//     read the window (the client then overwrites the window, and the
//     server's copy must still be the original);
//   - every op reports success, and no mapping or buffer charge is left.
func TestRDMAPropertyMixed(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		f.Value.Set("20")
	}
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		rapid.Check(t, func(rt *rapid.T) { rdmaPropertyRun(rtTB{rt}, rt, r) })
		if n := r.st.nodeAt(r.cliNode).rdmaMRs.Load(); n != 0 {
			t.Fatalf("%d mappings left", n)
		}
	})
}

type propOp struct {
	write bool
	win   []byte // client window
	want  []byte // WRITE: what the window must hold; READ: what the server must read
	local []byte // server buffer
	token uint64
}

func rdmaPropertyRun(t tb, rt *rapid.T, r *rdmaRig) {
	const nc, ns = 2, 2
	var cli, srv [nc]*Socket
	for i := range nc {
		cli[i], srv[i] = r.socket(t, r.cliNode), r.socket(t, r.srvNode)
		defer cli[i].Close()
		defer srv[i].Close()
	}
	type stream struct{ sent, recvd uint32 }
	var streams [ns][nc]stream
	ops := map[uint64]*propOp{} // by token
	var sentOps [ns]int
	var token uint64
	from := map[uint16]int{}
	for i := range ns {
		from[srv[i].BoundAddr().Port()] = i
	}

	// recvOne receives on client c and checks order and atomicity.
	recvOne := func(c int) {
		buf := make([]byte, 64)
		n, m := recvFull(t, cli[c], buf)
		s := from[m.Addr.Port()]
		st := &streams[s][c]
		if n < 12 {
			t.Fatalf("short message %d", n)
		}
		seq, tok := binary.BigEndian.Uint32(buf), binary.BigEndian.Uint64(buf[4:])
		if seq != st.recvd {
			t.Fatalf("server %d -> client %d: message %d, want %d (%d resets)", s, c, seq, st.recvd, r.resets())
		}
		st.recvd++
		if op := ops[tok]; op != nil && tok != 0 {
			if op.write && !bytes.Equal(op.win, op.want) {
				t.Fatalf("WRITE ACK %d arrived before its data", tok)
			}
			if !op.write {
				pattern(op.win, 0xee) // reuse the window at once
			}
		}
	}
	msg := func(s, c int, tok uint64) []byte {
		b := make([]byte, 12)
		binary.BigEndian.PutUint32(b, streams[s][c].sent)
		binary.BigEndian.PutUint64(b[4:], tok)
		streams[s][c].sent++
		return b
	}

	steps := rapid.IntRange(1, 40).Draw(rt, "steps")
	for range steps {
		s, c := rapid.IntRange(0, ns-1).Draw(rt, "srv"), rapid.IntRange(0, nc-1).Draw(rt, "cli")
		switch rapid.IntRange(0, 3).Draw(rt, "kind") {
		case 0: // plain message
			if _, err := srv[s].SendTo(msg(s, c, 0), cli[c].BoundAddr(), 0); err != nil {
				t.Fatalf("SendTo: %v", err)
			}
		case 1, 2: // RDMA op
			size := rapid.SampledFrom([]int{1, 100, 4096, 70000, 300000}).Draw(rt, "size")
			token++
			op := &propOp{write: rapid.Bool().Draw(rt, "write"), win: make([]byte, size+3)[3:], local: make([]byte, size), token: token}
			pattern(op.win, byte(token))
			pattern(op.local, byte(token*3))
			op.want = bytes.Clone(op.local)
			flags := RDMAUseOnce
			if op.write {
				flags |= RDMAReadWrite
			} else {
				op.want = bytes.Clone(op.win)
			}
			ops[token] = op
			sentOps[s]++
			ck := r.request(t, cli[c], srv[s], []byte("req"), RDMAMap{Mem: op.win, Flags: flags})
			af := RDMANotifyMe | RDMAFence
			if op.write {
				af |= RDMAReadWrite
			}
			r.op(t, srv[s], cli[c], msg(s, c, token), RDMAArgs{Cookie: ck, RemoteBytes: uint64(size),
				Local: split(op.local, 1+int(token%3)), Flags: af, UserToken: token})
		case 3: // a client receives, if something was sent to it
			for s := range ns {
				if streams[s][c].recvd < streams[s][c].sent {
					recvOne(c)
					break
				}
			}
		}
	}
	for c := range nc {
		for s := range ns {
			for streams[s][c].recvd < streams[s][c].sent {
				recvOne(c)
			}
		}
	}
	// Notifications: one success per op, on the server that sent it.
	for s := range ns {
		for _, n := range r.notes(t, srv[s], sentOps[s]) {
			op := ops[n.UserToken]
			if op == nil || n.Status != RDMASuccess {
				t.Fatalf("notification %+v", n)
			}
			if !op.write && !bytes.Equal(op.local, op.want) {
				t.Fatalf("READ %d: server read the window after the client reused it", n.UserToken)
			}
			delete(ops, n.UserToken)
		}
	}
	if len(ops) != 0 {
		t.Fatalf("%d ops without notification", len(ops))
	}
	for c := range nc {
		if k := cli[c].MRs(); k != 0 {
			t.Fatalf("client %d holds %d mappings", c, k)
		}
	}
}
