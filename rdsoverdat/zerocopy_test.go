package rdsoverdat

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"testing"
)

// Round trips: the client maps a window of an unaligned buffer with its
// request, the server WRITEs into it or READs from it with its reply,
// and both sides check the bytes, the guard bytes around the window, and
// the NOTIFY_ME status. Sizes run from 1 byte to the limit.
func TestRDMARoundTrip(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		for _, size := range []int{1, 7, 4096, 65537, DefaultRDMAMaxBytes} {
			for _, write := range []bool{true, false} {
				t.Run(fmt.Sprintf("%d/write=%v", size, write), func(t *testing.T) {
					rdmaRoundTrip(t, r, size, write, 3)
				})
			}
		}
	})
}

func rdmaRoundTrip(t *testing.T, r *rdmaRig, size int, write bool, pieces int) {
	const guard = 13 // unaligned start, bytes either side that must not change
	cbuf := make([]byte, size+2*guard)
	pattern(cbuf, 1)
	orig := bytes.Clone(cbuf)
	win := cbuf[guard : guard+size]
	sbuf := make([]byte, size+5)[5:] // unaligned on the server too
	pattern(sbuf, 99)
	want := bytes.Clone(sbuf)
	if !write {
		want = bytes.Clone(win)
	}
	flags := RDMAUseOnce
	if write {
		flags |= RDMAReadWrite
	}
	var ck Cookie
	got := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, CookieAddr: &ck, Flags: flags})
	if got != ck || ck == 0 {
		t.Fatalf("server got cookie %#x, client %#x", got, ck)
	}
	opFlags := RDMANotifyMe | RDMAFence
	if write {
		opFlags |= RDMAReadWrite
	}
	r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: got, RemoteBytes: uint64(size),
		Local: split(sbuf, pieces), Flags: opFlags, UserToken: 77})
	expectNext(t, r.cli, []byte("ack"))
	// The ACK is delivered only after the data moved.
	if write {
		if !bytes.Equal(win, want) {
			t.Fatalf("client window differs after WRITE")
		}
	} else if !bytes.Equal(sbuf, want) {
		t.Fatalf("server buffer differs after READ")
	}
	if !bytes.Equal(cbuf[:guard], orig[:guard]) || !bytes.Equal(cbuf[guard+size:], orig[guard+size:]) {
		t.Fatalf("bytes outside the mapping changed")
	}
	if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 77, Status: RDMASuccess}) {
		t.Fatalf("notification %+v", n[0])
	}
	if k := r.cli.MRs(); k != 0 {
		t.Fatalf("use-once mapping still held after the ACK: %d", k)
	}
}

// A use-once mapping is gone once the ACK arrived: a second op on its
// cookie fails at the client with a remote error, reported through
// RDS_RECVERR without NOTIFY_ME, and its message is not delivered.
func TestRDMAUseOnce(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		if err := r.srv.SetOption(RecvErr(true)); err != nil {
			t.Fatal(err)
		}
		win := make([]byte, 100)
		ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAUseOnce | RDMAReadWrite})
		src := bytes.Repeat([]byte{5}, 100)
		r.op(t, r.srv, r.cli, []byte("ack1"), RDMAArgs{Cookie: ck, RemoteBytes: 100, Local: [][]byte{src}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 1})
		expectNext(t, r.cli, []byte("ack1"))
		if !bytes.Equal(win, src) {
			t.Fatal("first WRITE missing")
		}
		// Success needs the client's ack of ack1; wait for it, or the
		// failure below could drop the first op along with the second.
		if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 1, Status: RDMASuccess}) {
			t.Fatalf("first op: %+v", n[0])
		}
		src2 := bytes.Repeat([]byte{6}, 100)
		r.op(t, r.srv, r.cli, []byte("ack2"), RDMAArgs{Cookie: ck, RemoteBytes: 100, Local: [][]byte{src2}, Flags: RDMAReadWrite, UserToken: 2})
		r.wantFailed(t, r.srv, 2) // the second op on a used-once cookie
		r.srv.SendTo([]byte("after"), r.cli.BoundAddr(), 0)
		expectNext(t, r.cli, []byte("after")) // ack2 never arrives
		if !bytes.Equal(win, src) {
			t.Fatal("a used-once mapping was written")
		}
	})
}

