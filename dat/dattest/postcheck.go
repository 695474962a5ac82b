package dattest

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/srq"
)

// postCheckTests pin the DAT code of every local triplet fault of a post,
// whoever finds it: DAT itself, or a provider that checks SGLs at post time
// (fastpath.SGLChecker), to which DAT then leaves the checks. The codes are
// the dat_ep_post_* man pages': an unknown context or a missing privilege
// DAT_PRIVILEGES_VIOLATION, an LMR of another PZ DAT_PROTECTION_VIOLATION
// (with the read or write subtype of the access), a segment outside its
// LMR DAT_INVALID_PARAMETER/ARG3; the first faulty segment decides, and
// a triplet fault comes before a length error or a full queue.
var postCheckTests = []testCase{
	{"Faults", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, &dat.EPAttr{MaxRDMAReadIOV: 2})
		f, sf := newFaultyTriplets(t, cli), newFaultyTriplets(t, srv)
		remote := srv.Buf.RMRTriplet(0, 4096)

		send := func(iov ...dat.LMRTriplet) error { return cep.PostSend(iov, 1, 0) }
		write := func(iov ...dat.LMRTriplet) error { return cep.PostRDMAWrite(iov, 1, remote, 0) }
		read := func(iov ...dat.LMRTriplet) error { return cep.PostRDMARead(iov, 1, remote, 0) }
		recv := func(iov ...dat.LMRTriplet) error { return sep.PostRecv(iov, 1, 0) }
		cases := []struct {
			what string
			err  error
			code dat.Code
			sub  dat.Subtype
		}{
			{"send, unknown context", send(f.unknown), dat.PrivilegesViolation, dat.PrivilegesRead},
			{"write, unknown context", write(f.unknown), dat.PrivilegesViolation, dat.PrivilegesRead},
			{"read, unknown context", read(f.unknown), dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"recv, unknown context", recv(sf.unknown), dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"send, other PZ", send(f.other), dat.ProtectionViolation, dat.ProtectionRead},
			{"write, other PZ", write(f.other), dat.ProtectionViolation, dat.ProtectionRead},
			{"read, other PZ", read(f.other), dat.ProtectionViolation, dat.ProtectionWrite},
			{"recv, other PZ", recv(sf.other), dat.ProtectionViolation, dat.ProtectionWrite},
			{"read into read-only", read(f.readOnly), dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"recv into read-only", recv(sf.readOnly), dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"send, past the end", send(f.past), dat.InvalidParameter, dat.InvalidArg3},
			{"write, before the start", write(f.before), dat.InvalidParameter, dat.InvalidArg3},
			{"send, address wraps", send(f.wraps), dat.InvalidParameter, dat.InvalidArg3},
			{"recv, past the end", recv(sf.past), dat.InvalidParameter, dat.InvalidArg3},
			{"second segment", send(f.good, f.other), dat.ProtectionViolation, dat.ProtectionRead},
			{"first of two faults", send(f.past, f.unknown), dat.InvalidParameter, dat.InvalidArg3},
			{"split read, second segment", read(f.good, f.readOnly), dat.PrivilegesViolation, dat.PrivilegesWrite},
			// A triplet fault before a length error (the remote range is
			// shorter than the local one).
			{"fault and length", cep.PostRDMAWrite([]dat.LMRTriplet{f.unknown}, 1, srv.Buf.RMRTriplet(0, 4), 0), dat.PrivilegesViolation, dat.PrivilegesRead},
			{"length alone", cep.PostRDMAWrite([]dat.LMRTriplet{f.good}, 1, srv.Buf.RMRTriplet(0, 4), 0), dat.LengthError, dat.NoSubtype},
		}
		for _, c := range cases {
			t.Run(c.what, func(t *testing.T) { WantErr(t, c.err, c.code, c.sub) })
		}
		// A zero-length segment names nothing, whatever its context.
		empty := f.unknown
		empty.SegmentLength = 0
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 1, 0); err != nil {
			t.Fatal(err)
		}
		if err := send(empty, f.good); err != nil {
			t.Fatalf("send with an empty segment of no LMR: %v", err)
		}
		ExpectDTO(t, srv.EVD, 1, dat.DTOSuccess)
		ExpectDTO(t, cli.EVD, 1, dat.DTOSuccess)
		ExpectEmpty(t, cli.EVD)
		ExpectEmpty(t, srv.EVD)
	}},
	{"FullQueue", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		_, cep := Connect(t, srv, cli, &dat.EPAttr{MaxRequestDTOs: 2})
		good, remote := cli.Buf.Triplet(0, 8), srv.Buf.RMRTriplet(0, 8)
		for i := 0; i < 2; i++ {
			if err := cep.PostRDMAWrite([]dat.LMRTriplet{good}, dat.DTOCookie(i), remote, 0); err != nil {
				t.Fatal(err)
			}
		}
		// Nothing dequeued: the queue stays full.
		WantErr(t, cep.PostRDMAWrite([]dat.LMRTriplet{good}, 9, remote, 0), dat.InsufficientResources, dat.ResourceTEP)
		bad := cli.Buf.Triplet(4090, 8)
		WantErr(t, cep.PostRDMAWrite([]dat.LMRTriplet{bad}, 9, remote, 0), dat.InvalidParameter, dat.InvalidArg3)
		for i := 0; i < 2; i++ {
			ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
		}
		ExpectEmpty(t, cli.EVD)
	}},
	// LMRs whose privileges verbs cannot enforce: verbs always grants local
	// read, and local write with remote write. While one lives in the EP's
	// PZ, DAT checks every post itself.
	{"LoosePrivileges", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		remote := srv.Buf.RMRTriplet(0, 64)
		noRead, err := lmr.Create(e.b, cli.PZ, make([]byte, 64), dat.MemPrivLocalWrite, dat.VATypeVA)
		if err != nil {
			t.Fatal(err)
		}
		WantErr(t, cep.PostSend([]dat.LMRTriplet{noRead.Triplet(0, 8)}, 1, 0), dat.PrivilegesViolation, dat.PrivilegesRead)
		WantErr(t, cep.PostRDMAWrite([]dat.LMRTriplet{noRead.Triplet(0, 8)}, 1, remote, 0), dat.PrivilegesViolation, dat.PrivilegesRead)
		remoteOnly, err := lmr.Create(e.a, srv.PZ, make([]byte, 64), dat.MemPrivLocalRead|dat.MemPrivRemoteWrite, dat.VATypeVA)
		if err != nil {
			t.Fatal(err)
		}
		WantErr(t, sep.PostRecv([]dat.LMRTriplet{remoteOnly.Triplet(0, 8)}, 1, 0), dat.PrivilegesViolation, dat.PrivilegesWrite)
		// The others of the PZ still work, and still are checked.
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 2, remote, 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 2, dat.DTOSuccess)
		WantErr(t, cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(4090, 8)}, 1, 0), dat.InvalidParameter, dat.InvalidArg3)
		// Freed, they no longer count; a new one does again.
		if err := noRead.Free(); err != nil {
			t.Fatal(err)
		}
		if err := remoteOnly.Free(); err != nil {
			t.Fatal(err)
		}
		WantErr(t, cep.PostSend([]dat.LMRTriplet{noRead.Triplet(0, 8)}, 1, 0), dat.PrivilegesViolation, dat.PrivilegesRead)
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 3, remote, 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 3, dat.DTOSuccess)
		noRead2, err := lmr.Create(e.b, cli.PZ, make([]byte, 64), dat.MemPrivLocalWrite|dat.MemPrivRemoteRead, dat.VATypeVA)
		if err != nil {
			t.Fatal(err)
		}
		WantErr(t, cep.PostRDMAWrite([]dat.LMRTriplet{noRead2.Triplet(0, 8)}, 1, remote, 0), dat.PrivilegesViolation, dat.PrivilegesRead)
		ExpectEmpty(t, cli.EVD)
		ExpectEmpty(t, srv.EVD)
	}},
	// srq_post_recv makes the checks of an EP's receive, and leaves them
	// to a provider whose SRQ checks SGLs in the same way; its codes do
	// not depend on who checks, and a refused receive takes nothing.
	{"SRQ", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		q, err := srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: 2, MaxRecvIOV: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Free()
		f := newFaultyTriplets(t, s)
		post := func(iov ...dat.LMRTriplet) error { return q.PostRecv(iov, 1) }
		wantIdle := func(t *testing.T) {
			t.Helper()
			if p, err := q.Query(); err != nil || p.Available != 0 || p.Outstanding != 0 {
				t.Fatalf("a refused receive changed the SRQ: %+v %v", p, err)
			}
		}
		cases := []struct {
			what string
			iov  []dat.LMRTriplet
			code dat.Code
			sub  dat.Subtype
		}{
			{"unknown context", []dat.LMRTriplet{f.unknown}, dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"other PZ", []dat.LMRTriplet{f.other}, dat.ProtectionViolation, dat.ProtectionWrite},
			{"read-only", []dat.LMRTriplet{f.readOnly}, dat.PrivilegesViolation, dat.PrivilegesWrite},
			{"past the end", []dat.LMRTriplet{f.past}, dat.InvalidParameter, dat.InvalidArg3},
			{"before the start", []dat.LMRTriplet{f.before}, dat.InvalidParameter, dat.InvalidArg3},
			{"address wraps", []dat.LMRTriplet{f.wraps}, dat.InvalidParameter, dat.InvalidArg3},
			{"second segment", []dat.LMRTriplet{f.good, f.other}, dat.ProtectionViolation, dat.ProtectionWrite},
			{"first of two faults", []dat.LMRTriplet{f.past, f.unknown}, dat.InvalidParameter, dat.InvalidArg3},
		}
		for _, c := range cases {
			t.Run(c.what, func(t *testing.T) {
				WantErr(t, post(c.iov...), c.code, c.sub)
				wantIdle(t)
			})
		}
		// An LMR whose privileges verbs cannot enforce (local write comes
		// with remote write there): DAT checks every receive itself while
		// it lives, and refuses it.
		loose, err := lmr.Create(e.a, s.PZ, make([]byte, 64), dat.MemPrivLocalRead|dat.MemPrivRemoteWrite, dat.VATypeVA)
		if err != nil {
			t.Fatal(err)
		}
		WantErr(t, post(loose.Triplet(0, 8)), dat.PrivilegesViolation, dat.PrivilegesWrite)
		WantErr(t, post(f.past), dat.InvalidParameter, dat.InvalidArg3)
		wantIdle(t)
		if err := loose.Free(); err != nil {
			t.Fatal(err)
		}
		WantErr(t, post(loose.Triplet(0, 8)), dat.PrivilegesViolation, dat.PrivilegesWrite)
		// A zero-length segment names nothing, whatever its context.
		empty := f.unknown
		empty.SegmentLength = 0
		if err := post(empty, f.good); err != nil {
			t.Fatalf("receive with an empty segment of no LMR: %v", err)
		}
		if err := post(f.good); err != nil {
			t.Fatal(err)
		}
		// Full: DAT_INSUFFICIENT_RESOURCES, after any triplet fault.
		WantErr(t, post(f.good), dat.InsufficientResources, dat.ResourceSRQ)
		WantErr(t, post(f.unknown), dat.PrivilegesViolation, dat.PrivilegesWrite)
		WantErr(t, post(f.past), dat.InvalidParameter, dat.InvalidArg3)
		if p, err := q.Query(); err != nil || p.Available != 2 || p.Outstanding != 2 {
			t.Fatalf("query %+v %v", p, err)
		}
	}},
}

