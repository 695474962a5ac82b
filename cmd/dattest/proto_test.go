package main

import (
	"strings"
	"testing"
)

func TestSetupRoundTrip(t *testing.T) {
	for _, s := range []setup{{Size: 1, Depth: 1}, {Size: 4096, Depth: 8}, {Size: maxMsgSize, Depth: maxDepth}} {
		got, err := parseSetup(s.encode())
		if err != nil || got != s {
			t.Errorf("parseSetup(encode(%+v)) = %+v, %v", s, got, err)
		}
	}
}

func TestSetupRejects(t *testing.T) {
	ok := setup{Size: 64, Depth: 4}.encode()
	mod := func(f func(b []byte)) []byte {
		b := append([]byte(nil), ok...)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "not a dattest"},
		{"short", ok[:setupHeaderSize-1], "not a dattest"},
		{"magic", mod(func(b []byte) { b[0] ^= 1 }), "not a dattest"},
		{"version", mod(func(b []byte) { b[setupVersionOffset] = 9 }), "version 9"},
		{"size 0", setup{Size: 0, Depth: 1}.encode(), "size 0"},
		{"size big", setup{Size: maxMsgSize + 1, Depth: 1}.encode(), "size"},
		{"depth 0", setup{Size: 1, Depth: 0}.encode(), "depth 0"},
		{"depth big", setup{Size: 1, Depth: maxDepth + 1}.encode(), "depth"},
	} {
		if _, err := parseSetup(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzParseSetup: any private data a peer sends gives a setup within the
// server's bounds or an error, never a panic.
func FuzzParseSetup(f *testing.F) {
	f.Add(setup{Size: 4096, Depth: 8}.encode())
	f.Add(setup{Size: 1, Depth: maxDepth}.encode())
	f.Add([]byte("DTST"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSetup(b)
		if err != nil {
			return
		}
		if s.Size < 1 || s.Size > maxMsgSize || s.Depth < 1 || s.Depth > maxDepth {
			t.Fatalf("accepted %+v", s)
		}
		if again, err := parseSetup(s.encode()); err != nil || again != s {
			t.Fatalf("re-encoding %+v gives %+v, %v", s, again, err)
		}
	})
}