// Without USE_ONCE a mapping serves many ops until FREE_MR; after
// FREE_MR (with INVALIDATE) its cookie fails. Cookie 0 with INVALIDATE
// flushes released mappings only (rds-rdma(7)): live ones keep working.
func TestRDMAFreeMR(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		win := make([]byte, 64)
		ck, err := r.cli.GetMR(win, RDMAReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		got := r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck))
		if got != ck {
			t.Fatalf("cookie %#x, want %#x", got, ck)
		}
		for i := range 3 {
			src := bytes.Repeat([]byte{byte(i + 1)}, 64)
			r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{src}, Flags: RDMAReadWrite | RDMANotifyMe})
			expectNext(t, r.cli, []byte("ack"))
			if !bytes.Equal(win, src) {
				t.Fatalf("op %d: data missing", i)
			}
			if n := r.notes(t, r.srv, 1); n[0].Status != RDMASuccess {
				t.Fatalf("op %d: %v", i, n[0].Status)
			}
		}
		if err := r.cli.FreeMR(ck, RDMAInvalidate); err != nil {
			t.Fatal(err)
		}
		wantErrno(t, r.cli.FreeMR(ck, 0), syscall.EINVAL)
		r.op(t, r.srv, r.cli, []byte("late"), RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{make([]byte, 64)}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 9})
		r.wantFailed(t, r.srv, 9) // an op on a freed cookie
		if win[0] != 3 {
			t.Fatal("freed mapping written")
		}

		var c1, c2 Cookie
		if err := r.cli.SetOption(GetMR{Vec: make([]byte, 8), CookieAddr: &c1}); err != nil {
			t.Fatal(err)
		}
		if err := r.cli.SetOption(GetMRForDest{Dest: r.srv.BoundAddr(), Vec: make([]byte, 8), CookieAddr: &c2}); err != nil {
			t.Fatal(err)
		}
		if c1 == 0 || c2 == 0 || c1 == c2 || r.cli.MRs() != 2 {
			t.Fatalf("cookies %#x %#x, %d mappings", c1, c2, r.cli.MRs())
		}
		if err := r.cli.SetOption(FreeMR{Cookie: 0, Flags: RDMAInvalidate}); err != nil {
			t.Fatal(err)
		}
		if r.cli.MRs() != 2 {
			t.Fatalf("FREE_MR(0, INVALIDATE) released live mappings: %d left", r.cli.MRs())
		}
		r.request(t, r.cli, r.srv, []byte("req2"), RDMADest(c2))
		r.op(t, r.srv, r.cli, []byte("ack2"), RDMAArgs{Cookie: c2, RemoteBytes: 8, Local: [][]byte{make([]byte, 8)}, Flags: RDMANotifyMe}) // a READ: c2 is read-only
		if n := r.notes(t, r.srv, 1); n[0].Status != RDMASuccess {
			t.Fatalf("op on a mapping kept by FREE_MR(0): %v", n[0].Status)
		}
		expectNext(t, r.cli, []byte("ack2"))
		for _, c := range []Cookie{c1, c2} {
			if err := r.cli.FreeMR(c, 0); err != nil {
				t.Fatal(err)
			}
		}
		if r.st.nodeAt(r.cliNode).rdmaMRs.Load() != 0 {
			t.Fatalf("mappings left: %d", r.st.nodeAt(r.cliNode).rdmaMRs.Load())
		}
	})
}

