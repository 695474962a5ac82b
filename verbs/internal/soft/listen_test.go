package soft

import (
	"context"
	"errors"
	"testing"

	"github.com/godapl/godapl/verbs"
)

type testReq struct {
	id       int
	stale    bool
	rejected int
}

func (r *testReq) Reject([]byte) error { r.rejected++; return nil }

type testConn struct{ closed int }

func (c *testConn) Close() error { c.closed++; return nil }

// TestListenQueueBacklog: a backlog of 0 holds one request, a full one
// refuses without closing, Accept hands requests out in order and drops
// the stale ones, and a done context ends a wait.
func TestListenQueueBacklog(t *testing.T) {
	var q ListenQueue[*testReq]
	q.Init(0)
	a, b := &testReq{id: 1}, &testReq{id: 2}
	if queued, closed := q.Offer(a, nil); !queued || closed {
		t.Fatalf("first Offer: queued %v, closed %v", queued, closed)
	}
	if queued, closed := q.Offer(b, nil); queued || closed {
		t.Fatalf("Offer to a full backlog: queued %v, closed %v; want false, false", queued, closed)
	}
	ctx := context.Background()
	if r, err := q.Accept(ctx, nil); err != nil || r != a {
		t.Fatalf("Accept = %v, %v; want request 1", r, err)
	}

	q.Init(3)
	stale := func(r *testReq) bool { return r.stale }
	reqs := []*testReq{{id: 1, stale: true}, {id: 2}, {id: 3}}
	for _, r := range reqs {
		if queued, _ := q.Offer(r, nil); !queued {
			t.Fatalf("Offer %d refused", r.id)
		}
	}
	for _, want := range reqs[1:] {
		if r, err := q.Accept(ctx, stale); err != nil || r != want {
			t.Fatalf("Accept = %v, %v; want request %d", r, err, want.id)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r, err := q.Accept(cctx, stale); r != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Accept with a cancelled context = %v, %v", r, err)
	}
}

// TestListenQueueClose: Close closes the connections still in their
// handshake (not those that ended or were offered), rejects what is
// queued, ends Accept, refuses Begin and Offer, and reports a second
// Close.
func TestListenQueueClose(t *testing.T) {
	var q ListenQueue[*testReq]
	q.Init(4)
	inHandshake, failed, offered := &testConn{}, &testConn{}, &testConn{}
	for _, c := range []*testConn{inHandshake, failed, offered} {
		if !q.Begin(c) {
			t.Fatal("Begin refused on an open queue")
		}
	}
	q.End(failed)
	queued := &testReq{id: 1}
	if ok, _ := q.Offer(queued, offered); !ok {
		t.Fatal("Offer refused")
	}

	accepted := make(chan error, 1)
	go func() {
		_, err := q.Accept(context.Background(), func(r *testReq) bool { return true })
		accepted <- err
	}()
	if !q.Close() {
		t.Fatal("first Close reported the queue closed already")
	}
	if err := <-accepted; !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Accept across Close: %v, want ErrClosed", err)
	}
	select {
	case <-q.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if inHandshake.closed != 1 || failed.closed != 0 || offered.closed != 0 {
		t.Fatalf("closes: in handshake %d, ended %d, offered %d; want 1, 0, 0", inHandshake.closed, failed.closed, offered.closed)
	}
	// The waiting Accept may have dropped the request as stale before
	// Close; whatever Close found queued it rejected once.
	if queued.rejected > 1 {
		t.Fatalf("queued request rejected %d times", queued.rejected)
	}
	if q.Begin(&testConn{}) {
		t.Fatal("Begin after Close recorded a connection")
	}
	late := &testReq{id: 2}
	if ok, closed := q.Offer(late, nil); ok || !closed {
		t.Fatalf("Offer after Close: queued %v, closed %v; want false, true", ok, closed)
	}
	if late.rejected != 0 {
		t.Fatal("Offer after Close rejected the request itself")
	}
	if q.Close() {
		t.Fatal("second Close reported a first")
	}
	if inHandshake.closed != 1 {
		t.Fatalf("second Close closed the handshake again (%d)", inHandshake.closed)
	}
}

// TestListenQueueCloseRejects: requests queued when the listener closes
// are rejected, each once.
func TestListenQueueCloseRejects(t *testing.T) {
	var q ListenQueue[*testReq]
	q.Init(2)
	a, b := &testReq{id: 1}, &testReq{id: 2}
	q.Offer(a, nil)
	q.Offer(b, nil)
	q.Close()
	if a.rejected != 1 || b.rejected != 1 {
		t.Fatalf("rejects %d, %d; want 1, 1", a.rejected, b.rejected)
	}
	if r, err := q.Accept(context.Background(), nil); r != nil || !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Accept after Close = %v, %v", r, err)
	}
}
