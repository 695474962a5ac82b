package ep_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/verbs/verbstest"
)

// listPair connects two EPs over the in-memory provider with 8 KiB
// buffers and posts n 64-byte receives on the server.
func listPair(t *testing.T, n int) (srv, cli *dattest.Side, sep, cep *ep.EP) {
	t.Helper()
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 2)
	srv, cli = dattest.NewSide(t, ias[0], 8192), dattest.NewSide(t, ias[1], 8192)
	sep, cep = dattest.Connect(t, srv, cli, nil)
	for i := range n {
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64*i, 64)}, dat.DTOCookie(1000+i), 0); err != nil {
			t.Fatalf("post_recv %d: %v", i, err)
		}
	}
	return srv, cli, sep, cep
}

// sendPosts returns n Sends of 8 bytes of cli's buffer, each its own, with
// cookies from c0 on.
func sendPosts(cli *dattest.Side, n int, c0 dat.DTOCookie) []dat.SendPost {
	posts := make([]dat.SendPost, n)
	for i := range posts {
		posts[i] = dat.SendPost{IOV: []dat.LMRTriplet{cli.Buf.Triplet(8*i, 8)}, Cookie: c0 + dat.DTOCookie(i)}
	}
	return posts
}

// A list longer than one chunk, with entries PostDTO's way does not take
// (two segments, a suppressed completion) among the others, goes down in
// order: the receiver takes the messages in list order, and each Send
// that asked for one completes with its own cookie.
func TestPostSendListPostsAll(t *testing.T) {
	const n = 45
	srv, cli, _, cep := listPair(t, n)
	src := cli.Buf.Bytes()
	for i := range 8 * n {
		src[i] = byte(i*7 + 3)
	}
	posts := sendPosts(cli, n, 100)
	posts[3].IOV = []dat.LMRTriplet{cli.Buf.Triplet(24, 4), cli.Buf.Triplet(28, 4)}
	posts[7].Flags = dat.CompletionSuppress
	posts[33].Flags = dat.CompletionSolicitedWait
	if k, err := cep.PostSendList(posts); k != n || err != nil {
		t.Fatalf("PostSendList = %d, %v; want %d, nil", k, err, n)
	}
	if k, err := cep.PostSendList(nil); k != 0 || err != nil {
		t.Fatalf("empty PostSendList = %d, %v", k, err)
	}
	dst := srv.Buf.Bytes()
	for i := range n {
		d := dattest.ExpectDTO(t, srv.EVD, dat.DTOCookie(1000+i), dat.DTOSuccess)
		if d.Length != 8 || !bytes.Equal(dst[64*i:64*i+8], src[8*i:8*i+8]) {
			t.Fatalf("receive %d: %+v holds %x, want %x", i, d, dst[64*i:64*i+8], src[8*i:8*i+8])
		}
	}
	for i := range n {
		if i == 7 {
			continue
		}
		dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(100+i), dat.DTOSuccess)
	}
	dattest.ExpectEmpty(t, cli.EVD)
}

// Bad input: the Sends before the bad one are posted, the bad one and
// those after it are not, and the error is dat_ep_post_send's for it.
func TestPostSendListPartial(t *testing.T) {
	good := func(cli *dattest.Side) dat.LMRTriplet { return cli.Buf.Triplet(0, 8) }
	for _, c := range []struct {
		name string
		bad  func(cli *dattest.Side) []dat.LMRTriplet
	}{
		{"segment outside its LMR", func(cli *dattest.Side) []dat.LMRTriplet {
			g := good(cli)
			g.SegmentLength = 1 << 30
			return []dat.LMRTriplet{g}
		}},
		{"unknown LMR context", func(cli *dattest.Side) []dat.LMRTriplet {
			g := good(cli)
			g.LMRContext ^= 0x5a5a5a
			return []dat.LMRTriplet{g}
		}},
	} {
		for _, at := range []int{0, 5, 40} { // first chunk, inside it, in the second
			srv, cli, _, cep := listPair(t, 45)
			want := cep.PostSend(c.bad(cli), 1, 0)
			var wantErr *dat.Error
			if !errors.As(want, &wantErr) {
				t.Fatalf("%s: PostSend = %v, want a DAT error", c.name, want)
			}
			posts := sendPosts(cli, 45, 0)
			posts[at].IOV = c.bad(cli)
			k, err := cep.PostSendList(posts)
			var de *dat.Error
			if k != at || !errors.As(err, &de) || de.Code != wantErr.Code || de.Sub != wantErr.Sub {
				t.Fatalf("%s at %d: %d, %v; want %d, %v", c.name, at, k, err, at, want)
			}
			for i := range at {
				dattest.ExpectDTO(t, srv.EVD, dat.DTOCookie(1000+i), dat.DTOSuccess)
				dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
			}
			// The rest goes down once the bad entry is left out.
			if k, err := cep.PostSendList(posts[at+1:]); k != 44-at || err != nil {
				t.Fatalf("%s at %d: the rest: %d, %v", c.name, at, k, err)
			}
			for i := at + 1; i < 45; i++ {
				dattest.ExpectDTO(t, srv.EVD, dat.DTOCookie(1000+i-1), dat.DTOSuccess)
				dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
			}
		}
	}
}

// A list that the send queue cannot hold is posted as far as it fits and
// refused for the rest with DAT_INSUFFICIENT_RESOURCES.
func TestPostSendListFull(t *testing.T) {
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 2)
	srv, cli := dattest.NewSide(t, ias[0], 8192), dattest.NewSide(t, ias[1], 8192)
	attr := &dat.EPAttr{MaxRecvDTOs: 64, MaxRequestDTOs: 8, MaxRecvIOV: 1, MaxRequestIOV: 2}
	sep, cep := dattest.Connect(t, srv, cli, attr)
	for i := range 64 {
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64*i, 64)}, dat.DTOCookie(1000+i), 0); err != nil {
			t.Fatal(err)
		}
	}
	posts := sendPosts(cli, 12, 0)
	k, err := cep.PostSendList(posts)
	if k != 8 {
		t.Fatalf("posted %d into a queue of 8", k)
	}
	dattest.WantErr(t, err, dat.InsufficientResources, dat.ResourceTEP)
	for i := range 8 {
		dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
	}
	if k, err := cep.PostSendList(posts[8:]); k != 4 || err != nil {
		t.Fatalf("the rest: %d, %v", k, err)
	}
	for i := 8; i < 12; i++ {
		dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
	}
}

// A list allocates nothing once the EP has posted one.
func TestPostSendListAllocs(t *testing.T) {
	srv, cli, sep, cep := listPair(t, 0)
	posts := sendPosts(cli, 4, 0)
	riov := []dat.LMRTriplet{srv.Buf.Triplet(0, 64)}
	var ev dat.Event
	round := func() {
		for range 4 {
			if err := sep.PostRecv(riov, 1, 0); err != nil {
				t.Fatal(err)
			}
		}
		if k, err := cep.PostSendList(posts); k != 4 || err != nil {
			t.Fatal(k, err)
		}
		for range 4 {
			if err := srv.EVD.DequeueInto(&ev); err != nil {
				t.Fatal(err)
			}
			if err := cli.EVD.DequeueInto(&ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("a list of 4 allocates %v times", n)
	}
}