// Access is limited to the mapping's range and direction; a wrong
// cookie reaches nothing. A cookie's offset counts from the mapping's
// own: on the kernel's wire that is the page offset of its first byte,
// so an offset taken as absolute would land inside the mapping
// whenever the window starts far enough into its page. Each failure is a remote error, its message is
// not delivered, and no byte outside the window changes.
func TestRDMAAccessChecks(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		r.srv.SetOption(RecvErr(true))
		const guard = 32
		cbuf := make([]byte, 256+2*guard)
		pattern(cbuf, 3)
		orig := bytes.Clone(cbuf)
		win := cbuf[guard : guard+256]
		ro := r.request(t, r.cli, r.srv, []byte("ro"), RDMAMap{Mem: win}) // read-only
		rw := r.request(t, r.cli, r.srv, []byte("rw"), RDMAMap{Mem: win, Flags: RDMAReadWrite})
		src := make([]byte, 256)
		cases := []struct {
			name string
			args RDMAArgs
		}{
			{"write to read-only", RDMAArgs{Cookie: ro, RemoteBytes: 16, Local: [][]byte{src[:16]}, Flags: RDMAReadWrite}},
			{"wrong cookie", RDMAArgs{Cookie: MakeCookie(rw.RKey()+977, 0), RemoteBytes: 16, Local: [][]byte{src[:16]}, Flags: RDMAReadWrite}},
			{"write past the end", RDMAArgs{Cookie: rw, RemoteAddr: 250, RemoteBytes: 16, Local: [][]byte{src[:16]}, Flags: RDMAReadWrite}},
			{"read past the end", RDMAArgs{Cookie: rw, RemoteAddr: 255, RemoteBytes: 2, Local: [][]byte{src[:2]}}},
			{"start past the end", RDMAArgs{Cookie: rw, RemoteAddr: 1 << 20, RemoteBytes: 1, Local: [][]byte{src[:1]}, Flags: RDMAReadWrite}},
			{"offset in cookie past the end", RDMAArgs{Cookie: MakeCookie(rw.RKey(), rw.Offset()+250), RemoteAddr: 0, RemoteBytes: 8, Local: [][]byte{src[:8]}, Flags: RDMAReadWrite}},
		}
		for i, c := range cases {
			c.args.UserToken = uint64(i)
			r.op(t, r.srv, r.cli, []byte("bad"), c.args)
			r.wantFailed(t, r.srv, uint64(i))
			marker := []byte(fmt.Sprintf("after %d", i))
			r.srv.SendTo(marker, r.cli.BoundAddr(), 0)
			expectNext(t, r.cli, marker)
		}
		if !bytes.Equal(cbuf, orig) {
			t.Fatal("client memory changed by failed ops")
		}
		if st := r.st.nodeAt(r.srvNode).Stats(); st.RDMARemoteError != uint64(len(cases)) || st.RDMADropped != 0 {
			t.Fatalf("counters: %d remote errors, %d dropped; want %d, 0", st.RDMARemoteError, st.RDMADropped, len(cases))
		}
		// The read-only mapping still serves READs, inside its range.
		dst := make([]byte, 10)
		r.op(t, r.srv, r.cli, []byte("ok"), RDMAArgs{Cookie: ro, RemoteAddr: 246, RemoteBytes: 10, Local: [][]byte{dst}, Flags: RDMANotifyMe | RDMAFence})
		expectNext(t, r.cli, []byte("ok"))
		if !bytes.Equal(dst, win[246:]) {
			t.Fatal("READ of the mapping's tail")
		}
		if n := r.notes(t, r.srv, 1); n[0].Status != RDMASuccess {
			t.Fatalf("read-only READ: %v", n[0].Status)
		}
	})
}

// Errors caught on the sending side, before anything is sent.
func TestRDMASendErrors(t *testing.T) {
	forEachRig(t, RDMALimits{MaxBytes: 1 << 16, MaxMRs: 4}, func(t *testing.T, r *rdmaRig) {
		to := r.cli.BoundAddr()
		buf := make([]byte, 100)
		ck := MakeCookie(1, 0)
		send := func(cm ...ControlMessage) error {
			_, err := r.srv.SendMsg(&Msg{Data: []byte("x"), Addr: to, Control: cm}, 0)
			return err
		}
		args := RDMAArgs{Cookie: ck, RemoteBytes: 100, Local: [][]byte{buf}}
		for name, cm := range map[string][]ControlMessage{
			"length mismatch":   {RDMAArgs{Cookie: ck, RemoteBytes: 99, Local: [][]byte{buf}}},
			"no local iovecs":   {RDMAArgs{Cookie: ck}},
			"empty local":       {RDMAArgs{Cookie: ck, Local: [][]byte{nil}}},
			"unknown op flag":   {RDMAArgs{Cookie: ck, RemoteBytes: 100, Local: [][]byte{buf}, Flags: RDMAUseOnce}},
			"remote overflow":   {RDMAArgs{Cookie: ck, RemoteAddr: 1<<64 - 50, RemoteBytes: 100, Local: [][]byte{buf}}},
			"two args":          {args, args},
			"args and dest":     {args, RDMADest(ck)},
			"map and dest":      {RDMAMap{Mem: buf}, RDMADest(ck)},
			"two maps":          {RDMAMap{Mem: buf}, RDMAMap{Mem: buf}},
			"dest and args":     {RDMADest(ck), &args},
			"receive-only cmsg": {RDMANotify{}},
			"cong update":       {CongUpdate(1)},
			"map too big":       {RDMAMap{Mem: make([]byte, 1<<16+1)}},
			"empty map":         {RDMAMap{}},
			"bad map flag":      {RDMAMap{Mem: buf, Flags: RDMANotifyMe}},
		} {
			wantErrnoNamed(t, name, send(cm...), syscall.EINVAL)
		}
		big := make([]byte, 1<<16+1)
		wantErrnoNamed(t, "op too big", send(RDMAArgs{Cookie: ck, RemoteBytes: uint64(len(big)), Local: [][]byte{big}}), syscall.EMSGSIZE)

		// Limits on mappings: EINVAL above MaxBytes, EAGAIN at MaxMRs,
		// EBUSY when the transport cannot register.
		_, err := r.cli.GetMR(make([]byte, 1<<16+1), 0)
		wantErrno(t, err, syscall.EINVAL)
		_, err = r.cli.GetMR(nil, 0)
		wantErrno(t, err, syscall.EINVAL)
		var cks []Cookie
		for range 4 {
			c, err := r.cli.GetMR(make([]byte, 1<<16), 0)
			if err != nil {
				t.Fatal(err)
			}
			cks = append(cks, c)
		}
		_, err = r.cli.GetMR(buf, 0)
		wantErrno(t, err, syscall.EAGAIN)
		_, err = r.cli.SendMsg(&Msg{Addr: r.srv.BoundAddr(), Control: []ControlMessage{RDMAMap{Mem: buf}}}, 0)
		wantErrno(t, err, syscall.EAGAIN) // the client's node is full
		r.cli.FreeMR(cks[0], 0)
		if r.mem != nil {
			r.mem.failReg.Store(true)
			_, err = r.cli.GetMR(buf, 0)
			wantErrno(t, err, syscall.EBUSY)
			r.mem.failReg.Store(false)
		}
		if _, err := r.cli.GetMR(buf, 0); err != nil {
			t.Fatalf("a freed slot is usable again: %v", err)
		}
		_, err = r.cli.GetMRForDest(ap(netip.IPv4Unspecified(), 1), buf, 0)
		wantErrno(t, err, syscall.EINVAL)
		wantErrno(t, r.cli.SetOption(GetMRForDest{Vec: buf}), syscall.EINVAL)
	})
}

