package main

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func TestParseMsgs(t *testing.T) {
	r := make([]byte, msgSize+2) // a newer kernel's longer record
	binary.NativeEndian.PutUint64(r[msgSeq:], 77)
	binary.NativeEndian.PutUint32(r[msgLen:], 4096)
	copy(r[msgLAddr:], []byte{10, 0, 0, 1})
	copy(r[msgFAddr:], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(r[msgLPort:], 4000)
	binary.BigEndian.PutUint16(r[msgFPort:], 4001)
	r[msgTos] = 3
	rows, err := parseMsgs(append(slices.Clone(r), r...), len(r))
	want := msgRow{Local: netip.MustParseAddrPort("10.0.0.1:4000"), Remote: netip.MustParseAddrPort("10.0.0.2:4001"),
		Tos: 3, Seq: 77, Bytes: 4096}
	if err != nil || len(rows) != 2 || rows[1] != want {
		t.Errorf("%+v %v", rows, err)
	}
	if _, err := parseMsgs(r, msgSize-1); !errors.Is(err, errRecordSize) {
		t.Errorf("short record: %v", err)
	}
}

func TestParseTCP(t *testing.T) {
	r := make([]byte, tcpSize+1)
	copy(r[tcpLAddr:], []byte{10, 0, 0, 1})
	binary.BigEndian.PutUint16(r[tcpLPort:], 16385)
	copy(r[tcpFAddr:], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(r[tcpFPort:], 40000)
	binary.NativeEndian.PutUint64(r[tcpHdrRem:], 5)
	binary.NativeEndian.PutUint64(r[tcpDataRem:], 6)
	binary.NativeEndian.PutUint32(r[tcpSentNxt:], 7)
	binary.NativeEndian.PutUint32(r[tcpExpUna:], 8)
	binary.NativeEndian.PutUint32(r[tcpSeenUna:], 9)
	rows, err := parseTCP(r, len(r))
	want := tcpRow{Local: netip.MustParseAddrPort("10.0.0.1:16385"), Remote: netip.MustParseAddrPort("10.0.0.2:40000"),
		HdrRemain: 5, DataRemain: 6, SentNxt: 7, ExpectUna: 8, SeenUna: 9}
	if err != nil || len(rows) != 1 || rows[0] != want {
		t.Errorf("%+v %v", rows, err)
	}
}

func TestParseIB(t *testing.T) {
	r := make([]byte, ibSize+6)
	copy(r[ibSrc:], []byte{10, 0, 0, 1})
	copy(r[ibDst:], []byte{10, 0, 0, 2})
	r[ibSrcGID], r[ibDstGID+15] = 0xfe, 1
	binary.NativeEndian.PutUint32(r[ibSendWR:], 256)
	r[ibTos], r[ibSL] = 1, 2
	rows, err := parseIB(r, len(r))
	if err != nil || len(rows) != 1 || rows[0].Local != netip.MustParseAddr("10.0.0.1") || rows[0].SendWR != 256 ||
		rows[0].LocalGID != netip.MustParseAddr("fe00::") || rows[0].RemoteGID != netip.MustParseAddr("::1") ||
		rows[0].Tos != 1 || rows[0].SL != 2 {
		t.Errorf("%+v %v", rows, err)
	}
}

func TestSplitLetters(t *testing.T) {
	for _, c := range []struct{ in, out []string }{
		{[]string{"-kn"}, []string{"-k", "-n"}},
		{[]string{"-k", "-IvT"}, []string{"-k", "-I", "-v", "-T"}},
		{[]string{"-json", "--socket", "x"}, []string{"-json", "--socket", "x"}},
		{[]string{"--", "-kn"}, []string{"--", "-kn"}},
	} {
		if got := splitLetters(c.in); !slices.Equal(got, c.out) {
			t.Errorf("%q: %q", c.in, got)
		}
	}
}

// FuzzKernelTables feeds arbitrary kernel tables to the parsers: they
// never panic, whatever record size the kernel claims.
func FuzzKernelTables(f *testing.F) {
	f.Add(make([]byte, 80), 26)
	f.Add(make([]byte, 40), 40)
	f.Fuzz(func(t *testing.T, b []byte, size int) {
		if size <= 0 {
			return
		}
		parseMsgs(b, size)
		parseTCP(b, size)
		parseIB(b, size)
	})
}
