package dat

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

func TestErrorIs(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("wrapped: %w", Wrap("ep_post_send", InvalidState, InvalidStateEPUnconnected, cause))
	switch {
	case !errors.Is(err, ErrInvalidState):
		t.Fatal("not ErrInvalidState")
	case errors.Is(err, ErrInvalidHandle):
		t.Fatal("is ErrInvalidHandle")
	case !errors.Is(err, &Error{Code: InvalidState, Sub: InvalidStateEPUnconnected}):
		t.Fatal("subtype sentinel")
	case errors.Is(err, &Error{Code: InvalidState, Sub: InvalidStateEPConnected}):
		t.Fatal("wrong subtype matched")
	case !errors.Is(err, cause):
		t.Fatal("cause lost")
	}
	var de *Error
	if !errors.As(err, &de) || de.Return() != Return(0x80000000|0x00070000|uint32(InvalidStateEPUnconnected)) {
		t.Fatalf("return %#x", de.Return())
	}
	if de.Return().Code() != InvalidState || de.Return().Subtype() != InvalidStateEPUnconnected {
		t.Fatal("Return accessors")
	}
	major, minor := Strerror(de.Return())
	if major != "DAT_INVALID_STATE" || minor != "DAT_INVALID_STATE_EP_UNCONNECTED" {
		t.Fatalf("strerror %q %q", major, minor)
	}
	if s := de.Error(); !strings.Contains(s, "ep_post_send") || !strings.Contains(s, "DAT_INVALID_STATE_EP_UNCONNECTED") {
		t.Fatalf("message %q", s)
	}
	if !ErrTimeoutExpired.Timeout() || ErrQueueEmpty.Timeout() {
		t.Fatal("Timeout")
	}
}

func TestSubtypeValues(t *testing.T) {
	// Spot checks against the enum order of dat_error.h.
	for _, c := range []struct {
		s    Subtype
		v    uint16
		name string
	}{
		{NoSubtype, 0, "DAT_NO_SUBTYPE"},
		{ResourceMemory, 2, "DAT_RESOURCE_MEMORY"},
		{InvalidHandleIA, 11, "DAT_INVALID_HANDLE_IA"},
		{InvalidArg1, 37, "DAT_INVALID_ARG1"},
		{InvalidStateEPUnconnected, 47, "DAT_INVALID_STATE_EP_UNCONNECTED"},
		{ThreadSafetyNotFound, uint16(numSubtypes) - 1, "DAT_THREAD_SAFETY_NOT_FOUND"},
	} {
		if uint16(c.s) != c.v || c.s.String() != c.name {
			t.Errorf("%s = %d (%s), want %d", c.name, c.s, c.s, c.v)
		}
	}
}

func TestEventStream(t *testing.T) {
	for n, want := range map[EventNumber]EVDFlags{
		DTOCompletionEvent: EVDDTO, RMRBindCompletionEvent: EVDRMRBind, ConnectionRequestEvent: EVDCR,
		ConnectionEventBroken: EVDConnection, AsyncErrorEVDOverflow: EVDAsync, SoftwareEvent: EVDSoftware,
	} {
		if n.Stream() != want {
			t.Errorf("%v stream %v", n, n.Stream())
		}
	}
}

func TestRMRTriplet(t *testing.T) {
	tr := RMRTriplet{VirtualAddress: 0x0102030405060708, SegmentLength: 0x11223344, RMRContext: 0xaabbccdd}
	var b [RMRTripletSize]byte
	tr.Encode(b[:])
	if b[0] != 1 || b[8] != 0x11 || b[12] != 0xaa {
		t.Fatalf("not big-endian: % x", b)
	}
	got, err := DecodeRMRTriplet(b[:])
	if err != nil || got != tr {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := DecodeRMRTriplet(b[:15]); err == nil {
		t.Fatal("short triplet accepted")
	}
}

func FuzzDecodeRMRTriplet(f *testing.F) {
	var b [RMRTripletSize]byte
	RMRTriplet{VirtualAddress: 4096, SegmentLength: 64, RMRContext: 0x1234}.Encode(b[:])
	f.Add(b[:])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		tr, err := DecodeRMRTriplet(p)
		if err != nil {
			return
		}
		var out [RMRTripletSize]byte
		tr.Encode(out[:])
		if string(out[:]) != string(p[:RMRTripletSize]) {
			t.Fatal("round trip")
		}
	})
}

