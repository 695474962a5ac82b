package srq_test

// Conformance pins from the audit of dat_srq_post_recv(3DAT) against the
// code (docs/CONFORMANCE.md): what the dattest SRQ suite and the
// property test leave unpinned.

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/srq"
	"github.com/godapl/godapl/verbs/verbstest"
)

// memPair opens a server and a client IA on one fresh mem fabric, and
// checks that the test leaves no goroutine behind.
func memPair(t *testing.T) (*ia.IA, *ia.IA) {
	t.Helper()
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 2)
	return ias[0], ias[1]
}

// The cookie is the consumer's: 0 (NULL) and the same value on several
// buffers come back as given. The vector is read during PostRecv only:
// the consumer may change it as soon as the call returns.
func TestConformanceCookiesAndVector(t *testing.T) {
	a, b := memPair(t)
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 4}, Conns: 1})
	src, dst := r.Cli.Buf.Bytes(), r.Srv.Buf.Bytes()
	for i := range src[:8] {
		src[i] = byte(i + 1)
	}
	for i := range dst {
		dst[i] = 0xEE
	}
	iov := []dat.LMRTriplet{r.Srv.Buf.Triplet(0, 8)}
	for _, c := range []struct {
		off    int
		cookie dat.DTOCookie
	}{{0, 0}, {512, 0}, {1024, 7}} {
		iov[0] = r.Srv.Buf.Triplet(c.off, 8) // rewrites the vector just posted
		if err := r.SRQ.PostRecv(iov, c.cookie); err != nil {
			t.Fatal(err)
		}
	}
	iov[0] = r.Srv.Buf.Triplet(2048, 8)
	for range 3 {
		r.Send(t, 0, 0, 8)
	}
	for _, want := range []dat.DTOCookie{0, 0, 7} {
		if d := dattest.ExpectDTO(t, r.RecvEVDs[0], want, dat.DTOSuccess); d.Length != 8 {
			t.Fatalf("completion %+v", d)
		}
	}
	for _, off := range []int{0, 512, 1024} {
		if !bytes.Equal(dst[off:off+8], src[:8]) {
			t.Fatalf("buffer at %d not filled", off)
		}
	}
	if dst[2048] != 0xEE {
		t.Fatal("a buffer was read from the vector after PostRecv returned")
	}
}

// An SRQ EP whose recv flag is EVD_THRESHOLD completes every receive
// signalled, and the waiter's threshold decides when it wakes. In a
// synctest bubble, the wait below the threshold times out on the bubble's
// clock once everything else has blocked, and a goroutine left blocked is
// a deadlock (the leak check of memPair).
func TestConformanceEVDThreshold(t *testing.T) { synctest.Test(t, testEVDThreshold) }

func testEVDThreshold(t *testing.T) {
	ias := dattest.OpenMem(t, 2)
	a, b := ias[0], ias[1]
	r := dattest.NewSRQRig(t, a, b, dattest.SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 4}})
	r.Connect(t, &dat.EPAttr{RecvCompletionFlags: dat.CompletionEVDThreshold})
	for i := range 2 {
		if err := r.SRQ.PostRecv(nil, dat.DTOCookie(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.Send(t, 0, 0, 0)
	r.WaitAvailable(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, _, err := r.RecvEVDs[0].Wait(ctx, 2)
	cancel()
	dattest.WantErr(t, err, dat.TimeoutExpired, dat.NoSubtype) // one completion: below the threshold
	r.Send(t, 0, 0, 0)
	ctx, cancel = context.WithTimeout(context.Background(), dattest.DefaultTimeout)
	defer cancel()
	ev, _, err := r.RecvEVDs[0].Wait(ctx, 2)
	if err != nil || ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 0 {
		t.Fatalf("wait for 2: %+v %v", ev, err)
	}
	dattest.ExpectDTO(t, r.RecvEVDs[0], 1, dat.DTOSuccess)
}
