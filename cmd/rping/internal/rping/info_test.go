package rping

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// The first ping of a kernel rping client with -S 64, as it crossed the
// wire in tests/interop/testdata/siw_rping_br77_payloads.txt (the server's
// RDMA Read Response payload).
const kernelPing0 = "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\x00"

func TestFillPingMatchesKernel(t *testing.T) {
	buf := make([]byte, 64)
	FillPing(buf, 0, FirstStart)
	if string(buf) != kernelPing0 {
		t.Fatalf("ping 0:\n got %q\nwant %q", buf, kernelPing0)
	}
}

func TestFillPingSequence(t *testing.T) {
	for _, c := range []struct {
		n     int
		start byte
		size  int
		want  string
	}{
		{1, 'B', MinSize, "rdma-ping-1: BCDEFGHIJKLM\x00"},
		{12, 'z', 30, "rdma-ping-12: zABCDEFGHIJKLMN\x00"},
		{2147483647, 'A', MinSize, "rdma-ping-2147483647: ABC\x00"},
	} {
		buf := make([]byte, c.size)
		FillPing(buf, c.n, c.start)
		if string(buf) != c.want {
			t.Errorf("FillPing(%d, %q, %d) = %q, want %q", c.n, c.start, c.size, buf, c.want)
		}
	}
	// The pattern wraps from 'z' to 'A' inside a buffer, too.
	buf := make([]byte, MaxSize)
	FillPing(buf, 0, FirstStart)
	body := buf[len("rdma-ping-0: ") : len(buf)-1]
	for i := 1; i < len(body); i++ {
		want := body[i-1] + 1
		if body[i-1] == 'z' {
			want = 'A'
		}
		if body[i] != want {
			t.Fatalf("pattern byte %d is %q after %q", i, body[i], body[i-1])
		}
	}
	if bytes.IndexByte(buf, 0) != len(buf)-1 {
		t.Fatal("the buffer is not one C string ending in its last byte")
	}
}

func TestNextStart(t *testing.T) {
	c := FirstStart
	for range 'z' - 'A' {
		c = NextStart(c)
	}
	if c != 'z' {
		t.Fatalf("after 57 pings start is %q, want 'z'", c)
	}
	if c = NextStart(c); c != 'A' {
		t.Fatalf("start after 'z' is %q, want 'A'", c)
	}
}

func TestFillPingAllocs(t *testing.T) {
	buf := make([]byte, 4096)
	if n := testing.AllocsPerRun(100, func() { FillPing(buf, 12345, 'Q') }); n != 0 {
		t.Fatalf("FillPing allocates %v times", n)
	}
}

func TestInfoMatchesKernel(t *testing.T) {
	// The client's first Send payload in the kernel capture: start_buf's
	// address, the rkey of start_mr and -S 64.
	b, _ := hex.DecodeString("000055b1dbd1a5704d913f0000000040")
	info := Info(b)
	if info.Buf() != 0x000055b1dbd1a570 || info.RKey() != 0x4d913f00 || info.Size() != 64 {
		t.Fatalf("decoded buf %#x rkey %#x size %d", info.Buf(), info.RKey(), info.Size())
	}
	enc := make(Info, InfoLen)
	enc.SetBuf(0x000055b1dbd1a570)
	enc.SetRKey(0x4d913f00)
	enc.SetSize(64)
	if !bytes.Equal(enc, b) {
		t.Fatalf("encoded % x, want % x", []byte(enc), b)
	}
}

func FuzzInfo(f *testing.F) {
	seed := make(Info, InfoLen)
	seed.SetBuf(0x000055b1dbd1a570)
	seed.SetRKey(0x4d913f00)
	seed.SetSize(64)
	f.Add([]byte(seed))
	f.Add(make([]byte, InfoLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < InfoLen {
			return // the engine never parses a receive of another length
		}
		in := Info(b[:InfoLen])
		out := make(Info, InfoLen)
		out.SetBuf(in.Buf())
		out.SetRKey(in.RKey())
		out.SetSize(in.Size())
		if !bytes.Equal(in, out) {
			t.Fatalf("round trip % x -> % x", []byte(in), []byte(out))
		}
	})
}

func TestCString(t *testing.T) {
	for in, want := range map[string]string{"abc\x00def": "abc", "abc": "abc", "\x00": "", "": ""} {
		if got := string(cString([]byte(in))); got != want {
			t.Errorf("cString(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.HasPrefix(kernelPing0, string(cString([]byte(kernelPing0)))) {
		t.Fatal("cString cut the kernel ping")
	}
}
