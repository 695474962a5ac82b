package rdsoverdat

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"unsafe"
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

// reset clears every field of a message's state but its buffer's
// length: each field is set to something other than its zero value
// (reflection, so that a field added later is covered too), then reset
// must leave it zero.
func TestMessageResetClearsAll(t *testing.T) {
	var st msgState
	fillNonZero(t, reflect.ValueOf(&st).Elem())
	st.refs.Store(0) // reset's precondition: unref took the last reference
	buf := st.buf
	st.reset()
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "buf" {
			continue
		}
		if !v.Field(i).IsZero() {
			t.Errorf("reset left %s set", f.Name)
		}
	}
	if len(st.buf) != 0 || cap(st.buf) != cap(buf) || unsafe.SliceData(st.buf) != unsafe.SliceData(buf) {
		t.Errorf("reset's buffer: len %d cap %d, want len 0 of the same storage", len(st.buf), cap(st.buf))
	}
}

// fillNonZero sets v, a settable value even if unexported, to a value
// other than its type's zero value.
func fillNonZero(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Array:
		for i := range v.Len() {
			fillNonZero(t, v.Index(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 4))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[netip.AddrPort]() {
			v.Set(reflect.ValueOf(netip.MustParseAddrPort("192.0.2.1:7")))
			return
		}
		for i := range v.NumField() {
			f := v.Field(i)
			fillNonZero(t, reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem())
		}
	default:
		t.Fatalf("no non-zero value for a %v", v.Type())
	}
}
