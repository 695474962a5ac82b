package verbstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

// Buf is memory registered as one MR, with helpers that name its bytes the
// way work requests and peers do.
type Buf struct {
	B  []byte
	MR verbs.MR
}

// NewBuf registers size fresh bytes in pd with the given access and fails
// t if the provider refuses. The MR lives until Dereg or the device closes.
func NewBuf(t testing.TB, pd verbs.PD, size int, access verbs.Access) *Buf {
	t.Helper()
	b := make([]byte, size)
	mr, err := pd.RegMR(b, access)
	if err != nil {
		t.Fatalf("RegMR(%d bytes, %v): %v", size, access, err)
	}
	return &Buf{B: b, MR: mr}
}

// SGE names n bytes at offset off.
func (b *Buf) SGE(off, n int) verbs.SGE { return verbs.SGEOf(b.MR, off, n) }

// Addr is the address of the byte at offset off, as the peer names it in
// an RDMA request.
func (b *Buf) Addr(off int) uint64 { return b.MR.Addr() + uint64(off) }

// RKey is the MR's remote key.
func (b *Buf) RKey() uint32 { return b.MR.RKey() }

// Fill writes a pattern derived from seed into p: every byte depends on
// its position and the seed, so data placed at the wrong offset, twice or
// from the wrong message does not match.
func Fill(p []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x >> 24)
	}
}

// Pattern returns n bytes of Fill(seed).
func Pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	Fill(p, seed)
	return p
}

// PollOne waits up to timeout for the next completion on cq and returns
// it. It blocks in CQ.Wait, so it also proves that Wait wakes up.
func PollOne(t testing.TB, cq verbs.CQ, timeout time.Duration) verbs.WC {
	t.Helper()
	wc, err := pollOne(cq, timeout)
	if err != nil {
		t.Fatalf("waiting for a completion: %v", err)
	}
	return wc
}

func pollOne(cq verbs.CQ, timeout time.Duration) (verbs.WC, error) {
	var wcs [1]verbs.WC
	if cq.Poll(wcs[:]) == 1 {
		return wcs[0], nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if err := cq.Wait(ctx, false); err != nil {
			return verbs.WC{}, err
		}
		if cq.Poll(wcs[:]) == 1 {
			return wcs[0], nil
		}
	}
}

// PollN waits for n completions on cq, oldest first.
func PollN(t testing.TB, cq verbs.CQ, n int, timeout time.Duration) []verbs.WC {
	t.Helper()
	wcs := make([]verbs.WC, n)
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for got < n {
		got += cq.Poll(wcs[got:])
		if got == n {
			break
		}
		if err := cq.Wait(ctx, false); err != nil {
			t.Fatalf("waiting for completion %d of %d: %v (got %v)", got+1, n, err, wcs[:got])
		}
	}
	return wcs
}

// NoWC fails t if cq holds a completion.
func NoWC(t testing.TB, cq verbs.CQ) {
	t.Helper()
	var wcs [1]verbs.WC
	if cq.Poll(wcs[:]) != 0 {
		t.Fatalf("unexpected completion %+v", wcs[0])
	}
}

// ExpectWC fails t unless wc completed work request id with status st,
// and, for successful completions, with opcode op (libibverbs leaves the
// opcode of failed completions undefined).
func ExpectWC(t testing.TB, wc verbs.WC, id uint64, st verbs.WCStatus, op verbs.WCOpcode) {
	t.Helper()
	if wc.ID != id || wc.Status != st || (st == verbs.WCSuccess && wc.Opcode != op) {
		t.Fatalf("completion %+v (status %v, opcode %v), want id %d status %v opcode %v",
			wc, wc.Status, wc.Opcode, id, st, op)
	}
}

// MustPostSend posts wrs and fails t unless all were posted.
func MustPostSend(t testing.TB, qp verbs.QP, wrs ...verbs.SendWR) {
	t.Helper()
	if n, err := qp.PostSend(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostSend(%d WRs) = %d, %v", len(wrs), n, err)
	}
}

// MustPostRecv posts wrs and fails t unless all were posted.
func MustPostRecv(t testing.TB, qp verbs.QP, wrs ...verbs.RecvWR) {
	t.Helper()
	if n, err := qp.PostRecv(wrs); err != nil || n != len(wrs) {
		t.Fatalf("PostRecv(%d WRs) = %d, %v", len(wrs), n, err)
	}
}

// WaitAsyncEvent reads dev's async events until one satisfies match, and
// returns it; events that do not match are logged and dropped. It fails t
// after timeout or when the channel closes.
func WaitAsyncEvent(t testing.TB, dev verbs.Device, timeout time.Duration, match func(verbs.AsyncEvent) bool) verbs.AsyncEvent {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-dev.AsyncEvents():
			if !ok {
				t.Fatal("async event channel closed while waiting for an event")
			}
			if match(ev) {
				return ev
			}
			t.Logf("ignoring async event %v", ev)
		case <-timer.C:
			t.Fatalf("no matching async event within %v", timeout)
		}
	}
}

// WaitDone waits up to timeout for conn to end.
func WaitDone(t testing.TB, conn verbs.Conn, timeout time.Duration) {
	t.Helper()
	select {
	case <-conn.Done():
	case <-time.After(timeout):
		t.Fatalf("connection %v -> %v did not end within %v", conn.LocalAddr(), conn.RemoteAddr(), timeout)
	}
}

// errIsAny reports whether err matches one of targets.
func errIsAny(err error, targets ...error) bool {
	return slices.ContainsFunc(targets, func(target error) bool { return errors.Is(err, target) })
}

// expectErr fails t unless err matches one of targets.
func expectErr(t testing.TB, what string, err error, targets ...error) {
	t.Helper()
	if err == nil || !errIsAny(err, targets...) {
		t.Fatalf("%s: got error %v, want %v", what, err, targets)
	}
}

// expectNoErr fails t if err is not nil.
func expectNoErr(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// diffBytes describes where got and want first differ.
func diffBytes(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			end := min(i+8, len(got))
			return fmt.Sprintf("first difference at byte %d: % x, want % x", i, got[i:end], want[i:end])
		}
	}
	return "equal"
}

// expectBytes fails t unless got equals want.
func expectBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %s", what, diffBytes(got, want))
	}
}

// expectPrivData checks private data from sender: on IB and RoCE the CM
// field has a fixed size and no length, so the bytes sent arrive padded
// with zeros (verbs.ConnParam); elsewhere they arrive exactly.
func expectPrivData(t testing.TB, sender verbs.Device, what string, got, want []byte) {
	t.Helper()
	if tr := sender.Query().Transport; (tr == verbs.TransportIB || tr == verbs.TransportRoCE) &&
		len(got) > len(want) && bytes.HasPrefix(got, want) && !slices.ContainsFunc(got[len(want):], func(c byte) bool { return c != 0 }) {
		return
	}
	expectBytes(t, what, got, want)
}

func itoa(i int) string { return fmt.Sprint(i) }
