package srq_test

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/srq"
)

// Receives of two connections that share the SRQ and complete to one EVD,
// interleaved: each completion names the EP whose connection took the
// buffer and the cookie of the buffer, in posting order, though the EVD
// takes the SRQ's completions after the first without the owner's lookup
// and keeps the last EP it found.
func TestSharedEVDNamesEachReceivesEP(t *testing.T) {
	a, b := memPair(t)
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 64}, Conns: 2})
	const n = 24
	if k, err := r.SRQ.PostRecvList(listPosts(r, n, 0, 500)); k != n || err != nil {
		t.Fatalf("PostRecvList = %d, %v", k, err)
	}
	r.WaitAvailable(t, n)
	// Runs of one connection, then switches, each receive taken before
	// the next send: every take finds one completion.
	conns := []int{0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0}
	for i, c := range conns {
		r.Send(t, c, 0, 8)
		d := dattest.ExpectDTO(t, r.RecvEVDs[0], dat.DTOCookie(500+i), dat.DTOSuccess)
		if d.EP != r.Conns[c].Srv || d.Length != 8 || d.Op != dat.DTOReceive {
			t.Fatalf("receive %d on connection %d: %+v, want the EP %v", i, c, d, r.Conns[c].Srv)
		}
	}
	if p, _ := r.SRQ.Query(); p.Outstanding != 0 {
		t.Fatalf("query %+v: slots still held", p)
	}
}
