package rdsoverdat

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropertyReliableOrdered sends random message sequences from several
// sockets to several destinations over tcp while connections are reset at
// random points, then checks: every message arrives exactly once, in
// order per (sender, destination), and SO_SNDBUF/SO_RCVBUF accounting
// returns to zero. TestDATPropertyReliableOrdered does the same over dat.
var propPaths = 0 // tests may pin the path count

func TestPropertyReliableOrdered(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		f.Value.Set("25") // keep go test -race ./... fast; raise with -rapid.checks
	}
	leakCheck(t)
	rapid.Check(t, func(rt *rapid.T) {
		paths := propPaths
		if paths == 0 {
			paths = rapid.SampledFrom([]int{1, 4}).Draw(rt, "paths") // single path and mprds
		}
		st := NewStack(Config{Transports: []Transport{TCP(TCPConfig{Paths: paths, ReconnectMax: 20 * time.Millisecond})}})
		defer st.Close()
		checkReliableOrdered(rt, st, TransTCP)
	})
}

// checkReliableOrdered is one case of the property over st's transport t.
func checkReliableOrdered(rt *rapid.T, st *Stack, t TransportType) {
	as := testAddrs(3)
	var snd, rcv []*Socket
	for i := range 6 {
		s := st.Socket()
		s.SetOption(SendTimeout(10 * time.Second))
		if err := s.Bind(ap(as[i%3], 0)); err != nil {
			rt.Fatal(err)
		}
		snd = append(snd, s)
		if i >= 3 {
			continue
		}
		r := st.Socket()
		r.SetOption(RecvBuffer(4 << 20))
		if err := r.Bind(ap(as[i], 0)); err != nil {
			rt.Fatal(err)
		}
		rcv = append(rcv, r)
	}
	type key struct{ from, to int }
	sent := map[key]int{}
	nops := rapid.IntRange(1, 80).Draw(rt, "ops")
	for range nops {
		if rapid.IntRange(0, 9).Draw(rt, "kind") == 0 {
			i, j := rapid.IntRange(0, 2).Draw(rt, "node"), rapid.IntRange(0, 2).Draw(rt, "peer")
			if c := st.nodeAt(as[i]).Conn(as[j], t); c != nil && i != j {
				c.Reset()
			}
			continue
		}
		i, j := rapid.IntRange(0, len(snd)-1).Draw(rt, "from"), rapid.IntRange(0, 2).Draw(rt, "to")
		size := rapid.IntRange(8, 3000).Draw(rt, "size")
		buf := make([]byte, size)
		binary.BigEndian.PutUint32(buf, uint32(i))
		binary.BigEndian.PutUint32(buf[4:], uint32(sent[key{i, j}]))
		if _, err := snd[i].SendTo(buf, rcv[j].BoundAddr(), 0); err != nil {
			rt.Fatalf("send %d->%d: %v", i, j, err)
		}
		sent[key{i, j}]++
	}
	got := map[key]int{}
	buf := make([]byte, 4096)
	for j, r := range rcv {
		total := 0
		for i := range snd {
			total += sent[key{i, j}]
		}
		for range total {
			r.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, from, err := r.ReadFrom(buf)
			if err != nil {
				rt.Fatalf("receiver %d after %v of %v: %v", j, got, sent, err)
			}
			i := int(binary.BigEndian.Uint32(buf))
			k := int(binary.BigEndian.Uint32(buf[4:]))
			if n < 8 || from.(Addr).AddrPort() != snd[i].BoundAddr() {
				rt.Fatalf("bad message %d bytes from %v", n, from)
			}
			if k != got[key{i, j}] {
				for _, a := range as {
					fmt.Fprintf(os.Stderr, "node %v: %+v\n", a, st.nodeAt(a).Stats())
				}
				rt.Fatalf("%d->%d: got #%d, want #%d (loss, duplicate or reorder)", i, j, k, got[key{i, j}])
			}
			got[key{i, j}]++
		}
		if _, err := r.RecvMsg(&Msg{Data: buf}, MsgDontWait); err == nil {
			rt.Fatalf("receiver %d: extra message (duplicate)", j)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range append(snd, rcv...) {
		for {
			sb, rb := s.Buffered()
			if sb == 0 && rb == 0 {
				break
			}
			if time.Now().After(deadline) {
				rt.Fatalf("%v: accounting stuck at snd %d rcv %d", s.BoundAddr(), sb, rb)
			}
			time.Sleep(time.Millisecond)
		}
	}
	_ = fmt.Sprint
}
