package dattest

import (
	"bytes"
	"testing"

	"github.com/godapl/godapl/dat"
)

// sendList checks ep.EP.PostSendList on the harness's provider: a list
// with a faulty segment in its second chunk posts the Sends before it,
// in order, and returns ep_post_send's error for it; the rest goes after
// it. Over a provider that does not check SGLs (rdmacore, the plain
// provider) DAT checks each segment of the list itself.
func sendList(t *testing.T, e *env) {
	const n, bad = 40, 35
	srv, cli := NewSide(t, e.a, 8192), NewSide(t, e.b, 8192)
	sep, cep := Connect(t, srv, cli, nil)
	for i := range n {
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64*i, 64)}, dat.DTOCookie(1000+i), 0); err != nil {
			t.Fatal(err)
		}
	}
	src := cli.Buf.Bytes()
	for i := range 8 * n {
		src[i] = byte(i*5 + 1)
	}
	posts := make([]dat.SendPost, n)
	for i := range posts {
		posts[i] = dat.SendPost{IOV: []dat.LMRTriplet{cli.Buf.Triplet(8*i, 8)}, Cookie: dat.DTOCookie(i)}
	}
	f := newFaultyTriplets(t, cli)
	posts[bad].IOV = []dat.LMRTriplet{f.other}
	k, err := cep.PostSendList(posts)
	if k != bad {
		t.Fatalf("posted %d before the fault at %d (%v)", k, bad, err)
	}
	WantErr(t, err, dat.ProtectionViolation, dat.ProtectionRead)
	if k, err := cep.PostSendList(posts[bad+1:]); k != n-bad-1 || err != nil {
		t.Fatalf("the rest: %d, %v", k, err)
	}
	dst := srv.Buf.Bytes()
	for i := range n {
		if i == bad {
			continue
		}
		ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
		r := i
		if i > bad {
			r--
		}
		d := ExpectDTO(t, srv.EVD, dat.DTOCookie(1000+r), dat.DTOSuccess)
		if d.Length != 8 || !bytes.Equal(dst[64*r:64*r+8], src[8*i:8*i+8]) {
			t.Fatalf("Send %d: receive %d %+v holds %x", i, r, d, dst[64*r:64*r+8])
		}
	}
}
