package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs/mem"
)

// The dat transport's check table (dat_rdma_mr.go): what a request is
// admitted for, and a FreeMR that waits for the op it admitted.
func TestDATCheckAdmit(t *testing.T) {
	leakCheck(t)
	r := newDATRig(t, DATConfig{Provider: mem.New()})
	dn := r.st.Node(r.cliNode).trans[TransIB].(*datNode)
	buf := make([]byte, 100)
	rwCk, err := r.cli.GetMR(buf, RDMAReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	roCk, _ := r.cli.GetMR(buf[:50], 0)
	onceCk, _ := r.cli.GetMR(buf, RDMAUseOnce|RDMAReadWrite)
	addr, _ := r.cli.mrAddr(rwCk.RKey())
	req := func(ck Cookie, off, n uint64, write bool) wire.RDMACheck {
		c := make(wire.RDMACheck, wire.RDMACheckLen)
		c.Encode(&wire.CheckFields{Kind: wire.CheckRequest, Write: write, ID: 1, RKey: ck.RKey(), Length: uint32(n), Address: addr + off})
		return c
	}
	e := &datEP{}
	for _, c := range []struct {
		name string
		req  wire.RDMACheck
		ok   bool
	}{
		{"whole", req(rwCk, 0, 100, true), true},
		{"tail", req(rwCk, 99, 1, false), true},
		{"past the end", req(rwCk, 99, 2, false), false},
		{"before the start", req(rwCk, ^uint64(0), 2, false), false},
		{"start at the end", req(rwCk, 100, 1, false), false},
		{"empty", req(rwCk, 0, 0, false), false},
		{"read of read-only", req(roCk, 10, 40, false), true},
		{"write of read-only", req(roCk, 10, 40, true), false},
		{"read-only past its end", req(roCk, 10, 41, false), false},
		{"unknown R_Key", req(MakeCookie(rwCk.RKey()^0x55aa, 0), 0, 1, false), false},
		{"use-once, first", req(onceCk, 0, 100, true), true},
		{"use-once, second", req(onceCk, 0, 100, true), false},
	} {
		m := dn.mrs.admit(c.req, e)
		if (m != nil) != c.ok {
			t.Errorf("%s: admitted %v, want %v", c.name, m != nil, c.ok)
		}
		if m != nil {
			dn.mrs.unpin(m, e)
		}
	}

	// A FreeMR waits for the op admitted on the mapping; no check passes
	// once it started.
	m := dn.mrs.admit(req(rwCk, 0, 100, true), e)
	if m == nil {
		t.Fatal("not admitted")
	}
	freed := make(chan error, 1)
	go func() { freed <- r.cli.FreeMR(rwCk, 0) }()
	eventually(t, rigWait, "mapping out of the table", func() bool {
		dn.mrs.mu.Lock()
		defer dn.mrs.mu.Unlock()
		return dn.mrs.mrs[rwCk.RKey()] == nil
	})
	if dn.mrs.admit(req(rwCk, 0, 1, false), e) != nil {
		t.Fatal("a check passed on a mapping being freed")
	}
	select {
	case err := <-freed:
		t.Fatalf("FreeMR returned (%v) while an op held the mapping", err)
	default:
	}
	dn.mrs.unpin(m, e)
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
}

// Check frames travel between the fragments of large messages going the
// other way: the client sends 300 KB messages to the server while the
// server's ops on the client's memory are checked, and every byte of
// both arrives.
func TestRDMAChecksBetweenFragments(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		if r.mem != nil {
			t.Skip("the in-memory transport has no frames")
		}
		const ops, big = 30, 300 << 10
		win := make([]byte, 8192)
		ck, err := r.cli.GetMR(win, RDMAReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck))
		sent := make(chan error, 1)
		go func() {
			payload := make([]byte, big)
			for i := range ops {
				pattern(payload, byte(i))
				if _, err := r.cli.SendTo(payload, r.srv.BoundAddr(), 0); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		}()
		src := make([]byte, 8192)
		for i := range ops {
			pattern(src, byte(100+i))
			r.op(t, r.srv, r.cli, []byte(fmt.Sprint(i)), RDMAArgs{Cookie: ck, RemoteBytes: 8192, Local: [][]byte{src}, Flags: RDMAReadWrite | RDMAFence})
			expectNext(t, r.cli, []byte(fmt.Sprint(i)))
			if !bytes.Equal(win, src) {
				t.Fatalf("op %d: data missing", i)
			}
		}
		want := make([]byte, big)
		for i := range ops {
			buf := make([]byte, big+1)
			n, m := recvFull(t, r.srv, buf)
			for n == 0 && r.stashNotes(r.srv, m.Control) {
				n, _ = recvFull(t, r.srv, buf)
			}
			pattern(want, byte(i))
			if !bytes.Equal(buf[:n], want) {
				t.Fatalf("message %d: %d bytes, differ", i, n)
			}
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if k := r.resets(); k != 0 {
			t.Fatalf("%d resets", k)
		}
	})
}
