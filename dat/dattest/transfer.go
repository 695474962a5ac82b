package dattest

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/verbs/verbstest"
)

var connectTests = []testCase{
	{"AcceptAndDisconnect", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		sep, cep := Connect(t, srv, cli, nil)
		if cep.State() != dat.EPStateConnected || sep.State() != dat.EPStateConnected {
			t.Fatal("not connected")
		}
		if !privIs(sep.PeerPrivateData(), "DAPL and RDMA rule! Test 4321.") || !privIs(cep.PeerPrivateData(), "accepted") {
			t.Fatal("peer private data")
		}
		p, _ := cep.Query()
		if p.Remote.Addr() != e.a.Addr() {
			t.Fatalf("remote %v", p.Remote)
		}
		Disconnect(t, srv, cli, sep, cep)
		if cep.State() != dat.EPStateDisconnected || sep.State() != dat.EPStateDisconnected {
			t.Fatal("not disconnected")
		}
	}},
	{"Reject", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		psp, qual, err := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		defer psp.Free()
		cep := cli.NewEP(t, nil)
		cep.PostRecv(nil, 3, 0)
		cep.Connect(e.a.Addr(), qual, DefaultTimeout, []byte{1, 2, 3}, 0, 0)
		cr := Expect(t, srv.EVD, dat.ConnectionRequestEvent).CR.CR.(*ep.CR)
		if err := cr.Reject([]byte("no thanks")); err != nil {
			t.Fatal(err)
		}
		WantErr(t, cr.Reject(nil), dat.InvalidHandle, dat.InvalidHandleCR)
		ev := waitConn(t, cli.EVD, dat.ConnectionEventPeerRejected)
		if !privIs(ev.Conn.PrivateData, "no thanks") || cep.State() != dat.EPStateDisconnected {
			t.Fatalf("reject data %q state %v", ev.Conn.PrivateData, cep.State())
		}
	}},
	{"NoListener", func(t *testing.T, e *env) {
		cli := NewSide(t, e.b, 0)
		cep := cli.NewEP(t, nil)
		cep.Connect(e.a.Addr(), 1, DefaultTimeout, nil, 0, 0)
		ev := Next(t, cli.EVD)
		if ev.Number != e.h.NoListenerEvent {
			t.Fatalf("event %v, want %v", ev.Number, e.h.NoListenerEvent)
		}
	}},
	{"AbortPending", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		psp, qual, _ := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		defer psp.Free()
		cep := cli.NewEP(t, nil)
		cep.Connect(e.a.Addr(), qual, DefaultTimeout, nil, 0, 0)
		cr := Expect(t, srv.EVD, dat.ConnectionRequestEvent).CR.CR.(*ep.CR)
		if err := cep.Disconnect(dat.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
		waitConn(t, cli.EVD, dat.ConnectionEventDisconnected)
		// The server accepting the abandoned request learns it failed.
		sep := srv.NewEP(t, nil)
		if err := cr.Accept(sep, nil); err != nil {
			t.Fatal(err)
		}
		ev := Next(t, srv.EVD)
		if ev.Number != dat.ConnectionEventAcceptCompletion && ev.Number != dat.ConnectionEventEstablished {
			t.Fatalf("event %v", ev.Number)
		}
		if ev.Number == dat.ConnectionEventEstablished {
			waitConn(t, srv.EVD, dat.ConnectionEventDisconnected)
		}
	}},
	{"RSP", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		sep := srv.NewEP(t, nil)
		rsp, err := ep.CreateRSP(e.a, 23460, sep, srv.EVD)
		if err != nil {
			t.Fatal(err)
		}
		cep := cli.NewEP(t, nil)
		cep.Connect(e.a.Addr(), 23460, DefaultTimeout, []byte("rsp"), 0, 0)
		ev := Expect(t, srv.EVD, dat.ConnectionRequestEvent)
		if ev.CR.SP != nil || sep.State() != dat.EPStatePassiveConnectionPending {
			t.Fatalf("sp %v state %v", ev.CR.SP, sep.State())
		}
		WantErr(t, rsp.Free(), dat.InvalidHandle, dat.InvalidHandleRSP)
		WantErr(t, sep.Free(), dat.InvalidState, dat.InvalidStateEPPassConnPending)
		cr := ev.CR.CR.(*ep.CR)
		if p, _ := cr.Query(); p.LocalEP != sep {
			t.Fatal("CR's EP")
		}
		if err := cr.Accept(nil, nil); err != nil {
			t.Fatal(err)
		}
		Expect(t, srv.EVD, dat.ConnectionEventEstablished)
		Expect(t, cli.EVD, dat.ConnectionEventEstablished)
		Disconnect(t, srv, cli, sep, cep)
	}},
	{"ProviderPSP", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		psp, qual, err := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPProvider)
		if err != nil {
			t.Fatal(err)
		}
		defer psp.Free()
		cep := cli.NewEP(t, nil)
		cep.Connect(e.a.Addr(), qual, DefaultTimeout, nil, 0, 0)
		cr := Expect(t, srv.EVD, dat.ConnectionRequestEvent).CR.CR.(*ep.CR)
		p, _ := cr.Query()
		sep := p.LocalEP
		if sep == nil || sep.State() != dat.EPStateTentativeConnectionPending {
			t.Fatal("no tentative EP")
		}
		WantErr(t, cr.Accept(nil, nil), dat.InvalidState, dat.InvalidStateEPPZ)
		if err := sep.Modify(srv.PZ, srv.EVD, srv.EVD, srv.EVD, nil); err != nil {
			t.Fatal(err)
		}
		if err := cr.Accept(nil, nil); err != nil {
			t.Fatal(err)
		}
		Expect(t, srv.EVD, dat.ConnectionEventEstablished)
		Expect(t, cli.EVD, dat.ConnectionEventEstablished)
		Disconnect(t, srv, cli, sep, cep)
	}},
	{"Handoff", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		other, _ := evd.Create(e.a, 8, nil, dat.EVDCR)
		p1, q1, _ := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		p2, q2, _ := ep.CreatePSPAny(e.a, other, dat.PSPConsumer)
		defer p1.Free()
		defer p2.Free()
		cep := cli.NewEP(t, nil)
		cep.Connect(e.a.Addr(), q1, DefaultTimeout, []byte("h"), 0, 0)
		cr := Expect(t, srv.EVD, dat.ConnectionRequestEvent).CR.CR.(*ep.CR)
		WantErr(t, cr.Handoff(1), dat.InvalidParameter, dat.NoSubtype)
		if err := cr.Handoff(q2); err != nil {
			t.Fatal(err)
		}
		ev := Expect(t, other, dat.ConnectionRequestEvent)
		if ev.CR.SP != dat.Handle(p2) || ev.CR.ConnQual != q2 {
			t.Fatal("handoff event")
		}
		sep := srv.NewEP(t, nil)
		ev.CR.CR.(*ep.CR).Accept(sep, nil)
		Expect(t, srv.EVD, dat.ConnectionEventEstablished)
		Expect(t, cli.EVD, dat.ConnectionEventEstablished)
	}},
	{"DupConnect", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		psp, qual, _ := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		defer psp.Free()
		s1, c1 := srv.NewEP(t, nil), cli.NewEP(t, nil)
		ConnectEPs(t, srv, cli, s1, c1, qual)
		c2 := cli.NewEP(t, nil)
		if err := c2.DupConnect(c1, DefaultTimeout, nil, 0); err != nil {
			t.Fatal(err)
		}
		Expect(t, srv.EVD, dat.ConnectionRequestEvent).CR.CR.(*ep.CR).Accept(srv.NewEP(t, nil), nil)
		Expect(t, srv.EVD, dat.ConnectionEventEstablished)
		Expect(t, cli.EVD, dat.ConnectionEventEstablished)
	}},
	{"ConnQualInUse", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		p, q, err := ep.CreatePSPAny(e.a, s.EVD, dat.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Free()
		_, err = ep.CreatePSP(e.a, q, s.EVD, dat.PSPConsumer)
		WantErr(t, err, dat.ConnQualInUse, dat.NoSubtype)
		dto, _ := evd.Create(e.a, 4, nil, dat.EVDDTO)
		_, err = ep.CreatePSP(e.a, q+1, dto, dat.PSPConsumer)
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleEVDCR)
	}},
}

