package srq_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/srq"
)

// listPosts returns n entries of 8-byte buffers of r's server buffer,
// 64 bytes apart from off on, with cookies from c0 on.
func listPosts(r *dattest.SRQRig, n, off int, c0 dat.DTOCookie) []dat.RecvPost {
	posts := make([]dat.RecvPost, n)
	for i := range posts {
		posts[i] = dat.RecvPost{IOV: []dat.LMRTriplet{r.Srv.Buf.Triplet(off+64*i, 8)}, Cookie: c0 + dat.DTOCookie(i)}
	}
	return posts
}

// A list longer than one chunk goes down whole and its buffers are taken
// in posting order, each completing with its own cookie and data.
func TestPostRecvListPostsAll(t *testing.T) {
	a, b := memPair(t)
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 128}, Conns: 1})
	posts := listPosts(r, 70, 0, 100)
	if n, err := r.SRQ.PostRecvList(posts); n != len(posts) || err != nil {
		t.Fatalf("PostRecvList = %d, %v; want %d, nil", n, err, len(posts))
	}
	if n, err := r.SRQ.PostRecvList(nil); n != 0 || err != nil {
		t.Fatalf("empty PostRecvList = %d, %v", n, err)
	}
	if p := r.WaitAvailable(t, len(posts)); p.Outstanding != len(posts) {
		t.Fatalf("query %+v", p)
	}
	src, dst := r.Cli.Buf.Bytes(), r.Srv.Buf.Bytes()
	for i := range posts {
		copy(src[8*i:], []byte{byte(i), 1, 2, 3, 4, 5, 6, byte(i)})
		r.Send(t, 0, 8*i, 8)
	}
	for i := range posts {
		if d := dattest.ExpectDTO(t, r.RecvEVDs[0], dat.DTOCookie(100+i), dat.DTOSuccess); d.Length != 8 {
			t.Fatalf("completion %+v", d)
		}
		if !bytes.Equal(dst[64*i:64*i+8], src[8*i:8*i+8]) {
			t.Fatalf("buffer %d holds %x", i, dst[64*i:64*i+8])
		}
	}
}

// Bad input: the entries before the bad one are posted, the bad one and
// those after it are not, and the error is dat_srq_post_recv's for it.
func TestPostRecvListPartial(t *testing.T) {
	a, b := memPair(t)
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 64}, Conns: 1})
	good := r.Srv.Buf.Triplet(0, 8)
	outside := good
	outside.SegmentLength = 1 << 30
	unknown := good
	unknown.LMRContext ^= 0x5a5a5a
	for _, c := range []struct {
		name string
		bad  []dat.LMRTriplet
		code dat.Code
		sub  dat.Subtype
	}{
		{"too many segments", []dat.LMRTriplet{good, good}, dat.InvalidParameter, dat.InvalidArg2},
		{"segment outside its LMR", []dat.LMRTriplet{outside}, dat.InvalidParameter, dat.NoSubtype},
		{"unknown LMR context", []dat.LMRTriplet{unknown}, dat.PrivilegesViolation, dat.NoSubtype},
	} {
		for _, at := range []int{0, 5, 40} { // first chunk, inside it, in the second
			before, _ := r.SRQ.Query()
			posts := listPosts(r, 45, 0, 0)
			posts[at].IOV = c.bad
			n, err := r.SRQ.PostRecvList(posts)
			if n != at {
				t.Fatalf("%s at %d: posted %d", c.name, at, n)
			}
			if err == nil {
				t.Fatalf("%s at %d: no error", c.name, at)
			}
			var de *dat.Error
			if !errors.As(err, &de) || de.Code != c.code {
				t.Fatalf("%s at %d: %v, want %v", c.name, at, err, c.code)
			}
			if c.sub != dat.NoSubtype && de.Sub != c.sub {
				t.Fatalf("%s at %d: %v, want subtype %v", c.name, at, err, c.sub)
			}
			after, _ := r.SRQ.Query()
			if after.Available != before.Available+at || after.Outstanding != before.Outstanding+at {
				t.Fatalf("%s at %d: %+v then %+v", c.name, at, before, after)
			}
			drain(t, r, at)
		}
	}
	// Full: the SRQ takes what fits, the rest is refused with
	// DAT_INSUFFICIENT_RESOURCES and can be posted once buffers complete.
	posts := listPosts(r, 70, 0, 0)
	n, err := r.SRQ.PostRecvList(posts)
	if n != 64 {
		t.Fatalf("posted %d into an SRQ of 64", n)
	}
	dattest.WantErr(t, err, dat.InsufficientResources, dat.ResourceSRQ)
	drain(t, r, 6)
	if n, err := r.SRQ.PostRecvList(posts[64:]); n != 6 || err != nil {
		t.Fatalf("rest of the list: %d, %v", n, err)
	}
	drain(t, r, 64)
}

// drain takes n posted buffers with Sends and dequeues their completions.
func drain(t *testing.T, r *dattest.SRQRig, n int) {
	t.Helper()
	for range n {
		r.Send(t, 0, 0, 8)
	}
	for range n {
		ev, ok := dattest.WaitEventFor(t, r.RecvEVDs[0], dattest.DefaultTimeout)
		if !ok || ev.Number != dat.DTOCompletionEvent || ev.DTO.Status != dat.DTOSuccess {
			t.Fatalf("drain: %+v %v", ev, ok)
		}
	}
}

// A freed SRQ refuses the list with DAT_INVALID_HANDLE and posts nothing.
func TestPostRecvListFreed(t *testing.T) {
	a, b := memPair(t)
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8}})
	if err := r.SRQ.Free(); err != nil {
		t.Fatal(err)
	}
	n, err := r.SRQ.PostRecvList(listPosts(r, 3, 0, 0))
	if n != 0 {
		t.Fatalf("freed SRQ posted %d", n)
	}
	dattest.WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleSRQ)
}

// The list post allocates nothing, accepted or refused.
func TestPostRecvListAllocs(t *testing.T) {
	a, b := memPair(t)
	const per, runs = 40, 20
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: per * (runs + 1)}})
	posts := listPosts(r, per, 0, 0)
	if n := testing.AllocsPerRun(runs, func() {
		if n, err := r.SRQ.PostRecvList(posts); n != per || err != nil {
			t.Fatalf("PostRecvList = %d, %v", n, err)
		}
	}); n != 0 {
		t.Fatalf("PostRecvList allocates %v times", n)
	}
	if n := testing.AllocsPerRun(runs, func() {
		if n, err := r.SRQ.PostRecvList(posts); n != 0 || err == nil {
			t.Fatalf("PostRecvList to a full SRQ = %d, %v", n, err)
		}
	}); n != 0 {
		t.Fatalf("refused PostRecvList allocates %v times", n)
	}
}