func wantErrnoNamed(t *testing.T, name string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: err = %v, want %v", name, err, want)
	}
}

// RDMA needs an RDMA-capable transport: the loop (own address) and tcp
// transports refuse the control messages and the mappings.
func TestRDMANotSupported(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{Transports: []Transport{newMemRDMA(RDMALimits{}), TCP(TCPConfig{})}})
	as := testAddrs(2)
	s := mustBind(t, st, ap(as[0], 0))
	self := mustBind(t, st, ap(as[0], 0))
	_, err := s.SendMsg(&Msg{Data: []byte("x"), Addr: self.BoundAddr(), Control: []ControlMessage{RDMAMap{Mem: make([]byte, 8)}}}, 0)
	wantErrno(t, err, syscall.EOPNOTSUPP)
	tc := mustBind(t, st, ap(as[1], 0), TransportOption(TransTCP))
	_, err = tc.GetMR(make([]byte, 8), 0)
	wantErrno(t, err, syscall.EOPNOTSUPP)
	_, err = tc.SendMsg(&Msg{Data: []byte("x"), Addr: s.BoundAddr(), Control: []ControlMessage{RDMADest(5)}}, 0)
	wantErrno(t, err, syscall.EINVAL) // names no mapping of tc's, as in rds_cmsg_rdma_dest
	_, err = tc.SendMsg(&Msg{Data: []byte("x"), Addr: s.BoundAddr(), Control: []ControlMessage{RDMAArgs{Cookie: 5, RemoteBytes: 1, Local: [][]byte{{0}}}}}, 0)
	wantErrno(t, err, syscall.EOPNOTSUPP)
	_, err = st.Socket().GetMR(make([]byte, 8), 0)
	wantErrno(t, err, syscall.ENOTCONN)
}

// Many clients and servers run ops at once; each checks its own bytes.
func TestRDMAConcurrent(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		const workers, rounds = 6, 20
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			cli, srv := r.socket(t, r.cliNode), r.socket(t, r.srvNode)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- concurrentWorker(r, cli, srv, w, rounds)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := r.st.nodeAt(r.cliNode).rdmaMRs.Load(); n != 0 {
			t.Fatalf("%d mappings left", n)
		}
	})
}

func concurrentWorker(r *rdmaRig, cli, srv *Socket, w, rounds int) (err error) {
	ft := &goTB{}
	defer ft.recover(&err)
	for i := range rounds {
		size := 1 + (w*7919+i*104729)%(200<<10)
		win := make([]byte, size+1)[1:]
		src := make([]byte, size)
		pattern(src, byte(w*31+i))
		ck := r.request(ft, cli, srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAUseOnce | RDMAReadWrite})
		r.op(ft, srv, cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: uint64(size), Local: split(src, 1+i%4), Flags: RDMAReadWrite | RDMANotifyMe, UserToken: uint64(i)})
		expectNext(ft, cli, []byte("ack"))
		if !bytes.Equal(win, src) {
			return fmt.Errorf("worker %d round %d: data differs", w, i)
		}
		if n := r.notes(ft, srv, 1); n[0] != (RDMANotify{UserToken: uint64(i), Status: RDMASuccess}) {
			return fmt.Errorf("worker %d round %d: notification %v", w, i, n)
		}
	}
	return nil
}