// faultyTriplets are local triplets around a Side's 4 KiB buffer, each
// but good with one fault a post must refuse: a context that names no
// LMR, an LMR of another PZ, an LMR without local write (verbs enforces
// it: it grants no remote write), a segment past the buffer's end, one
// that starts before it, and one whose address wraps.
type faultyTriplets struct {
	good, unknown, other, readOnly, past, before, wraps dat.LMRTriplet
}

// newFaultyTriplets creates the LMRs they need on s's IA; they live
// until the IA closes.
func newFaultyTriplets(t *testing.T, s *Side) faultyTriplets {
	t.Helper()
	f := faultyTriplets{good: s.Buf.Triplet(0, 8)}
	f.unknown = f.good
	f.unknown.LMRContext ^= 0x55
	otherPZ, err := s.IA.CreatePZ()
	if err != nil {
		t.Fatal(err)
	}
	other, err := lmr.Create(s.IA, otherPZ, make([]byte, 64), dat.MemPrivAll, dat.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := lmr.Create(s.IA, s.PZ, make([]byte, 64), dat.MemPrivLocalRead|dat.MemPrivRemoteRead, dat.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	f.other, f.readOnly = other.Triplet(0, 8), ro.Triplet(0, 8)
	f.past, f.before, f.wraps = s.Buf.Triplet(4000, 200), f.good, f.good
	f.before.VirtualAddress--
	f.wraps.VirtualAddress, f.wraps.SegmentLength = ^dat.VAddr(0)-3, 8
	return f
}
