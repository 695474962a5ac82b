package dat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// datReassemble runs frames through the receive side's parser and
// reassembly; it returns the messages completed and the first error.
func datReassemble(frames [][]byte) ([][]byte, error) {
	var r datReasm
	var msgs [][]byte
	var cur []byte
	for _, b := range frames {
		h, frag, err := parseDatFrag(b)
		if err != nil {
			return msgs, err
		}
		if isDatAck(h, frag) {
			continue
		}
		first, done, err := r.next(h, len(frag))
		if err != nil {
			return msgs, err
		}
		if first {
			cur = make([]byte, h.Len())
		}
		copy(cur[r.off-len(frag):], frag)
		if done {
			msgs = append(msgs, cur)
		}
	}
	return msgs, nil
}

func TestDATFragments(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, 8192, 65536, wire.MaxMsgSize} {
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = byte(i * 7)
		}
		frames := Frames(&wire.Fields{Sequence: 5, Ack: 3, Sport: 1000, Dport: 2000}, msg, 9)
		if want := max(1, (size+wire.FragSize-1)/wire.FragSize); len(frames) != want {
			t.Fatalf("%d bytes: %d fragments, want %d", size, len(frames), want)
		}
		if wire.Header(frames[0]).Credit() != 9 || !wire.Header(frames[0]).ChecksumOK() {
			t.Fatalf("first fragment's credit or checksum wrong")
		}
		got, err := datReassemble(frames)
		if err != nil || len(got) != 1 || !bytes.Equal(got[0], msg) {
			t.Fatalf("%d bytes: reassembled %d messages, err %v", size, len(got), err)
		}
	}

	two := Frames(&wire.Fields{Sequence: 1, Sport: 1, Dport: 2}, make([]byte, 5000), 0)
	other := Frames(&wire.Fields{Sequence: 2, Sport: 1, Dport: 2}, make([]byte, 5000), 0)
	bad := func(mut func([]byte)) [][]byte {
		b := bytes.Clone(two[1])
		mut(b)
		wire.Header(b).SetChecksum()
		return [][]byte{two[0], b}
	}
	for _, c := range []struct {
		name   string
		frames [][]byte
		want   error
	}{
		{"interleaved", [][]byte{two[0], other[0]}, errDatFrag},
		{"other sport", bad(func(b []byte) { wire.Header(b).SetSport(9) }), errDatFrag},
		{"other len", bad(func(b []byte) { wire.Header(b).SetLen(5001) }), errDatFrag},
		{"short last", [][]byte{two[0], two[1][:len(two[1])-1]}, errDatFrag},
		{"short middle", [][]byte{two[0][:100]}, errDatFrag},
		{"no header", [][]byte{two[0][:47]}, errDatShort},
		{"first longer", [][]byte{append(bytes.Clone(two[0]), 0), two[1]}, errDatFrag},
		{"too long", [][]byte{make([]byte, datSlot+1)}, errDatLong},
		{"checksum", [][]byte{func() []byte { b := bytes.Clone(two[0]); b[60] = 1; b[0] ^= 1; return b }()}, errDatChecksum},
		{"above 1 MiB", Frames(&wire.Fields{Sequence: 1}, nil, 0), nil},
	} {
		frames := c.frames
		if c.name == "above 1 MiB" {
			h := wire.Header(frames[0])
			h.SetLen(wire.MaxMsgSize + 1)
			h.SetChecksum()
			c.want = errDatTooBig
		}
		if _, err := datReassemble(frames); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}

	// An ack-only frame is skipped, even in the middle of a message.
	ack := make(wire.Header, wire.HeaderLen)
	ack.Encode(&wire.Fields{Ack: 7, Credit: 3})
	ack.SetChecksum()
	if got, err := datReassemble([][]byte{two[0], ack, two[1]}); err != nil || len(got) != 1 {
		t.Errorf("ack inside a message: %d messages, %v", len(got), err)
	}
}

func TestDATPrivateData(t *testing.T) {
	s, d := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.4.5.6")
	var b [datPrivateLen]byte
	encodeDatPrivate(b[:], s, d, 77, 0xabcdef01, 0x12345678, 256)
	putConnID(b[:], 0x9abcdef0)
	p, err := parseDatPrivate(b[:])
	if err != nil || p.Saddr() != s || p.Daddr() != d || p.AckSeq() != 77 || p.Credit() != 256 ||
		p.Major() != 3 || p.Minor() != 1 || p.MinorMask() != 3 || p.AckGen() != 0xabcdef01 || p.MyGen() != 0x12345678 ||
		p.ConnID() != 0x9abcdef0 {
		t.Fatalf("round trip: %v %v %v %d %d", err, p.Saddr(), p.Daddr(), p.AckSeq(), p.Credit())
	}
	// The kernel's layout: ack_seq at 16, credit at 24, 32 bytes; ack_gen
	// in the tail padding, my_gen after it, then frag_max and conn_id.
	if binary.BigEndian.Uint64(b[16:]) != 77 || binary.BigEndian.Uint32(b[24:]) != 256 || b[8] != 3 || b[9] != 1 ||
		binary.BigEndian.Uint32(b[28:]) != 0xabcdef01 || binary.BigEndian.Uint32(b[32:]) != 0x12345678 ||
		binary.BigEndian.Uint32(b[36:]) != datFragMax || binary.BigEndian.Uint32(b[40:]) != 0x9abcdef0 || len(b) != 44 {
		t.Fatalf("layout % x", b)
	}
	for _, c := range []struct {
		name string
		mut  func([]byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:27] }, errPrivShort},
		{"major 4", func(b []byte) []byte { b[8] = 4; return b }, errPrivVersion},
		{"no minor", func(b []byte) []byte { b[10], b[11] = 0, 4; return b }, errPrivVersion},
		{"no credits", func(b []byte) []byte { clear(b[24:28]); return b }, errPrivCredit},
	} {
		x := b
		if _, err := parseDatPrivate(c.mut(x[:])); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzDATFragments feeds arbitrary Sends (2-byte length prefixes split the
// input) to the dat receive side's parser and reassembly: nothing may
// panic, and a message that completes has exactly its h_len bytes.
func FuzzDATFragments(f *testing.F) {
	for _, size := range []int{0, 5, 4096, 5000, wire.CongMapBytes} {
		var seed []byte
		for _, fr := range Frames(&wire.Fields{Sequence: 3, Ack: 2, Sport: 7, Dport: 8, Credit: 1}, make([]byte, size), 4) {
			seed = binary.BigEndian.AppendUint16(seed, uint16(len(fr)))
			seed = append(seed, fr...)
		}
		f.Add(seed)
	}
	var big []byte // fragments of a connection between godapl nodes
	for _, fr := range fragFrames(4, make([]byte, 40000), datFragMax) {
		big = binary.BigEndian.AppendUint16(big, uint16(len(fr)))
		big = append(big, fr...)
	}
	f.Add(big)
	f.Fuzz(func(t *testing.T, in []byte) {
		var frames [][]byte
		for len(in) >= 2 {
			n := min(int(binary.BigEndian.Uint16(in)), len(in)-2)
			frames = append(frames, in[2:2+n])
			in = in[2+n:]
		}
		msgs, _ := datReassemble(frames)
		for _, m := range msgs {
			if len(m) > wire.MaxMsgSize {
				t.Fatalf("%d-byte message", len(m))
			}
		}
	})
}
