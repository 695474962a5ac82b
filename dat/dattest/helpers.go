package dattest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/providers"
)

// Side is one end of a test: an IA with a PZ, one EVD taking every
// stream, and a registered buffer.
type Side struct {
	IA  *ia.IA
	PZ  *ia.PZ
	EVD *evd.EVD
	Buf *lmr.LMR
}

// NewSide creates the objects of a Side on i with a buffer of size bytes
// and all privileges.
func NewSide(t testing.TB, i *ia.IA, size int) *Side {
	t.Helper()
	s := &Side{IA: i}
	var err error
	if s.PZ, err = i.CreatePZ(); err != nil {
		t.Fatalf("pz_create: %v", err)
	}
	if s.EVD, err = evd.Create(i, 256, nil, dat.EVDDefault|dat.EVDSoftware); err != nil {
		t.Fatalf("evd_create: %v", err)
	}
	if size > 0 {
		if s.Buf, err = lmr.Create(i, s.PZ, make([]byte, size), dat.MemPrivAll, dat.VATypeVA); err != nil {
			t.Fatalf("lmr_create: %v", err)
		}
	}
	return s
}

// NewEP creates an EP of s with attr (nil: defaults) on s's EVD.
func (s *Side) NewEP(t testing.TB, attr *dat.EPAttr) *ep.EP {
	t.Helper()
	e, err := ep.Create(s.IA, s.PZ, s.EVD, s.EVD, s.EVD, attr)
	if err != nil {
		t.Fatalf("ep_create: %v", err)
	}
	return e
}

// Next waits for the next event on e.
func Next(t testing.TB, e *evd.EVD) dat.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	ev, _, err := e.Wait(ctx, 1)
	if err != nil {
		t.Fatalf("evd_wait: %v", err)
	}
	if ev.EVD != dat.Handle(e) { // the async EVD's too (evd.Async)
		t.Fatalf("event %v carries EVD %p, want %p", ev.Number, ev.EVD, e)
	}
	return ev
}

// Expect waits for the next event on e and fails unless it is want (and,
// for DTOs, successful).
func Expect(t testing.TB, e *evd.EVD, want dat.EventNumber) dat.Event {
	t.Helper()
	ev := Next(t, e)
	if ev.Number != want {
		t.Fatalf("event %v (%+v), want %v", ev.Number, ev, want)
	}
	if want == dat.DTOCompletionEvent && ev.DTO.Status != dat.DTOSuccess {
		t.Fatalf("DTO cookie %d op %v failed: %v", ev.DTO.Cookie, ev.DTO.Op, ev.DTO.Status)
	}
	return ev
}

// ExpectDTO waits for a DTO completion with the given cookie and status.
func ExpectDTO(t testing.TB, e *evd.EVD, cookie dat.DTOCookie, status dat.DTOStatus) dat.DTOCompletion {
	t.Helper()
	ev := Next(t, e)
	if ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != cookie || ev.DTO.Status != status {
		t.Fatalf("got %v cookie %d status %v, want DTO cookie %d status %v", ev.Number, ev.DTO.Cookie, ev.DTO.Status, cookie, status)
	}
	return ev.DTO
}

// ExpectEmpty fails if e holds an event.
func ExpectEmpty(t testing.TB, e *evd.EVD) {
	t.Helper()
	if ev, err := e.Dequeue(); !errors.Is(err, dat.ErrQueueEmpty) {
		t.Fatalf("EVD not empty: %v %+v", err, ev)
	}
}

// WantErr fails unless err is a *dat.Error with code and, if sub is not
// NoSubtype, that subtype.
func WantErr(t testing.TB, err error, code dat.Code, sub dat.Subtype) {
	t.Helper()
	var de *dat.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v, want %v/%v", err, code, sub)
	}
	if de.Code != code || (sub != dat.NoSubtype && de.Sub != sub) {
		t.Fatalf("error %v, want %v/%v", err, code, sub)
	}
}

// Connect connects a new EP of cli to a new EP of srv through a PSP on
// srv, with private data both ways, and returns (server EP, client EP).
func Connect(t testing.TB, srv, cli *Side, attr *dat.EPAttr) (*ep.EP, *ep.EP) {
	t.Helper()
	psp, qual, err := ep.CreatePSPAny(srv.IA, srv.EVD, dat.PSPConsumer)
	if err != nil {
		t.Fatalf("psp_create_any: %v", err)
	}
	defer psp.Free()
	sep, cep := srv.NewEP(t, attr), cli.NewEP(t, attr)
	ConnectEPs(t, srv, cli, sep, cep, qual)
	return sep, cep
}

