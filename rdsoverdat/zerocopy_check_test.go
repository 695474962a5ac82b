package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs/mem"
)

// The dat transport's check table (internal/dat/dat_rdma_mr.go): what a request is
// admitted for, and a FreeMR that waits for the op it admitted.
func TestDATCheckAdmit(t *testing.T) {
	leakCheck(t)
	r := newDATRig(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem"})
	dn := datNodeOf(t, r.st.nodeAt(r.cliNode))
	buf := make([]byte, 100)
	rwCk, err := r.cli.GetMR(buf, RDMAReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	roCk, _ := r.cli.GetMR(buf[:50], 0)
	onceCk, _ := r.cli.GetMR(buf, RDMAUseOnce|RDMAReadWrite)
	addr, _ := r.cli.sock().mrAddr(rwCk.RKey())
	req := func(ck Cookie, off, n uint64, write bool) wire.RDMACheck {
		c := make(wire.RDMACheck, wire.RDMACheckLen)
		c.Encode(&wire.CheckFields{Kind: wire.CheckRequest, Write: write, ID: 1, RKey: ck.RKey(), Length: uint32(n), Address: addr + off})
		return c
	}
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
		m, ok := dn.Admit(c.req)
		if ok != c.ok {
			t.Errorf("%s: admitted %v, want %v", c.name, ok, c.ok)
		}
		if ok {
			dn.Unpin(m)
		}
	}

	// A FreeMR waits for the op admitted on the mapping; no check passes
	// once it started.
	m, ok := dn.Admit(req(rwCk, 0, 100, true))
	if !ok {
		t.Fatal("not admitted")
	}
	freed := make(chan error, 1)
	go func() { freed <- r.cli.FreeMR(rwCk, 0) }()
	eventually(t, rigWait, "mapping out of the table", func() bool { return !dn.Mapped(rwCk.RKey()) })
	if _, ok := dn.Admit(req(rwCk, 0, 1, false)); ok {
		t.Fatal("a check passed on a mapping being freed")
	}
	select {
	case err := <-freed:
		t.Fatalf("FreeMR returned (%v) while an op held the mapping", err)
	default:
	}
	dn.Unpin(m)
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

// A mapping freed while the server streams ops on it, 8 in flight: every
// op before the free succeeds with its data and its message, every op
// after it fails with a remote error and no message, and the connection
// never breaks (over dat the free revokes the server's lease first).
func TestRDMAFreeWhileStreaming(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		const ops, window, freeAt = 60, 8, 20
		r.srv.SetOption(RecvErr(true))
		win := make([]byte, ops*4096) // op i writes the i-th 4 KiB
		ck, err := r.cli.GetMR(win, RDMAReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck))
		srcs := make([][]byte, ops)
		for i := range srcs {
			srcs[i] = bytes.Repeat([]byte{byte(i + 1)}, 4096)
		}
		credits := make(chan struct{}, ops)
		for range window {
			credits <- struct{}{}
		}
		sent := make(chan error, 1)
		go func() {
			for i := range ops {
				if i < freeAt+window {
					<-credits // op freeAt+window goes after the free
				}
				m := Msg{Data: []byte{'a', byte(i)}, Addr: r.cli.BoundAddr(), Control: []ControlMessage{RDMAArgs{
					Cookie: ck, RemoteAddr: uint64(i) * 4096, RemoteBytes: 4096, Local: [][]byte{srcs[i]},
					Flags: RDMAReadWrite | RDMANotifyMe, UserToken: uint64(i)}}}
				if _, err := r.srv.SendMsg(&m, 0); err != nil {
					sent <- err
					return
				}
			}
			_, err := r.srv.SendTo([]byte("end"), r.cli.BoundAddr(), 0)
			sent <- err
		}()
		acked := 0
		for {
			m := expectAny(t, r.cli)
			if string(m) == "end" {
				break
			}
			if m[0] != 'a' || int(m[1]) != acked {
				t.Fatalf("message %q after %d acks", m, acked)
			}
			if !bytes.Equal(win[acked*4096:][:4096], srcs[acked]) {
				t.Fatalf("ack %d before its data", acked)
			}
			if acked++; acked == freeAt {
				if err := r.cli.FreeMR(ck, RDMAInvalidate); err != nil {
					t.Fatal(err)
				}
			}
			credits <- struct{}{}
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if acked < freeAt || acked >= freeAt+window {
			t.Fatalf("%d ops ran, want %d to %d", acked, freeAt, freeAt+window-1)
		}
		status := make([]RDMAStatus, ops)
		for _, n := range r.notes(t, r.srv, ops) {
			status[n.UserToken] = n.Status
		}
		for i, st := range status {
			want := RDMASuccess
			if i >= acked {
				want = RDMARemoteError
			}
			if st != want {
				t.Fatalf("op %d: %v, want %v (%d ops acked)", i, st, want, acked)
			}
		}
		if !bytes.Equal(win[acked*4096:], make([]byte, (ops-acked)*4096)) {
			t.Fatal("ops after the free wrote the memory")
		}
		if k := r.resets(); k != 0 {
			t.Fatalf("%d resets", k)
		}
	})
}