const sampleConf = `# test registry
siw-lo   siw  siw_lo  lo   127.0.0.1
siw-eth0 siw  siw_eth0 eth0
mem      mem  mem0    -    127.0.0.1   # in-memory
`

func TestParseConf(t *testing.T) {
	es, err := ParseConf(strings.NewReader(sampleConf))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Name: "siw-lo", Provider: "siw", Device: "siw_lo", Interface: "lo", Addr: netip.MustParseAddr("127.0.0.1")},
		{Name: "siw-eth0", Provider: "siw", Device: "siw_eth0", Interface: "eth0"},
		{Name: "mem", Provider: "mem", Device: "mem0", Addr: netip.MustParseAddr("127.0.0.1")},
	}
	if fmt.Sprint(es) != fmt.Sprint(want) {
		t.Fatalf("%v\nwant %v", es, want)
	}
	var b strings.Builder
	FormatConf(&b, es)
	again, err := ParseConf(strings.NewReader(b.String()))
	if err != nil || fmt.Sprint(again) != fmt.Sprint(es) {
		t.Fatalf("round trip: %v %v", again, err)
	}
	for _, bad := range []string{"a b c", "a b c d e f", "a b c - 10.0.0", "a b c -", "a b c - ::1"} {
		if _, err := ParseConf(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseConf(f *testing.F) {
	f.Add(sampleConf)
	f.Add("x y z - 1.2.3.4\n#\n")
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseConf(strings.NewReader(s))
		if err != nil {
			return
		}
		var b strings.Builder
		FormatConf(&b, es)
		again, err := ParseConf(strings.NewReader(b.String()))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(es) {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}

func TestRegistryOpen(t *testing.T) {
	resolve := func(ifname string) (netip.Addr, error) {
		if ifname == "up0" {
			return netip.MustParseAddr("10.0.0.1"), nil
		}
		return netip.Addr{}, fmt.Errorf("%s has no IPv4 address", ifname)
	}
	r, err := NewRegistry([]verbs.Provider{mem.New()}, []Entry{
		{Name: "m", Provider: "mem", Device: mem.DeviceName, Interface: "up0"},
		{Name: "down", Provider: "mem", Device: mem.DeviceName, Interface: "down0"},
		{Name: "nodev", Provider: "mem", Device: "nope", Addr: netip.MustParseAddr("10.0.0.2")},
		{Name: "noprov", Provider: "siw", Device: "siw_lo", Addr: netip.MustParseAddr("10.0.0.2")},
	}, resolve)
	if err != nil {
		t.Fatal(err)
	}
	e, dev, err := r.Open("m")
	if err != nil || e.Addr != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("open: %v %v", e, err)
	}
	dev.Close()
	for name, code := range map[string]Code{"unknown": ProviderNotFound, "down": InvalidAddress, "nodev": ProviderNotFound, "noprov": ProviderNotFound} {
		_, _, err := r.Open(name)
		var de *Error
		if !errors.As(err, &de) || de.Code != code {
			t.Errorf("%s: %v, want %v", name, err, code)
		}
	}
	if _, err := NewRegistry(nil, []Entry{{Name: "a"}, {Name: "a"}}, nil); err == nil {
		t.Fatal("duplicate names accepted")
	}
}

// With adds entries over the same providers and leaves the original alone.
func TestRegistryWith(t *testing.T) {
	r, err := NewRegistry([]verbs.Provider{mem.New()}, []Entry{
		{Name: "a", Provider: "mem", Device: mem.DeviceName, Addr: netip.MustParseAddr("10.0.0.1")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.With(Entry{Name: "b", Provider: "mem", Device: mem.DeviceName, Addr: netip.MustParseAddr("10.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	e, dev, err := w.Open("b")
	if err != nil || e.Addr != netip.MustParseAddr("10.0.0.2") {
		t.Fatalf("open b: %v %v", e, err)
	}
	dev.Close()
	if _, err := w.Lookup("a"); err != nil {
		t.Fatalf("a lost: %v", err)
	}
	if _, err := r.Lookup("b"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("original registry changed: %v", err)
	}
	if _, err := w.With(Entry{Name: "a"}); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := r.With(Entry{Name: "c"}, Entry{Name: "c"}); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("name given twice: %v", err)
	}
}