// ConnectEPs connects cep to sep through the PSP of srv on qual.
func ConnectEPs(t testing.TB, srv, cli *Side, sep, cep *ep.EP, qual dat.ConnQual) {
	t.Helper()
	if err := cep.Connect(srv.IA.Addr(), qual, DefaultTimeout, []byte("DAPL and RDMA rule! Test 4321."), dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		t.Fatalf("ep_connect: %v", err)
	}
	ev := Expect(t, srv.EVD, dat.ConnectionRequestEvent)
	cr := ev.CR.CR.(*ep.CR)
	p, err := cr.Query()
	if err != nil || !privIs(p.PrivateData, "DAPL and RDMA rule! Test 4321.") {
		t.Fatalf("cr_query: %v %q", err, p.PrivateData)
	}
	if err := cr.Accept(sep, []byte("accepted")); err != nil {
		t.Fatalf("cr_accept: %v", err)
	}
	if ev := Expect(t, srv.EVD, dat.ConnectionEventEstablished); ev.Conn.EP != dat.Handle(sep) {
		t.Fatal("ESTABLISHED for another EP")
	}
	ev = Expect(t, cli.EVD, dat.ConnectionEventEstablished)
	if ev.Conn.EP != dat.Handle(cep) || !privIs(ev.Conn.PrivateData, "accepted") {
		t.Fatalf("client ESTABLISHED %+v", ev.Conn)
	}
}

// privIs reports whether private data from a peer is want: exactly, or
// followed by zeros, as it arrives over an IB or RoCE CM, whose field has
// a fixed size and no length (verbs.ConnParam).
func privIs(got []byte, want string) bool {
	return len(got) >= len(want) && string(got[:len(want)]) == want &&
		strings.Trim(string(got[len(want):]), "\x00") == ""
}

// Disconnect disconnects cep gracefully and waits for both DISCONNECTED
// events.
func Disconnect(t testing.TB, srv, cli *Side, sep, cep *ep.EP) {
	t.Helper()
	if err := cep.Disconnect(dat.CloseGraceful); err != nil {
		t.Fatalf("ep_disconnect: %v", err)
	}
	waitConn(t, cli.EVD, dat.ConnectionEventDisconnected)
	waitConn(t, srv.EVD, dat.ConnectionEventDisconnected)
}

// waitConn waits for a connection event, skipping DTO completions
// (flushes) that come first.
func waitConn(t testing.TB, e *evd.EVD, want dat.EventNumber) dat.Event {
	t.Helper()
	for {
		ev := Next(t, e)
		if ev.Number == dat.DTOCompletionEvent {
			continue
		}
		if ev.Number != want {
			t.Fatalf("event %v, want %v", ev.Number, want)
		}
		return ev
	}
}

// deadline returns a context bounded by DefaultTimeout.
func deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), DefaultTimeout)
}

var _ = time.Second

// OpenMem opens n IAs on one fresh fabric of the in-memory provider, so
// that they reach each other and nothing else; they close (abruptly)
// when the test ends.
func OpenMem(t testing.TB, n int) []*ia.IA {
	t.Helper()
	reg, err := providers.New(providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ias := make([]*ia.IA, n)
	for i := range ias {
		a, err := ia.OpenIn(reg, "mem", 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(dat.CloseAbrupt) })
		ias[i] = a
	}
	return ias
}

// waitFor polls cond until it holds, failing t after DefaultTimeout with
// what was awaited. It is for states DAT reports no event for (a request
// queue that has retired its suppressed DTOs, a waiter that has blocked,
// buffers an SRQ has handed out); cond may act, as a retried post does.
// Between looks it sleeps briefly rather than burn a core the provider
// needs; in a synctest bubble (Harness.Bubble) that sleep ends only once
// every other goroutine has blocked, so the state has settled.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(DefaultTimeout); !cond(); time.Sleep(pollInterval) {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", DefaultTimeout, what)
		}
	}
}

// pollInterval is waitFor's sleep: short against a state change in
// progress (a completion on siw's loopback is tens of microseconds).
const pollInterval = 100 * time.Microsecond
