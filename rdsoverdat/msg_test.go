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
