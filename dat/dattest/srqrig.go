package dattest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/srq"
)

// SRQRig is a server with an SRQ and connections from a client into EPs
// created with it: the fixture of the SRQ conformance cases, the
// property-based suite in dat/srq and the SRQ benchmarks.
//
// The server's SRQ EPs complete receives to RecvEVDs (connection i to
// RecvEVDs[i%len]); their connection events and the client's events go
// to each Side's EVD. Client sends are posted with CompletionSuppress so
// that nobody has to reap them.
type SRQRig struct {
	Srv, Cli *Side
	SRQ      *srq.SRQ
	RecvEVDs []*evd.EVD
	Conns    []SRQConn
	// CliReq takes the client EPs' request completions: only failed
	// sends produce events there.
	CliReq *evd.EVD
	qual   dat.ConnQual
	psp    *ep.PSP
}

// SRQConn is one connection of an SRQRig.
type SRQConn struct {
	Srv, Cli *ep.EP
	RecvEVD  *evd.EVD
}

// SRQRigAttr sizes an SRQRig.
type SRQRigAttr struct {
	SRQ      srq.Attr
	Conns    int // connections made at once
	RecvEVDs int // recv EVDs the server EPs share round robin (default 1)
	EVDLen   int // their queue length (default 256)
	BufSize  int // bytes of each Side's buffer (default 64 KiB)
	EPAttr   dat.EPAttr
}

// NewSRQRig builds an SRQRig between server IA a and client IA b.
func NewSRQRig(t testing.TB, a, b *ia.IA, attr SRQRigAttr) *SRQRig {
	t.Helper()
	if attr.RecvEVDs == 0 {
		attr.RecvEVDs = 1
	}
	if attr.EVDLen == 0 {
		attr.EVDLen = 256
	}
	if attr.BufSize == 0 {
		attr.BufSize = 64 << 10
	}
	r := &SRQRig{Srv: NewSide(t, a, attr.BufSize), Cli: NewSide(t, b, attr.BufSize)}
	var err error
	if r.SRQ, err = srq.Create(a, r.Srv.PZ, attr.SRQ); err != nil {
		t.Fatalf("srq_create: %v", err)
	}
	for i := 0; i < attr.RecvEVDs; i++ {
		e, err := evd.Create(a, attr.EVDLen, nil, dat.EVDDTO)
		if err != nil {
			t.Fatalf("evd_create: %v", err)
		}
		r.RecvEVDs = append(r.RecvEVDs, e)
	}
	if r.CliReq, err = evd.Create(b, attr.EVDLen, nil, dat.EVDDTO); err != nil {
		t.Fatalf("evd_create: %v", err)
	}
	if r.psp, r.qual, err = ep.CreatePSPAny(a, r.Srv.EVD, dat.PSPConsumer); err != nil {
		t.Fatalf("psp_create_any: %v", err)
	}
	t.Cleanup(func() { r.psp.Free() })
	for i := 0; i < attr.Conns; i++ {
		r.Connect(t, &attr.EPAttr)
	}
	return r
}

// Connect adds a connection whose server EP uses the SRQ with attr and
// returns its index.
func (r *SRQRig) Connect(t testing.TB, attr *dat.EPAttr) int {
	t.Helper()
	i := len(r.Conns)
	recv := r.RecvEVDs[i%len(r.RecvEVDs)]
	sep, err := ep.CreateWithSRQ(r.Srv.IA, r.Srv.PZ, recv, r.Srv.EVD, r.Srv.EVD, r.SRQ, attr)
	if err != nil {
		t.Fatalf("ep_create_with_srq: %v", err)
	}
	cep, err := ep.Create(r.Cli.IA, r.Cli.PZ, r.Cli.EVD, r.CliReq, r.Cli.EVD, &dat.EPAttr{MaxRequestDTOs: 256})
	if err != nil {
		t.Fatalf("ep_create: %v", err)
	}
	ConnectEPs(t, r.Srv, r.Cli, sep, cep, r.qual)
	r.Conns = append(r.Conns, SRQConn{Srv: sep, Cli: cep, RecvEVD: recv})
	return i
}

// ConnectPlain adds a connection whose server EP has its own receive
// queue (attr's MaxRecvDTOs deep) but the same EVDs as an SRQ EP would:
// the baseline the SRQ benchmarks compare with.
func (r *SRQRig) ConnectPlain(t testing.TB, attr *dat.EPAttr) int {
	t.Helper()
	i := len(r.Conns)
	recv := r.RecvEVDs[i%len(r.RecvEVDs)]
	sep, err := ep.Create(r.Srv.IA, r.Srv.PZ, recv, r.Srv.EVD, r.Srv.EVD, attr)
	if err != nil {
		t.Fatalf("ep_create: %v", err)
	}
	cep, err := ep.Create(r.Cli.IA, r.Cli.PZ, r.Cli.EVD, r.CliReq, r.Cli.EVD, &dat.EPAttr{MaxRequestDTOs: 256})
	if err != nil {
		t.Fatalf("ep_create: %v", err)
	}
	ConnectEPs(t, r.Srv, r.Cli, sep, cep, r.qual)
	r.Conns = append(r.Conns, SRQConn{Srv: sep, Cli: cep, RecvEVD: recv})
	return i
}

// Send posts a suppressed Send of n bytes at offset off of the client's
// buffer on connection i.
func (r *SRQRig) Send(t testing.TB, i, off, n int) {
	t.Helper()
	var iov []dat.LMRTriplet
	if n > 0 {
		iov = []dat.LMRTriplet{r.Cli.Buf.Triplet(off, n)}
	}
	waitFor(t, fmt.Sprintf("a request slot on connection %d", i), func() bool {
		err := r.Conns[i].Cli.PostSend(iov, 0, dat.CompletionSuppress)
		if err == nil {
			return true
		}
		if !errors.Is(err, dat.ErrInsufficientResources) {
			t.Fatalf("ep_post_send on connection %d: %v", i, err)
		}
		// Suppressed completions free their slots when the EVD drains
		// its CQ, which a dequeue does.
		if ev, ok := TryEvent(t, r.CliReq); ok {
			t.Fatalf("send failed: %+v", ev.DTO)
		}
		return false
	})
}

// WaitAvailable waits until the SRQ reports want buffers available: the
// sends posted so far have all taken theirs.
func (r *SRQRig) WaitAvailable(t testing.TB, want int) srq.Param {
	t.Helper()
	var p srq.Param
	waitFor(t, fmt.Sprintf("%d SRQ buffers available", want), func() bool {
		var err error
		if p, err = r.SRQ.Query(); err != nil {
			t.Fatalf("srq_query: %v", err)
		}
		return p.Available == want
	})
	return p
}

// TryEvent dequeues an event if one is queued.
func TryEvent(t testing.TB, e *evd.EVD) (dat.Event, bool) {
	t.Helper()
	ev, err := e.Dequeue()
	if errors.Is(err, dat.ErrQueueEmpty) {
		return ev, false
	}
	if err != nil {
		t.Fatalf("evd_dequeue: %v", err)
	}
	return ev, true
}

// WaitEventFor waits up to d for an event on e.
func WaitEventFor(t testing.TB, e *evd.EVD, d time.Duration) (dat.Event, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	ev, _, err := e.Wait(ctx, 1)
	if err != nil {
		if errors.Is(err, dat.ErrTimeoutExpired) {
			return ev, false
		}
		t.Fatalf("evd_wait: %v", err)
	}
	return ev, true
}
