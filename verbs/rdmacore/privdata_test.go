//go:build rdmacore

package rdmacore

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

func TestPrivLimit(t *testing.T) {
	for _, tc := range []struct {
		tr   verbs.Transport
		kind privKind
		want int
	}{
		{verbs.TransportRoCE, privRequest, 56},
		{verbs.TransportRoCE, privReply, 196},
		{verbs.TransportIB, privReject, 148},
		{verbs.TransportIWARP, privRequest, 248},
		{verbs.TransportIWARP, privReject, 248},
	} {
		if got := privLimit(tc.tr, tc.kind); got != tc.want {
			t.Errorf("privLimit(%v, %s) = %d, want %d", tc.tr, privKindNames[tc.kind], got, tc.want)
		}
	}
}

// padded says whether got is want as the peer of a device of transport
// tr receives it: exactly on iWARP, zero-padded to size on IB and RoCE.
func padded(tr verbs.Transport, got, want []byte, size int) bool {
	if tr == verbs.TransportIWARP {
		return bytes.Equal(got, want)
	}
	return len(got) == size && bytes.HasPrefix(got, want) && bytes.Count(got[len(want):], []byte{0}) == size-len(want)
}

// TestPrivData: private data goes through rdma_cm raw, and what each side
// gets is the sender's bytes, zero-padded to the CM's field on IB and
// RoCE, at every size up to each message's limit; one byte more is
// refused with ErrInvalidArgument and leaves the request answerable.
func TestPrivData(t *testing.T) {
	name, addr := testDevice(t)
	a, b := openPair(t, name)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	tr := a.Query().Transport
	reqMax, repMax, rejMax := privLimit(tr, privRequest), privLimit(tr, privReply), privLimit(tr, privReject)
	if got := a.Query().MaxPrivData; got != reqMax {
		t.Errorf("MaxPrivData = %d, want the request's %d", got, reqMax)
	}
	const timeout = 10 * time.Second
	for _, n := range []int{0, 1, reqMax} {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		lis, err := a.Listen(addr+":0", 4)
		if err != nil {
			t.Fatal(err)
		}
		sa, sb := verbstest.NewSide(t, a, verbstest.PairAttr{}), verbstest.NewSide(t, b, verbstest.PairAttr{})
		reqData := verbstest.Pattern(n, uint64(n)+1)
		type result struct {
			c   verbs.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			c, err := b.Connect(ctx, sb.QP, lis.Addr().String(), verbs.ConnParam{PrivateData: reqData})
			ch <- result{c, err}
		}()
		req, err := lis.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := req.PrivateData(); !padded(tr, got, reqData, ibPrivSize[privRequest]) {
			t.Errorf("request of %d bytes arrived as %x", n, got)
		}
		if n == 0 {
			// Reject, at the limit and one byte over it.
			if err := req.Reject(make([]byte, rejMax+1)); !errors.Is(err, verbs.ErrInvalidArgument) {
				t.Errorf("Reject with %d bytes: %v, want ErrInvalidArgument", rejMax+1, err)
			}
			why := verbstest.Pattern(rejMax, 9)
			if err := req.Reject(why); err != nil {
				t.Fatal(err)
			}
			r := <-ch
			var rej *verbs.RejectError
			if !errors.As(r.err, &rej) {
				t.Fatalf("Connect to a rejecting peer: %v", r.err)
			}
			if !padded(tr, rej.PrivateData, why, ibPrivSize[privReject]) {
				t.Errorf("reject data of %d bytes arrived as %x", len(why), rej.PrivateData)
			}
		} else {
			if _, err := req.Accept(sa.QP, verbs.ConnParam{PrivateData: make([]byte, repMax+1)}); !errors.Is(err, verbs.ErrInvalidArgument) {
				t.Errorf("Accept with %d bytes: %v, want ErrInvalidArgument", repMax+1, err)
			}
			repData := verbstest.Pattern(repMax, uint64(n))
			ca, err := req.Accept(sa.QP, verbs.ConnParam{PrivateData: repData})
			if err != nil {
				t.Fatal(err)
			}
			r := <-ch
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := r.c.PrivateData(); !padded(tr, got, repData, ibPrivSize[privReply]) {
				t.Errorf("reply of %d bytes arrived as %x", len(repData), got)
			}
			if got := ca.PrivateData(); !padded(tr, got, reqData, ibPrivSize[privRequest]) {
				t.Errorf("passive Conn has request data %x", got)
			}
			r.c.Disconnect()
			verbstest.WaitDone(t, ca, timeout)
		}
		lis.Close()
		cancel()
	}
	qp := verbstest.NewSide(t, b, verbstest.PairAttr{}).QP
	if _, err := b.Connect(context.Background(), qp, addr+":1", verbs.ConnParam{PrivateData: make([]byte, reqMax+1)}); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Errorf("Connect with %d bytes: %v, want ErrInvalidArgument", reqMax+1, err)
	}
}