var dtoTests = []testCase{
	{"SendList", sendList},
	{"SendRecv", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
		sep, cep := Connect(t, srv, cli, nil)
		// A 3000-byte message scattered over 1000 + 4000 bytes: the first
		// segment fills, the second takes the rest.
		iov := []dat.LMRTriplet{srv.Buf.Triplet(0, 1000), srv.Buf.Triplet(4096, 4000)}
		if err := sep.PostRecv(iov, 77, 0); err != nil {
			t.Fatal(err)
		}
		msg := verbstest.Pattern(3000, 1)
		copy(cli.Buf.Bytes(), msg)
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 1500), cli.Buf.Triplet(1500, 1500)}, 88, 0); err != nil {
			t.Fatal(err)
		}
		if d := ExpectDTO(t, cli.EVD, 88, dat.DTOSuccess); d.Op != dat.DTOSend || d.Length != 3000 || d.EP != dat.Handle(cep) {
			t.Fatalf("send completion %+v", d)
		}
		d := ExpectDTO(t, srv.EVD, 77, dat.DTOSuccess)
		if d.Op != dat.DTOReceive || d.Length != 3000 || d.EP != dat.Handle(sep) {
			t.Fatalf("recv completion %+v", d)
		}
		b := srv.Buf.Bytes()
		if !bytes.Equal(b[:1000], msg[:1000]) || !bytes.Equal(b[4096:6096], msg[1000:]) || b[6096] != 0 {
			t.Fatal("scatter")
		}
		// Zero-length send.
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 1, 0)
		cep.PostSend(nil, 2, dat.CompletionSuppress)
		if d := ExpectDTO(t, srv.EVD, 1, dat.DTOSuccess); d.Length != 0 {
			t.Fatal("zero-length")
		}
		ExpectEmpty(t, cli.EVD) // suppressed
	}},
	{"RDMA", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 1<<16), NewSide(t, e.b, 1<<16)
		sep, cep := Connect(t, srv, cli, nil)
		data := verbstest.Pattern(20000, 2)
		copy(cli.Buf.Bytes(), data)
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 20000)}, 1, srv.Buf.RMRTriplet(100, 20000), 0); err != nil {
			t.Fatal(err)
		}
		if d := ExpectDTO(t, cli.EVD, 1, dat.DTOSuccess); d.Op != dat.DTORDMAWrite || d.Length != 20000 {
			t.Fatalf("%+v", d)
		}
		syncSend(t, srv, cli, sep, cep)
		if !bytes.Equal(srv.Buf.Bytes()[100:20100], data) {
			t.Fatal("write data")
		}
		copy(srv.Buf.Bytes()[30000:], verbstest.Pattern(5000, 3))
		if err := cep.PostRDMARead([]dat.LMRTriplet{cli.Buf.Triplet(40000, 5000)}, 2, srv.Buf.RMRTriplet(30000, 5000), dat.CompletionBarrierFence); err != nil {
			t.Fatal(err)
		}
		if d := ExpectDTO(t, cli.EVD, 2, dat.DTOSuccess); d.Op != dat.DTORDMARead || d.Length != 5000 {
			t.Fatalf("%+v", d)
		}
		if !bytes.Equal(cli.Buf.Bytes()[40000:45000], verbstest.Pattern(5000, 3)) {
			t.Fatal("read data")
		}
		WantErr(t, cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 100)}, 3, srv.Buf.RMRTriplet(0, 50), 0), dat.LengthError, dat.NoSubtype)
	}},
	{"RDMAZeroBased", func(t *testing.T, e *env) {
		// A zero-based LMR: triplets, local and remote, name its bytes by
		// their offset from the start of its first page.
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 1<<16)
		sep, cep := Connect(t, srv, cli, nil)
		mem := make([]byte, 1<<15+4096)[333 : 333+1<<15]
		zb, err := lmr.Create(e.a, srv.PZ, mem, dat.MemPrivAll, dat.VATypeZB)
		if err != nil {
			t.Fatal(err)
		}
		defer zb.Free()
		page := uint64(os.Getpagesize())
		if a := uint64(zb.Addr()); a >= page || a != uint64(uintptr(unsafe.Pointer(&mem[0])))%page {
			t.Fatalf("zero-based LMR at %#x", a)
		}
		if p, err := zb.Query(); err != nil || p.VAType != dat.VATypeZB || p.RegisteredAddress != zb.Addr() || p.RegisteredSize != uint64(len(mem)) {
			t.Fatalf("lmr_query: %+v %v", p, err)
		}
		if a, _, _ := e.a.Query(); !a.ZBSupported {
			t.Fatal("ia_query: zb_supported false")
		}
		data := verbstest.Pattern(20000, 5)
		copy(cli.Buf.Bytes(), data)
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 20000)}, 1, zb.RMRTriplet(100, 20000), 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 1, dat.DTOSuccess)
		syncSend(t, srv, cli, sep, cep)
		if !bytes.Equal(mem[100:20100], data) {
			t.Fatal("write data")
		}
		copy(mem[25000:], verbstest.Pattern(5000, 6))
		if err := cep.PostRDMARead([]dat.LMRTriplet{cli.Buf.Triplet(40000, 5000)}, 2, zb.RMRTriplet(25000, 5000), 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 2, dat.DTOSuccess)
		if !bytes.Equal(cli.Buf.Bytes()[40000:45000], verbstest.Pattern(5000, 6)) {
			t.Fatal("read data")
		}
		// Locally too: a Send gathered from it.
		copy(mem[7:], verbstest.Pattern(300, 7))
		if err := cep.PostRecv([]dat.LMRTriplet{cli.Buf.Triplet(0, 300)}, 3, 0); err != nil {
			t.Fatal(err)
		}
		if err := sep.PostSend([]dat.LMRTriplet{zb.Triplet(7, 300)}, 4, 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, srv.EVD, 4, dat.DTOSuccess)
		ExpectDTO(t, cli.EVD, 3, dat.DTOSuccess)
		if !bytes.Equal(cli.Buf.Bytes()[:300], verbstest.Pattern(300, 7)) {
			t.Fatal("send data")
		}
		// The memory's virtual address is outside it.
		va := dat.LMRTriplet{VirtualAddress: dat.VAddr(uintptr(unsafe.Pointer(&mem[0]))), SegmentLength: 8, LMRContext: zb.Context()}
		WantErr(t, sep.PostSend([]dat.LMRTriplet{va}, 5, 0), dat.InvalidParameter, dat.NoSubtype)
	}},
	{"ReadSplit", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
		_, cep := Connect(t, srv, cli, &dat.EPAttr{MaxRDMAReadIOV: 3})
		copy(srv.Buf.Bytes(), verbstest.Pattern(3000, 4))
		iov := []dat.LMRTriplet{cli.Buf.Triplet(0, 1000), cli.Buf.Triplet(2000, 1000), cli.Buf.Triplet(5000, 1000)}
		if err := cep.PostRDMARead(iov, 9, srv.Buf.RMRTriplet(0, 3000), 0); err != nil {
			t.Fatal(err)
		}
		if d := ExpectDTO(t, cli.EVD, 9, dat.DTOSuccess); d.Length != 3000 {
			t.Fatalf("length %d", d.Length)
		}
		p, b := verbstest.Pattern(3000, 4), cli.Buf.Bytes()
		if !bytes.Equal(b[:1000], p[:1000]) || !bytes.Equal(b[2000:3000], p[1000:2000]) || !bytes.Equal(b[5000:6000], p[2000:]) {
			t.Fatal("read split data")
		}
		ExpectEmpty(t, cli.EVD)
	}},
	{"TripletChecks", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		_, cep := Connect(t, srv, cli, nil)
		bad := cli.Buf.Triplet(0, 8)
		bad.LMRContext ^= 0x55
		WantErr(t, cep.PostSend([]dat.LMRTriplet{bad}, 1, 0), dat.PrivilegesViolation, dat.NoSubtype)
		WantErr(t, cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(4000, 200)}, 1, 0), dat.InvalidParameter, dat.NoSubtype)
		otherPZ, _ := e.b.CreatePZ()
		other, _ := lmr.Create(e.b, otherPZ, make([]byte, 64), dat.MemPrivAll, dat.VATypeVA)
		WantErr(t, cep.PostSend([]dat.LMRTriplet{other.Triplet(0, 8)}, 1, 0), dat.ProtectionViolation, dat.NoSubtype)
		ro, _ := lmr.Create(e.b, cli.PZ, make([]byte, 64), dat.MemPrivLocalRead, dat.VATypeVA)
		WantErr(t, cep.PostRecv([]dat.LMRTriplet{ro.Triplet(0, 8)}, 1, 0), dat.PrivilegesViolation, dat.PrivilegesWrite)
		WantErr(t, cep.PostRDMARead([]dat.LMRTriplet{ro.Triplet(0, 8)}, 1, srv.Buf.RMRTriplet(0, 8), 0), dat.PrivilegesViolation, dat.PrivilegesWrite)
		WantErr(t, cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, dat.CompletionUnsignalled), dat.InvalidParameter, dat.NoSubtype)
		WantErr(t, cep.PostSend(make([]dat.LMRTriplet, 50), 1, 0), dat.InvalidParameter, dat.NoSubtype)
		ExpectEmpty(t, cli.EVD)
	}},
	{"FlushOnDisconnect", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		for i := 0; i < 5; i++ {
			sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(i*64, 64)}, dat.DTOCookie(100+i), 0)
		}
		cep.Disconnect(dat.CloseAbrupt)
		for i := 0; i < 5; i++ {
			ExpectDTO(t, srv.EVD, dat.DTOCookie(100+i), dat.DTOErrFlushed)
		}
		waitConn(t, srv.EVD, dat.ConnectionEventDisconnected)
		waitConn(t, cli.EVD, dat.ConnectionEventDisconnected)
	}},
	{"SuppressedErrors", func(t *testing.T, e *env) {
		// COMPLETION_SUPPRESS hides successful completions only: a failed
		// DTO, and one flushed after the failure, still complete with
		// their cookies (DAT 2.0, dat_ep_post_rdma_write(3)).
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, srv.Buf.RMRTriplet(0, 8), dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
		syncSend(t, srv, cli, sep, cep)
		ExpectEmpty(t, cli.EVD)
		// A Read waits for the peer's answer, so its failure is its own
		// (a Write completes once sent; the peer's Terminate comes later).
		bad := srv.Buf.RMRTriplet(0, 8)
		bad.RMRContext ^= 0x5a // a key the peer never handed out
		if err := cep.PostRDMARead([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 2, bad, dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
		ev := Next(t, cli.EVD)
		if ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 2 || ev.DTO.Op != dat.DTORDMARead || ev.DTO.Status == dat.DTOSuccess {
			t.Fatalf("suppressed read from a bad key: %v %+v, want its failure", ev.Number, ev.DTO)
		}
		waitConnEvent(t, cli.EVD, cep)
		// Posted on the dead connection: flushed at once, and reported.
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 3, dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 3, dat.DTOErrFlushed)
		waitConnEvent(t, srv.EVD, sep)
	}},
	{"QueueWrap", func(t *testing.T, e *env) {
		// An EP queue's slots are used in posting order and retire as
		// their completions are handed out: fill a 3-deep queue, drain
		// it, and go round many times, with suppressed DTOs (which retire
		// without an event) in the mix and the receive side in step.
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, &dat.EPAttr{MaxRequestDTOs: 3, MaxRecvDTOs: 3})
		iov := []dat.LMRTriplet{cli.Buf.Triplet(0, 8)}
		remote := srv.Buf.RMRTriplet(0, 8)
		cookie := dat.DTOCookie(0)
		for round := 0; round < 40; round++ {
			var want []dat.DTOCookie
			suppressed := round%3 == 1
			for k := 0; ; k++ {
				cookie++
				flags := dat.CompletionDefault
				if suppressed && k == 0 {
					flags = dat.CompletionSuppress
				}
				err := cep.PostRDMAWrite(iov, cookie, remote, flags)
				if err != nil {
					WantErr(t, err, dat.InsufficientResources, dat.NoSubtype)
					// A suppressed DTO that has completed retires at once
					// and frees its slot.
					if k != 3 && (!suppressed || k != 4) {
						t.Fatalf("round %d: %d writes posted on a 3-deep queue: %v", round, k, err)
					}
					break
				}
				if flags == dat.CompletionDefault {
					want = append(want, cookie)
				}
			}
			if _, _, qIdle, _ := cep.Status(); qIdle && len(want) > 0 {
				t.Fatalf("round %d: request queue idle with %d completions not dequeued", round, len(want))
			}
			for _, c := range want {
				ExpectDTO(t, cli.EVD, c, dat.DTOSuccess)
			}
			if _, _, qIdle, _ := cep.Status(); !qIdle {
				t.Fatalf("round %d: request queue busy after its completions", round)
			}
			for k := 0; k < 3; k++ {
				if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64, 8)}, dat.DTOCookie(100+k), 0); err != nil {
					t.Fatalf("round %d: receive %d: %v", round, k, err)
				}
			}
			WantErr(t, sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64, 8)}, 9, 0), dat.InsufficientResources, dat.NoSubtype)
			for k := 0; k < 3; k++ {
				if err := cep.PostSend(iov, 0, dat.CompletionSuppress); err != nil {
					t.Fatalf("round %d: send %d: %v", round, k, err)
				}
				ExpectDTO(t, srv.EVD, dat.DTOCookie(100+k), dat.DTOSuccess)
			}
			if _, rIdle, _, _ := sep.Status(); !rIdle {
				t.Fatalf("round %d: receive queue busy after its completions", round)
			}
			// The peer may have received a send before the client's
			// provider completed it: the next round starts once the
			// client's queue has retired all three.
			waitFor(t, fmt.Sprintf("round %d: the request queue to retire its suppressed sends", round), func() bool {
				_, _, qIdle, _ := cep.Status()
				return qIdle
			})
		}
		ExpectEmpty(t, cli.EVD)
	}},
	{"SuppressedIdle", func(t *testing.T, e *env) {
		// Suppressed DTOs go unsignalled at the verbs level: posting many
		// more than the queue holds works without a dequeue (a signalled
		// one every half queue lets them retire), ep_get_status sees the
		// trailing ones retire, and a trailing one that fails keeps the
		// queue busy until its completion is dequeued.
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, &dat.EPAttr{MaxRequestDTOs: 8})
		iov := []dat.LMRTriplet{cli.Buf.Triplet(0, 8)}
		for i := 0; i < 101; i++ {
			// Each write from its own 8 bytes, reused only 16 posts
			// later: an unsignalled write may still be reading its source
			// when the next is posted, but not once 8 (the queue) more
			// have been, since a request retires only behind a signalled
			// completion, which the provider queues after reading it.
			off := (i % 16) * 8
			copy(cli.Buf.Bytes()[off:off+8], fmt.Sprintf("%08d", i))
			src := []dat.LMRTriplet{cli.Buf.Triplet(off, 8)}
			for {
				err := cep.PostRDMAWrite(src, dat.DTOCookie(i), srv.Buf.RMRTriplet(0, 8), dat.CompletionSuppress)
				if err == nil {
					break
				}
				WantErr(t, err, dat.InsufficientResources, dat.NoSubtype) // siw: still on the wire
				ExpectEmpty(t, cli.EVD)
			}
		}
		waitIdle(t, cep)
		ExpectEmpty(t, cli.EVD)
		syncSend(t, srv, cli, sep, cep)
		if got := string(srv.Buf.Bytes()[:8]); got != "00000100" {
			t.Fatalf("peer memory %q after the last write", got)
		}
		bad := srv.Buf.RMRTriplet(0, 8)
		bad.RMRContext ^= 0x5a
		if err := cep.PostRDMARead(iov, 7, bad, dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
		ev := Next(t, cli.EVD)
		if ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 7 || ev.DTO.Status == dat.DTOSuccess {
			t.Fatalf("suppressed read from a bad key: %v %+v, want its failure", ev.Number, ev.DTO)
		}
		waitIdle(t, cep)
	}},
	{"SendWithoutReceive", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, 0)
		// iWARP has no RNR retry: the stream breaks. The send itself may
		// complete first (siw completes a Send once it is on the wire).
		ev := Next(t, cli.EVD)
		if ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 1 {
			t.Fatalf("send into nothing: %v %v", ev.Number, ev.DTO.Status)
		}
		waitConn(t, cli.EVD, dat.ConnectionEventBroken)
		ev = waitConn(t, srv.EVD, dat.ConnectionEventBroken)
		if sep.State() != dat.EPStateDisconnected {
			t.Fatal(ev)
		}
	}},
	{"SolicitedWait", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		recv, _ := evd.Create(e.a, 16, nil, dat.EVDDTO)
		psp, qual, _ := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		defer psp.Free()
		sep, err := ep.Create(e.a, srv.PZ, recv, srv.EVD, srv.EVD, &dat.EPAttr{RecvCompletionFlags: dat.CompletionSolicitedWait})
		if err != nil {
			t.Fatal(err)
		}
		cep := cli.NewEP(t, nil)
		ConnectEPs(t, srv, cli, sep, cep, qual)
		ctx, cancel := deadline()
		defer cancel()
		_, _, err = recv.Wait(ctx, 2)
		WantErr(t, err, dat.InvalidState, dat.NoSubtype)
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 1, 0)
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64, 64)}, 2, 0)
		got := make(chan dat.Event, 1)
		go func() {
			ev, _, err := recv.Wait(ctx, 1)
			if err != nil {
				t.Error(err)
			}
			got <- ev
		}()
		waitWaiter(t, recv)
		cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, dat.CompletionSuppress)
		select {
		case ev := <-got:
			t.Fatalf("unsolicited send woke the waiter: %+v", ev)
		case <-time.After(30 * time.Millisecond):
		}
		cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 2, dat.CompletionSuppress|dat.CompletionSolicitedWait)
		if ev := <-got; ev.DTO.Cookie != 1 {
			t.Fatalf("first event %+v", ev.DTO)
		}
	}},
}

