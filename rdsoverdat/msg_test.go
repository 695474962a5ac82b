package rdsoverdat

import (
	"fmt"
	"testing"
)

func TestMsgFlagsString(t *testing.T) {
	for _, c := range []struct {
		f    MsgFlags
		want string
	}{
		{0, "0"},
		{MsgDontWait, "MSG_DONTWAIT"},
		{MsgTrunc | MsgPeek, "MSG_PEEK|MSG_TRUNC"},
		{MsgOOB | MsgPeek | MsgCtrunc | MsgTrunc | MsgDontWait, "MSG_OOB|MSG_PEEK|MSG_CTRUNC|MSG_TRUNC|MSG_DONTWAIT"},
		{MsgTrunc | 0x4000, "MSG_TRUNC|0x4000"},
		{0x100, "0x100"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%d: %q, want %q", int(c.f), got, c.want)
		}
		if got := fmt.Sprint(c.f); got != c.want {
			t.Errorf("%d through fmt: %q", int(c.f), got)
		}
	}
}

// unref clears an RDMA op's storage with the message that carried it, so
// that a message without an op, which leaves that storage alone, always
// finds it clear.
func TestUnrefClearsRDMAOp(t *testing.T) {
	m := newMessage(64)
	m.rdmaOp.token, m.rdmaOp.n, m.rdmaOp.write = 7, 4096, true
	m.rdma = &m.rdmaOp
	m.sequence, m.hasCookie = 9, true
	if !m.unref() {
		t.Fatal("the last reference did not free the message")
	}
	if m.rdma != nil || m.rdmaOp.token != 0 || m.rdmaOp.n != 0 || m.rdmaOp.write || m.sequence != 0 || m.hasCookie {
		t.Fatalf("freed message kept state: rdma %p op %+v seq %d", m.rdma, m.rdmaOp.rdmaOpArgs, m.sequence)
	}
	if cap(m.buf) < 64 || len(m.buf) != 0 {
		t.Fatalf("freed message's buffer: len %d cap %d", len(m.buf), cap(m.buf))
	}
}
