package rdsdproto

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	r := New(nil, OpSend, 7, 3)
	r.SetFlags(FlagReply)
	r.SetCode(CodeDeadline)
	r.SetAddrPort(netip.MustParseAddrPort("10.1.2.3:4000"))
	r.SetN(11)
	r.SetA(1)
	r.SetB(2)
	r.SetC(3)
	copy(r.Body(), "abc")
	p, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Op() != OpSend || p.ID() != 7 || p.Flags() != FlagReply || p.Code() != CodeDeadline ||
		p.AddrPort() != netip.MustParseAddrPort("10.1.2.3:4000") || p.N() != 11 || p.A() != 1 || p.B() != 2 ||
		p.C() != 3 || string(p.Body()) != "abc" {
		t.Fatalf("round trip: %x", []byte(p))
	}
}

func TestParseRefuses(t *testing.T) {
	good := New(nil, OpPoll, 1, 0)
	for _, c := range []struct {
		name string
		mod  func(Record) []byte
		want error
	}{
		{"short", func(r Record) []byte { return r[:HeaderLen-1] }, ErrShort},
		{"long", func(r Record) []byte { return make([]byte, MaxRingRecord+1) }, ErrLong},
		{"version", func(r Record) []byte { r[offVer] = 9; return r }, ErrVersion},
		{"op 0", func(r Record) []byte { r[offOp] = 0; return r }, ErrOp},
		{"op past the end", func(r Record) []byte { r[offOp] = byte(opEnd); return r }, ErrOp},
		{"flags", func(r Record) []byte { r[offFlags] = 0x80; return r }, ErrFlags},
		{"reserved", func(r Record) []byte { r[offRsvd] = 1; return r }, ErrFlags},
	} {
		b := c.mod(append(Record(nil), good...))
		if _, err := Parse(b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestCmsgsAndArgs(t *testing.T) {
	var b []byte
	b = AppendCmsg(b, 5, []byte{1, 2, 3})
	b = AppendCmsg(b, 6, nil)
	c := Cmsgs(b)
	typ, v, c, ok, err := c.Next()
	if !ok || err != nil || typ != 5 || !bytes.Equal(v, []byte{1, 2, 3}) {
		t.Fatalf("first: %d %v %v %v", typ, v, ok, err)
	}
	typ, v, c, ok, err = c.Next()
	if !ok || err != nil || typ != 6 || len(v) != 0 {
		t.Fatalf("second: %d %v %v %v", typ, v, ok, err)
	}
	if _, _, _, ok, err = c.Next(); ok || err != nil {
		t.Fatalf("end: %v %v", ok, err)
	}
	if _, _, _, _, err = Cmsgs(b[:11]).Next(); err != nil {
		t.Fatal(err) // the first entry alone is whole
	}
	if _, _, _, _, err = Cmsgs(b[:6]).Next(); !errors.Is(err, ErrBody) {
		t.Fatalf("cut header: %v", err)
	}
	if _, _, _, _, err = Cmsgs(b[:10]).Next(); !errors.Is(err, ErrBody) {
		t.Fatalf("cut value: %v", err)
	}

	a := Args{1, 2, 3, 4, 5}
	local := []Mem{{1, 0, 8}, {2, 16, 4}}
	ga, gl, err := DecodeArgs(AppendArgs(nil, a, local))
	if err != nil || ga != a || len(gl) != 2 || gl[0] != local[0] || gl[1] != local[1] {
		t.Fatalf("args: %+v %+v %v", ga, gl, err)
	}
	if _, _, err := DecodeArgs(AppendArgs(nil, a, local)[:ArgsLen+5]); !errors.Is(err, ErrBody) {
		t.Fatalf("cut args: %v", err)
	}
	var m [MemLen]byte
	PutMem(m[:], Mem{1, 0, MaxMessage + 1})
	if _, err := GetMem(m[:]); !errors.Is(err, ErrBody) {
		t.Fatalf("huge mem: %v", err)
	}
}

// FuzzParse feeds arbitrary records to every decoder: none may panic,
// and what Parse accepts re-encodes to itself.
func FuzzParse(f *testing.F) {
	r := New(nil, OpSend, 1, 0)
	body := AppendCmsg(nil, 9, AppendArgs(nil, Args{1, 2, 3, 4, 5}, []Mem{{1, 2, 3}}))
	f.Add([]byte(r))
	f.Add(append(append([]byte(nil), r...), body...))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		n := New(nil, r.Op(), r.ID(), len(r.Body()))
		n.SetFlags(r.Flags())
		n.SetCode(r.Code())
		copy(n[offAddr:], r[offAddr:offRsvd])
		n.SetN(r.N())
		n.SetA(r.A())
		n.SetB(r.B())
		n.SetC(r.C())
		copy(n.Body(), r.Body())
		if !bytes.Equal(n, r) {
			t.Fatalf("re-encoded %x, parsed %x", []byte(n), []byte(r))
		}
		for c := Cmsgs(r.Body()); ; {
			_, v, rest, ok, err := c.Next()
			if err != nil || !ok {
				break
			}
			DecodeArgs(v)
			GetMem(v)
			U64(v, 0)
			c = rest
		}
	})
}

// FuzzAhead splits arbitrary batch bodies: every message it returns
// lies inside the body and the walk ends, on the body's end or an error.
func FuzzAhead(f *testing.F) {
	var body []byte
	for i, s := range []string{"one", "", "three"} {
		e := make([]byte, AheadHeaderLen)
		AheadEntry(e).Set(len(s), netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(i)}), uint16(i)))
		body = append(append(body, e...), s...)
	}
	f.Add(body)
	f.Add(body[:AheadHeaderLen+1])
	f.Fuzz(func(t *testing.T, b []byte) {
		rest := b
		for len(rest) > 0 {
			_, data, next, err := NextAhead(rest)
			if err != nil {
				return
			}
			if len(next) >= len(rest) || len(data)+AheadHeaderLen+len(next) != len(rest) {
				t.Fatalf("split %d bytes into %d + %d", len(rest), len(data), len(next))
			}
			rest = next
		}
	})
}

func TestAheadRoundTrip(t *testing.T) {
	from := netip.MustParseAddrPort("10.1.2.3:4000")
	var body []byte
	for _, s := range []string{"first", "", "third message"} {
		e := make([]byte, AheadHeaderLen)
		AheadEntry(e).Set(len(s), from)
		body = append(append(body, e...), s...)
	}
	var got []string
	for rest := body; len(rest) > 0; {
		f, data, next, err := NextAhead(rest)
		if err != nil {
			t.Fatal(err)
		}
		if f != from {
			t.Fatalf("sender %v, want %v", f, from)
		}
		got = append(got, string(data))
		rest = next
	}
	if len(got) != 3 || got[0] != "first" || got[1] != "" || got[2] != "third message" {
		t.Fatalf("messages %q", got)
	}
	bad := bytes.Clone(body)
	bad[10] = 1
	if _, _, _, err := NextAhead(bad); !errors.Is(err, ErrBody) {
		t.Errorf("reserved bits: %v", err)
	}
	if _, _, _, err := NextAhead(body[:AheadHeaderLen+2]); !errors.Is(err, ErrBody) {
		t.Errorf("a message past the body: %v", err)
	}
	if _, _, _, err := NextAhead(body[:5]); !errors.Is(err, ErrBody) {
		t.Errorf("a header cut short: %v", err)
	}
}