var rmrTests = []testCase{
	{"BindWriteUnbind", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
		sep, cep := Connect(t, srv, cli, nil)
		r, err := lmr.CreateRMR(srv.PZ)
		if err != nil {
			t.Fatal(err)
		}
		ctx, err := r.Bind(srv.Buf, srv.Buf.Triplet(1024, 512), dat.MemPrivRemoteWrite|dat.MemPrivRemoteRead, sep, 55, 0)
		if err != nil || ctx == 0 || ctx == dat.RMRContext(srv.Buf.RMRContext()) {
			t.Fatalf("bind: %v %#x", err, ctx)
		}
		ev := Expect(t, srv.EVD, dat.RMRBindCompletionEvent)
		if ev.RMRBind.RMR != dat.Handle(r) || ev.RMRBind.Cookie != 55 || ev.RMRBind.Status != dat.DTOSuccess {
			t.Fatalf("bind event %+v", ev.RMRBind)
		}
		WantErr(t, srv.Buf.Free(), dat.InvalidState, dat.InvalidStateLMRInUse)
		copy(cli.Buf.Bytes(), "through a window")
		remote := r.Triplet(16, 16)
		cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 16)}, 1, remote, 0)
		ExpectDTO(t, cli.EVD, 1, dat.DTOSuccess)
		syncSend(t, srv, cli, sep, cep)
		if string(srv.Buf.Bytes()[1040:1056]) != "through a window" {
			t.Fatal("window write")
		}
		q, _ := r.Query()
		if q.LMR != srv.Buf || q.RMRContext != ctx || q.Privileges != dat.MemPrivRemoteWrite|dat.MemPrivRemoteRead {
			t.Fatalf("rmr_query %+v", q)
		}
		if err := r.Unbind(sep, 56, 0); err != nil {
			t.Fatal(err)
		}
		Expect(t, srv.EVD, dat.RMRBindCompletionEvent)
		// The old context is dead: a write through it breaks the stream.
		// (Over siw the Write may complete before the peer's Terminate.)
		cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 16)}, 2, remote, 0)
		if ev := Next(t, cli.EVD); ev.DTO.Cookie != 2 {
			t.Fatalf("%+v", ev)
		}
		waitConn(t, cli.EVD, dat.ConnectionEventBroken)
		if err := srv.Buf.Free(); err != nil {
			t.Fatal(err)
		}
		r.Free()
	}},
	{"BindChecks", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
		sep, _ := Connect(t, srv, cli, nil)
		r, _ := lmr.CreateRMR(srv.PZ)
		ro, _ := lmr.Create(e.a, srv.PZ, make([]byte, 64), dat.MemPrivLocalRead, dat.VATypeVA)
		_, err := r.Bind(ro, ro.Triplet(0, 64), dat.MemPrivRemoteWrite, sep, 1, 0)
		WantErr(t, err, dat.PrivilegesViolation, dat.PrivilegesRDMAWrite)
		_, err = r.Bind(srv.Buf, srv.Buf.Triplet(8000, 500), dat.MemPrivRemoteRead, sep, 1, 0)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		pz2, _ := e.a.CreatePZ()
		r2, _ := lmr.CreateRMR(pz2)
		_, err = r2.Bind(srv.Buf, srv.Buf.Triplet(0, 64), dat.MemPrivRemoteRead, sep, 1, 0)
		WantErr(t, err, dat.ProtectionViolation, dat.NoSubtype)
		ExpectEmpty(t, srv.EVD)
		// Read into an RMR-named sink.
		ctx, err := r.Bind(srv.Buf, srv.Buf.Triplet(4096, 1024), dat.MemPrivRemoteWrite, sep, 2, dat.CompletionSuppress)
		if err != nil {
			t.Fatal(err)
		}
		copy(cli.Buf.Bytes()[100:], "pulled")
		if err := sep.PostRDMAReadToRMR(dat.RMRTriplet{VirtualAddress: srv.Buf.Addr() + 4096, SegmentLength: 6, RMRContext: ctx}, 3, cli.Buf.RMRTriplet(100, 6), 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, srv.EVD, 3, dat.DTOSuccess)
		if string(srv.Buf.Bytes()[4096:4102]) != "pulled" {
			t.Fatal("read to RMR")
		}
	}},
	{"SendWithInvalidate", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
		sep, cep := Connect(t, srv, cli, nil)
		r, _ := lmr.CreateRMR(srv.PZ)
		ctx, _ := r.Bind(srv.Buf, srv.Buf.Triplet(0, 1024), dat.MemPrivRemoteWrite, sep, 1, dat.CompletionSuppress)
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(2048, 64)}, 9, 0)
		cep.PostSendWithInvalidate([]dat.LMRTriplet{cli.Buf.Triplet(0, 4)}, 1, dat.CompletionSuppress, ctx)
		d := ExpectDTO(t, srv.EVD, 9, dat.DTOSuccess)
		if d.Op != dat.DTOReceiveWithInvalidate || d.RMRContext != ctx {
			t.Fatalf("%+v", d)
		}
		if q, _ := r.Query(); q.RMRContext != 0 {
			t.Fatal("RMR still valid after invalidate")
		}
	}},
}

var _ = evd.Async

// syncSend sends a small message from cep to sep and waits for it: after
// it, every RDMA Write cep posted before has been placed (RDMAP orders
// Writes before a later Send).
// waitIdle waits until ep_get_status says x's request queue is idle.
func waitIdle(t testing.TB, x *ep.EP) {
	t.Helper()
	waitFor(t, "an idle request queue", func() bool {
		_, _, qIdle, err := x.Status()
		if err != nil {
			t.Fatal(err)
		}
		return qIdle
	})
}

func syncSend(t testing.TB, srv, cli *Side, sep, cep *ep.EP) {
	t.Helper()
	n := len(srv.Buf.Bytes())
	if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(n-64, 64)}, 0xC0FFEE, 0); err != nil {
		t.Fatal(err)
	}
	if err := cep.PostSend(nil, 0xC0FFEE, dat.CompletionSuppress); err != nil {
		t.Fatal(err)
	}
	ExpectDTO(t, srv.EVD, 0xC0FFEE, dat.DTOSuccess)
}
