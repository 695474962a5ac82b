//go:build rdmacore

package rdmacore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestBusyPollOption: the option and the environment variable set the
// spin count, bounded, and the option wins.
func TestBusyPollOption(t *testing.T) {
	t.Setenv("GODAPL_RDMACORE_BUSY_POLL", "")
	for _, c := range []struct {
		env  string
		opts []Option
		want int
	}{
		{"", nil, 0},
		{"", []Option{BusyPoll(100)}, 100},
		{"", []Option{BusyPoll(-5)}, 0},
		{"", []Option{BusyPoll(1 << 30)}, maxBusyPoll},
		{"250", nil, 250},
		{"250", []Option{BusyPoll(7)}, 7},
		{"many", nil, 0},
		{"-1", nil, 0},
	} {
		t.Setenv("GODAPL_RDMACORE_BUSY_POLL", c.env)
		if got := New(c.opts...).busyPoll; got != c.want {
			t.Errorf("env %q, %d options: busyPoll %d, want %d", c.env, len(c.opts), got, c.want)
		}
	}
}

// TestBusyPoll: with the option, Poll of an empty CQ still returns
// nothing, allocates nothing and comes back; completions are found by
// Poll and reported by Wait, and Wait on an empty CQ still sleeps until
// its context ends.
func TestBusyPoll(t *testing.T) {
	sa, sb := pair(t, verbstest.PairAttr{}, BusyPoll(4096))
	wcs := make([]verbs.WC, 4)
	if n := sa.CQ.Poll(wcs); n != 0 {
		t.Fatalf("Poll of an empty CQ: %d completions", n)
	}
	if allocs := testing.AllocsPerRun(20, func() { sa.CQ.Poll(wcs) }); allocs != 0 {
		t.Fatalf("busy Poll of an empty CQ allocates %.1f times", allocs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := sa.CQ.Wait(ctx, false)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an empty CQ: %v, want the context's deadline", err)
	}
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}
	for i := range 50 {
		copy(sb.Buf.B[:64], []byte{byte(i), 1, 2, 3})
		if _, err := sa.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.QP.PostSend(send); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*verbstest.Side{sb, sa} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.CQ.Wait(ctx, false); err != nil {
				cancel()
				t.Fatalf("message %d: Wait: %v", i, err)
			}
			cancel()
			if n := s.CQ.Poll(wcs); n != 1 || wcs[0].Status != verbs.WCSuccess {
				t.Fatalf("message %d: %d completions %+v", i, n, wcs[:n])
			}
		}
		if wcs[0].ID != 2 || wcs[0].ByteLen != 64 || sa.Buf.B[0] != byte(i) {
			t.Fatalf("message %d: receive %+v, first byte %d", i, wcs[0], sa.Buf.B[0])
		}
	}
}
